package a2a

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/eventqueue"
)

// LocalUser owns the tasks of callers without a principal (a server without
// bearer tokens): every such caller sees the same tasks.
const LocalUser = "local"

// callPolicy is the a2asrv.CallInterceptor every call of every binding goes
// through: it refuses protocol versions the server does not speak and makes
// the caller's principal the owner of the tasks it creates, so that GetTask,
// ListTasks, CancelTask and SubscribeToTask see only the caller's own tasks
// (docs/design.md#secrets).
type callPolicy struct {
	a2asrv.PassthroughCallInterceptor
	principal func(context.Context) string
}

func (p callPolicy) Before(ctx context.Context, cc *a2asrv.CallContext, _ *a2asrv.Request) (context.Context, any, error) {
	if v := requestedVersion(cc.ServiceParams()); wireOf(v) == wireUnsupported {
		return ctx, nil, errVersion(v)
	}
	user := &a2asrv.User{Name: LocalUser}
	if p.principal != nil {
		if name := p.principal(ctx); name != "" {
			user = a2asrv.NewAuthenticatedUser(name, nil)
		}
	}
	cc.User = user
	return ctx, nil, nil
}

// wire is the protocol version a request speaks.
type wire int

const (
	wireUnspecified wire = iota // no A2A-Version: 0.3 by the spec, see route
	wireV1
	wireV03
	wireUnsupported
)

// wireOf classifies an A2A-Version value: "1.0" (or "1", "1.0.x") is 1.0,
// "0.3" (or "0.3.x") is 0.3, "" is unspecified, anything else unsupported.
func wireOf(v string) wire {
	switch {
	case v == "":
		return wireUnspecified
	case v == "1" || v == "1.0" || strings.HasPrefix(v, "1.0."):
		return wireV1
	case v == "0.3" || strings.HasPrefix(v, "0.3."):
		return wireV03
	}
	return wireUnsupported
}

func requestedVersion(sp *a2asrv.ServiceParams) string {
	vals, _ := sp.Get(a2a.SvcParamVersion)
	if len(vals) == 0 {
		return ""
	}
	return strings.TrimSpace(vals[0])
}

func errVersion(v string) error {
	if len(v) > 32 {
		v = v[:32] + "..."
	}
	return a2a.NewError(a2a.ErrVersionNotSupported,
		fmt.Sprintf("A2A-Version %q is not supported: this agent speaks A2A 1.0 and 0.3", v))
}

// errFinished is the answer to a message or a subscription for a task that
// reached a terminal state.
func errFinished(t *a2a.Task, what string) error {
	return a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf(
		"task %s is %s: a finished task cannot %s; start a new task (with the same contextId to continue the conversation)",
		t.ID, t.Status.State, what))
}

// requestHandler is the bridge's a2asrv.RequestHandler: a2a-go's handler
// (with callPolicy) plus what the bridge adds to it (docs/design.md#event-mapping):
//
//   - a message to a finished task is UnsupportedOperation;
//   - SendMessage honours configuration.historyLength, like GetTask;
//   - SubscribeToTask works on every non-terminal task, idle ones included,
//     and stays open across turns until the task is terminal; on a
//     terminal task it is UnsupportedOperation;
//   - CancelTask of a task whose turn just asked for input is retried.
type requestHandler struct {
	a2asrv.RequestHandler
	exec *Executor
}

func (h *requestHandler) getTask(ctx context.Context, id a2a.TaskID, tenant string) (*a2a.Task, error) {
	return h.RequestHandler.GetTask(ctx, &a2a.GetTaskRequest{ID: id, Tenant: tenant})
}

// refuseFinished fails a message addressed to a finished task. Unknown
// tasks are left to a2a-go, which reports them.
func (h *requestHandler) refuseFinished(ctx context.Context, req *a2a.SendMessageRequest) error {
	if req == nil || req.Message == nil || req.Message.TaskID == "" {
		return nil
	}
	t, err := h.getTask(ctx, req.Message.TaskID, req.Tenant)
	if err == nil && t.Status.State.Terminal() {
		return errFinished(t, "take more messages")
	}
	return nil
}

// ListTasks implements a2asrv.RequestHandler: an empty page lists no tasks
// as [], not null.
func (h *requestHandler) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	res, err := h.RequestHandler.ListTasks(ctx, req)
	if res != nil && res.Tasks == nil {
		res.Tasks = []*a2a.Task{}
	}
	return res, err
}

// admit gives a message its slot among the executor's MaxActiveTasks:
// the one the HTTP layer reserved (it frees it), or a new one that done
// frees unless the turn claimed it. A refusal is a *busyError (on gRPC:
// RESOURCE_EXHAUSTED).
func (h *requestHandler) admit(ctx context.Context) (_ context.Context, done func(), err error) {
	if slotFrom(ctx) != nil {
		return ctx, func() {}, nil
	}
	s, err := h.exec.reserve(ctx)
	if err != nil || s == nil {
		return ctx, func() {}, err
	}
	return withSlot(ctx, s), s.abandon, nil
}

// SendMessage implements a2asrv.RequestHandler.
func (h *requestHandler) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	if err := h.refuseFinished(ctx, req); err != nil {
		return nil, err
	}
	ctx, done, err := h.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := h.RequestHandler.SendMessage(ctx, req)
	if t, ok := res.(*a2a.Task); ok && err == nil {
		return withHistory(t, historyLength(req)), nil
	}
	return res, err
}

// SendStreamingMessage implements a2asrv.RequestHandler.
func (h *requestHandler) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if err := h.refuseFinished(ctx, req); err != nil {
			yield(nil, err)
			return
		}
		ctx, done, err := h.admit(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		defer done()
		n := historyLength(req)
		for ev, err := range h.RequestHandler.SendStreamingMessage(ctx, req) {
			if t, ok := ev.(*a2a.Task); ok {
				ev = withHistory(t, n)
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

func historyLength(req *a2a.SendMessageRequest) *int {
	if req == nil || req.Config == nil {
		return nil
	}
	return req.Config.HistoryLength
}

// withHistory returns t with at most n history messages (the most recent),
// as GetTask does; t itself is not modified.
func withHistory(t *a2a.Task, n *int) *a2a.Task {
	if t == nil || n == nil || *n < 0 || *n >= len(t.History) {
		return t
	}
	c, ok := cloneEvent(t).(*a2a.Task)
	if !ok || c == t {
		return t
	}
	c.History = c.History[len(c.History)-*n:]
	return c
}

// SubscribeToTask implements a2asrv.RequestHandler: the first event is the
// Task, then the task's events until it reaches a terminal state, across
// turns (an input-required task is followed through its next turn). A
// terminal task is UnsupportedOperation, an unknown one TaskNotFound.
// Events of a turn that ran while the subscriber was not attached are not
// replayed; the states it missed arrive as status updates.
func (h *requestHandler) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if req == nil || req.ID == "" {
			yield(nil, fmt.Errorf("task id is required: %w", a2a.ErrInvalidParams))
			return
		}
		t, err := h.getTask(ctx, req.ID, req.Tenant)
		if err != nil {
			yield(nil, err)
			return
		}
		if t.Status.State.Terminal() {
			yield(nil, errFinished(t, "be subscribed to"))
			return
		}
		s := &subscription{h: h, req: req, yield: yield}
		s.run(ctx)
	}
}

// subscription follows one task for one SubscribeToTask call.
type subscription struct {
	h       *requestHandler
	req     *a2a.SubscribeToTaskRequest
	yield   func(a2a.Event, error) bool
	started bool          // the first event (a Task) went out
	state   a2a.TaskState // the last state the subscriber saw
}

// send forwards ev and reports whether the subscription goes on: false
// once the task is terminal or the subscriber is gone. After the first
// Task, a snapshot is news only for its state: it goes out as a status
// update, or not at all.
func (s *subscription) send(ev a2a.Event) bool {
	if t, ok := ev.(*a2a.Task); ok && s.started {
		if t.Status.State == s.state {
			return true
		}
		ev = &a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: t.Status, Metadata: t.Metadata}
	}
	switch v := ev.(type) {
	case *a2a.Task:
		s.state = v.Status.State
	case *a2a.TaskStatusUpdateEvent:
		s.state = v.Status.State
	}
	s.started = true
	return s.yield(ev, nil) && !s.state.Terminal()
}

func (s *subscription) run(ctx context.Context) {
	pause := time.Millisecond
	for {
		// A running turn: a2a-go attaches to its execution (snapshot first).
		attached := false
		for ev, err := range s.h.RequestHandler.SubscribeToTask(ctx, s.req) {
			if err != nil {
				if !attached && errors.Is(err, a2a.ErrTaskNotFound) {
					break // the task exists (checked): it has no running execution
				}
				s.yield(nil, err)
				return
			}
			attached = true
			if !s.send(ev) {
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		// Between turns: wait for the task's next turn.
		w, busy, stop := s.h.exec.watch(s.req.ID)
		done, progressed := s.idle(ctx, w, busy)
		stop()
		if done {
			return
		}
		if attached || progressed {
			pause = time.Millisecond
			continue
		}
		// A turn is starting or ending (a2a-go registers an execution
		// before the executor runs and unregisters it after processing
		// its last event): wait a little before looking again.
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// idle reads the task and, when no turn is running, forwards the events of
// its next turns from w. done: the subscription is over; progressed: an
// event went out.
func (s *subscription) idle(ctx context.Context, w *watcher, busy bool) (done, progressed bool) {
	t, err := s.h.getTask(ctx, s.req.ID, s.req.Tenant)
	if err != nil {
		s.yield(nil, err)
		return true, false
	}
	before := s.state
	if !s.send(t) {
		return true, true
	}
	progressed = s.state != before
	if busy || !(t.Status.State == a2a.TaskStateInputRequired || t.Status.State == a2a.TaskStateAuthRequired) {
		// A turn is running (or its last events are being processed):
		// attach to it through a2a-go.
		return false, progressed
	}
	// Idle: every event of the next turn reaches w, registered before the
	// snapshot was read (at most the new turn's first status events can be
	// in both; they repeat a state, which is harmless).
	for {
		ev, err := w.next(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.yield(nil, fmt.Errorf("subscription of task %s ended: %w", s.req.ID, err))
			}
			return true, progressed
		}
		if !s.send(ev) {
			return true, true
		}
		progressed = true
	}
}

// CancelTask implements a2asrv.RequestHandler. It works around a race in
// a2a-go's local task manager: a CancelTask that arrives while the
// execution of a turn that just ended in input-required is still
// unregistering is attached to that execution and resolves to its result
// (or, when the execution's queue closed meanwhile, fails with
// eventqueue.ErrQueueClosed), so it fails although the task is idle. The
// retry happens once a2a-go has unregistered the execution (a few
// milliseconds), when the cancel goes to the idle task and succeeds.
func (h *requestHandler) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	for attempt := 0; ; attempt++ {
		task, err := h.RequestHandler.CancelTask(ctx, req)
		if err == nil || attempt >= cancelRetries ||
			!(errors.Is(err, a2a.ErrTaskNotCancelable) || errors.Is(err, eventqueue.ErrQueueClosed)) {
			return task, err
		}
		cur, gerr := h.getTask(ctx, req.ID, req.Tenant)
		if gerr != nil || (cur.Status.State != a2a.TaskStateInputRequired && cur.Status.State != a2a.TaskStateAuthRequired) {
			return task, err
		}
		t := time.NewTimer(cancelRetryPause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return task, err
		}
	}
}

const (
	cancelRetries    = 100
	cancelRetryPause = 10 * time.Millisecond
)
