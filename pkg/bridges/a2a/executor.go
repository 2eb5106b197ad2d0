package a2a

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"strconv"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	agentadaptor "github.com/seed0634/agentadaptor"
)

// ExecutorConfig configures an [Executor].
type ExecutorConfig struct {
	// SDK runs the turns. Required.
	SDK *agentadaptor.SDK
	// Adapter names the SDK adapter that runs every turn ("" means the SDK's
	// default adapter).
	Adapter string
	// RunOptions are added to every run (model, work dir, MCP servers,
	// timeout, ...). The bridge itself adds WithAdapterName, WithStreaming
	// and WithSessionKey(contextID); a session key given here is overridden.
	RunOptions []agentadaptor.RunOption
	// Exposure says which local detail remote callers see (default: none).
	Exposure Exposure
	// Logger receives the bridge's own log lines (default slog.Default()).
	Logger *slog.Logger
	// Observer, if set, takes part in every task turn for the server's
	// telemetry (docs/design.md#observability); nil observes nothing.
	Observer TurnObserver
	// MaxActiveTasks bounds the task turns in progress at once (each runs
	// the agent CLI), counted from the admission of the message that starts
	// a turn to the end of the turn's run: a message beyond it, for a new
	// task or a follow-up, is refused with an error that is
	// [ErrTooManyTasks] (HTTP+JSON 429 with Retry-After, JSON-RPC -32000,
	// gRPC RESOURCE_EXHAUSTED; docs/design.md#event-mapping) and starts
	// nothing. Running turns, cancels and reads are never refused. 0 (the
	// default) sets no bound; `agentadaptor a2a serve` sets 8.
	MaxActiveTasks int
	// OnRefused, if set, is called once for every message refused by
	// MaxActiveTasks, with the request's context (for the server's
	// telemetry). It must not block.
	OnRefused func(ctx context.Context)
}

// TurnObserver takes part in each task turn, for the server's telemetry
// (docs/design.md#observability), so that the bridge imports no telemetry
// library. It is called when a turn begins, with the context the turn runs
// under (the request's values, e.g. a trace span the HTTP layer started);
// the turn continues under the context it returns, adds opts to its run
// (after every other option), and calls end once, when the turn is over,
// with the state the turn left the task in ("" if it emitted none). It must
// not block.
type TurnObserver func(ctx context.Context, t TurnInfo) (_ context.Context, opts []agentadaptor.RunOption, end func(state a2a.TaskState))

// TurnInfo identifies a task turn to a [TurnObserver].
type TurnInfo struct {
	TaskID    string
	ContextID string
	// FollowUp is set for a turn that continues a stored task (the answer
	// to an input-required one).
	FollowUp bool
}

// Executor is an a2asrv.AgentExecutor that performs every A2A task turn as
// one run of a local adapter. See the package documentation for the task
// lifecycle. It is safe for concurrent use.
type Executor struct {
	cfg ExecutorConfig
	log *slog.Logger

	base context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	active   map[a2a.TaskID]*agentadaptor.RunHandle
	contexts map[string]chan struct{} // by sessionKey
	// used counts the slots of MaxActiveTasks that are reserved or claimed.
	used int
	// turns counts the Execute and Cancel calls in progress per task;
	// watchers are the subscribers waiting on an idle task (see watch).
	turns    map[a2a.TaskID]int
	watchers map[a2a.TaskID]map[*watcher]struct{}
}

var _ a2asrv.AgentExecutor = (*Executor)(nil)

// ErrClosed is reported for tasks that arrive after Close.
var ErrClosed = errors.New("a2a bridge: closed")

// NewExecutor returns an Executor. It fails when cfg.SDK is nil or
// cfg.Adapter is not registered with it.
func NewExecutor(cfg ExecutorConfig) (*Executor, error) {
	if cfg.SDK == nil {
		return nil, &agentadaptor.ConfigError{Field: "a2a bridge SDK", Reason: "required"}
	}
	if cfg.Adapter != "" {
		found := false
		for _, n := range cfg.SDK.AdapterNames() {
			found = found || n == cfg.Adapter
		}
		if !found {
			return nil, &agentadaptor.ConfigError{Field: "a2a bridge Adapter", Reason: "adapter " + cfg.Adapter + " is not registered with the SDK"}
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	base, stop := context.WithCancel(context.Background())
	return &Executor{
		cfg: cfg, log: log, base: base, stop: stop,
		active: map[a2a.TaskID]*agentadaptor.RunHandle{}, contexts: map[string]chan struct{}{},
		turns: map[a2a.TaskID]int{}, watchers: map[a2a.TaskID]map[*watcher]struct{}{},
	}, nil
}

// Execute implements a2asrv.AgentExecutor: it runs one turn of the task.
func (e *Executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			yield(nil, ErrClosed)
			return
		}
		e.wg.Add(1)
		e.turns[ec.TaskID]++
		e.mu.Unlock()
		defer e.wg.Done()
		defer e.endTurn(ec.TaskID)
		var extra []agentadaptor.RunOption
		if e.cfg.Observer != nil {
			var end func(a2a.TaskState)
			var state a2a.TaskState
			ctx, extra, end = e.cfg.Observer(ctx, TurnInfo{TaskID: string(ec.TaskID), ContextID: ec.ContextID, FollowUp: ec.StoredTask != nil})
			defer func() { end(state) }()
			inner := yield
			yield = func(ev a2a.Event, err error) bool {
				switch ev := ev.(type) {
				case *a2a.Task:
					state = ev.Status.State
				case *a2a.TaskStatusUpdateEvent:
					state = ev.Status.State
				}
				return inner(ev, err)
			}
		}
		e.execute(ctx, ec, e.tee(ec.TaskID, yield), extra)
	}
}

func (e *Executor) execute(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool, extra []agentadaptor.RunOption) {
	info := ec.TaskInfo()
	m := newMapper(info, e.cfg.Exposure)
	// The turn's slot among MaxActiveTasks, reserved when its message was
	// admitted; freed once the run is over, before the turn's last events.
	release, busy := e.claimSlot(ctx)
	defer release()
	emit := func(evs ...a2a.Event) bool {
		for _, ev := range evs {
			if !yield(ev, nil) {
				return false
			}
		}
		return true
	}
	// The first event of every turn is the Task (docs/design.md#event-mapping):
	// a new task is submitted; a follow-up turn of an input-required task
	// starts from the stored task, submitted again with the answer in its
	// history (an input-required snapshot first would end the stream of
	// clients that stop at the first interrupted state).
	first := a2a.NewSubmittedTask(ec, ec.Message)
	if ec.StoredTask != nil {
		if t, ok := cloneEvent(ec.StoredTask).(*a2a.Task); ok {
			t.Status = a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: first.Status.Timestamp}
			first = t
		}
	}
	if !emit(first) {
		return
	}
	if busy != nil {
		emit(m.finish(agentadaptor.StreamPayload{Kind: agentadaptor.KindRunFailed, Failure: &agentadaptor.Failure{
			Code: agentadaptor.FailureStart, Message: busy.Error(), Err: busy}}, nil)...)
		return
	}
	prompt := promptOf(ec.Message)
	if prompt == "" {
		emit(m.finish(agentadaptor.StreamPayload{Kind: agentadaptor.KindRunFailed, Failure: &agentadaptor.Failure{
			Code: agentadaptor.FailureInvalidConfig, Message: "the message has no text, data or URL part to use as the prompt"}}, nil)...)
		return
	}

	// One turn at a time per context: turns of a context share a CLI
	// session. A context belongs to its principal (docs/design.md#event-mapping):
	// the same contextId from another principal is another context.
	session := sessionKey(ec)
	unlock, ok := e.lockContext(ctx, session)
	if !ok {
		return
	}
	defer unlock()
	if !emit(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil)) {
		return
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(e.base, cancel)()
	opts := append([]agentadaptor.RunOption{}, e.cfg.RunOptions...)
	if e.cfg.Adapter != "" {
		opts = append(opts, agentadaptor.WithAdapterName(e.cfg.Adapter))
	}
	opts = append(opts, agentadaptor.WithStreaming(), agentadaptor.WithSessionKey(session))
	opts = append(opts, extra...)
	h, err := e.cfg.SDK.Start(runCtx, prompt, opts...)
	if err != nil {
		e.log.Warn("a2a bridge: run did not start", "task_id", info.TaskID, "error", err)
		emit(m.finish(agentadaptor.StreamPayload{Kind: agentadaptor.KindRunFailed, Failure: failureOf(err)}, nil)...)
		return
	}
	e.mu.Lock()
	e.active[info.TaskID] = h
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.active, info.TaskID)
		e.mu.Unlock()
		// Whatever ended this turn, the child is gone and the stream drained
		// before Execute returns.
		_ = h.Cancel(context.Background())
		for range h.StreamEvents() { //nolint:revive // drain
		}
	}()

	var terminal agentadaptor.StreamPayload
	for p := range h.StreamEvents() {
		if p.Kind.Terminal() {
			terminal = p
			continue
		}
		if !emit(m.payload(p)...) {
			return
		}
	}
	res, _ := h.Wait(context.Background())
	if terminal.Kind == "" && res != nil {
		terminal = agentadaptor.StreamPayload{Kind: kindOf(res.Status), Failure: res.Failure, SessionID: res.SessionID}
	}
	// The child is gone (Wait returned): its slot is free before the
	// client sees the turn end, so a new task sent right after is admitted.
	release()
	emit(m.finish(terminal, res)...)
}

// Cancel implements a2asrv.AgentExecutor. A task with a running turn has its
// run cancelled (the child process is stopped); the turn itself then
// publishes the result artifact and the canceled status. A task without a
// running turn (input-required) is canceled directly.
func (e *Executor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		e.mu.Lock()
		h := e.active[ec.TaskID]
		e.turns[ec.TaskID]++
		e.mu.Unlock()
		defer e.endTurn(ec.TaskID)
		yield = e.tee(ec.TaskID, yield)
		if h != nil {
			_ = h.Cancel(ctx)
			return
		}
		msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("the task was cancelled"))
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, msg), nil)
	}
}

// Close cancels every running turn and waits until their Execute calls have
// returned (their children stopped) or ctx ends. Tasks arriving later fail;
// subscribers waiting on idle tasks are released.
func (e *Executor) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	for id, ws := range e.watchers {
		for w := range ws {
			w.end(ErrClosed)
		}
		delete(e.watchers, id)
	}
	e.mu.Unlock()
	e.stop()
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sessionKey names the conversation a turn belongs to: its principal and
// its contextId. Turns with the same key share a CLI session and run one
// at a time; another principal's message with the same contextId is
// another conversation, so it can neither resume nor hold up the first
// principal's session (and learns nothing of it).
func sessionKey(ec *a2asrv.ExecutorContext) string {
	user := LocalUser
	if ec.User != nil && ec.User.Name != "" {
		user = ec.User.Name
	}
	return strconv.Itoa(len(user)) + ":" + user + "/" + ec.ContextID
}

// lockContext serializes turns of one conversation (a [sessionKey]). It
// returns false when ctx ended first.
func (e *Executor) lockContext(ctx context.Context, contextID string) (func(), bool) {
	for {
		e.mu.Lock()
		ch, busy := e.contexts[contextID]
		if !busy {
			ch = make(chan struct{})
			e.contexts[contextID] = ch
			e.mu.Unlock()
			return func() {
				e.mu.Lock()
				delete(e.contexts, contextID)
				e.mu.Unlock()
				close(ch)
			}, true
		}
		e.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, false
		case <-e.base.Done():
			return nil, false
		}
	}
}

func kindOf(s agentadaptor.RunStatus) agentadaptor.StreamKind {
	switch s {
	case agentadaptor.StatusCompleted:
		return agentadaptor.KindRunFinished
	case agentadaptor.StatusCancelled:
		return agentadaptor.KindRunCancelled
	}
	return agentadaptor.KindRunFailed
}

func failureOf(err error) *agentadaptor.Failure {
	var f *agentadaptor.Failure
	if errors.As(err, &f) {
		return f
	}
	var ce *agentadaptor.ConfigError
	if errors.As(err, &ce) {
		return &agentadaptor.Failure{Code: agentadaptor.FailureInvalidConfig, Message: err.Error(), Err: err}
	}
	return &agentadaptor.Failure{Code: agentadaptor.FailureStart, Message: err.Error(), Err: err}
}
