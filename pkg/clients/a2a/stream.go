package a2a

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/seed0634/agentadaptor/pkg/credentials"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

// StreamOptions tune a [Stream]. The zero value gives the safe defaults.
type StreamOptions struct {
	// KeepAfterTerminal passes through events that arrive after the first
	// terminal or interrupted state (a2a-go forwards them). By default the
	// stream ends right after that event, so a consumer sees exactly one
	// terminal.
	KeepAfterTerminal bool
	// KeepDuplicates passes through exact repeats of an earlier event. By
	// default repeats of idempotent events (task snapshots, status updates,
	// messages, non-append artifact updates) are dropped; append chunks are
	// never dropped.
	KeepDuplicates bool
	// FollowUpOf is, for a follow-up message to an interrupted task, the
	// state the task was in when the message was sent (input-required or
	// auth-required). A stream begins with the Task: a compliant server may
	// send that snapshot while the task is still in FollowUpOf, before it
	// processes the message. Such a leading snapshot neither ends the
	// stream nor counts as the stream's state: only a state reached after
	// the send does (docs/design.md#event-mapping). Empty for a new task.
	FollowUpOf TaskState
}

type streamItem struct {
	ev  Event
	err error
}

// Stream reads the events of one streaming call (SendStreaming or
// Subscribe).
//
//	s, err := c.SendStreaming(ctx, req)
//	if err != nil { ... }           // the call failed before any event
//	defer s.Close()
//	for s.Next() {
//		switch ev := s.Event().(type) { ... }
//	}
//	if err := s.Err(); err != nil { ... } // e.g. clienterr.KindInterrupted: use RecoverTask
//
// Next returns false after the first terminal (completed, failed, canceled,
// rejected) or interrupted (input-required, auth-required) state, after a
// standalone message reply, or on error. A stream that ends before any of
// these reports an [*clienterr.Error] of kind clienterr.KindInterrupted. Cancelling ctx or
// calling Close ends the stream; neither cancels the remote task.
//
// Next, Event and Err are for one consumer goroutine; Close may be called
// from any goroutine. The HTTP response is read on the consumer's goroutine
// (an iter.Pull coroutine, no goroutine of its own and no hand-off per
// event); Close cancels the read and waits for it to return.
type Stream struct {
	op        string
	callerCtx context.Context
	ctx       context.Context
	cancel    context.CancelFunc
	pullMu    sync.Mutex // held while pulling and stopping the events
	pull      func() (Event, error, bool)
	stopPull  func()
	pulled    bool // the events are exhausted or stopped
	rec       *callRecord
	secret    string
	opts      StreamOptions
	closed    atomic.Bool
	closeMu   sync.Once

	primed    bool
	cur       Event
	err       error
	finished  bool
	endNext   bool
	gotEvent  bool
	taskID    TaskID
	contextID string
	state     TaskState
	final     bool
	dropped   int
	seen      map[[32]byte]struct{}
}

const maxDedupeEntries = 4096

func newStream(ctx context.Context, op string, secret string, opts StreamOptions, start func(context.Context) iter.Seq2[Event, error]) (*Stream, error) {
	sctx, cancel := context.WithCancel(ctx)
	sctx, rec := withCallRecord(sctx)
	s := &Stream{
		op: op, callerCtx: ctx, ctx: sctx, cancel: cancel,
		rec: rec, secret: secret, opts: opts, seen: map[[32]byte]struct{}{},
	}
	s.pull, s.stopPull = iter.Pull2(start(sctx))
	// Wait for the first event so connection, auth and not-found errors
	// are returned by the call itself.
	if !s.advance() {
		err := s.err
		s.Close()
		if err == nil {
			err = NewError(clienterr.KindInterrupted, op, errors.New("stream closed before the first event"))
		}
		return nil, err
	}
	s.primed = true
	return s, nil
}

// next pulls the next event from the HTTP stream (got is false once it
// ended or was stopped). An error is the stream's last item.
func (s *Stream) next() (it streamItem, got bool) {
	s.pullMu.Lock()
	defer s.pullMu.Unlock()
	if s.pulled {
		return it, false
	}
	ev, err, ok := s.pull()
	if !ok || err != nil {
		s.pulled = true
		s.stopPull()
	}
	return streamItem{ev, err}, ok
}

// Next advances to the next event. It blocks until an event arrives, the
// stream ends, or the stream's context is done.
func (s *Stream) Next() bool {
	if s.primed {
		s.primed = false
		return true
	}
	return s.advance()
}

func (s *Stream) advance() bool {
	if s.finished {
		return false
	}
	if s.endNext {
		s.finish(nil)
		return false
	}
	for {
		var it streamItem
		got := false
		if s.ctx.Err() == nil {
			it, got = s.next()
		}
		if s.closed.Load() {
			s.finish(nil)
			return false
		}
		if !got {
			if err := s.callerCtx.Err(); err != nil {
				s.finish(classify(s.callerCtx, s.op, err, s.rec.Status(), s.gotEvent, s.secret))
				return false
			}
			// Clean end of the HTTP stream.
			if s.final || IsTerminal(s.state) || IsInterrupted(s.state) {
				s.finish(nil)
			} else {
				e := NewError(clienterr.KindInterrupted, s.op,
					fmt.Errorf("stream closed before a terminal state (last state %s)", stateLabel(s.state)))
				e.Status = s.rec.Status()
				s.finish(e)
			}
			return false
		}
		if it.err != nil {
			e := classify(s.callerCtx, s.op, it.err, s.rec.Status(), s.gotEvent, s.secret)
			if s.gotEvent && e.Kind == clienterr.KindUnavailable && e.Status < 400 {
				e.Kind = clienterr.KindInterrupted
			}
			s.finish(e)
			return false
		}
		ev := it.ev
		if err := ValidateEvent(ev); err != nil {
			s.finish(withOp(err, s.op))
			return false
		}
		if id := ev.TaskInfo().TaskID; id != "" {
			if s.taskID != "" && id != s.taskID {
				s.finish(NewError(clienterr.KindProtocol, s.op, fmt.Errorf("event for task %s on the stream of task %s", id, s.taskID)))
				return false
			}
			s.taskID = id
		}
		if !s.opts.KeepDuplicates && s.isDuplicate(ev) {
			s.dropped++
			continue
		}
		if cid := ev.TaskInfo().ContextID; cid != "" {
			s.contextID = cid
		}
		leading := !s.gotEvent
		s.gotEvent = true
		if st, ok := StateOf(ev); ok && leading && s.staleSnapshot(ev, st) {
			// The task as it stood before the follow-up: not a state the
			// follow-up reached.
			s.cur = ev
			return true
		}
		if st, ok := StateOf(ev); ok {
			s.state = st
			if (IsTerminal(st) || IsInterrupted(st)) && !s.opts.KeepAfterTerminal {
				s.endNext = true
			}
		}
		if m, ok := ev.(*sdk.Message); ok && m.TaskID == "" && s.taskID == "" {
			// A direct message reply: no task was created; nothing follows.
			s.final = true
			if !s.opts.KeepAfterTerminal {
				s.endNext = true
			}
		}
		s.cur = ev
		return true
	}
}

// staleSnapshot reports whether ev, the first event of a follow-up stream,
// is the task snapshot still in the state the follow-up answers.
func (s *Stream) staleSnapshot(ev Event, st TaskState) bool {
	_, isTask := ev.(*sdk.Task)
	return isTask && s.opts.FollowUpOf != "" && IsInterrupted(st) && st == NormalizeState(s.opts.FollowUpOf)
}

func stateLabel(s TaskState) string {
	if s == "" {
		return "none"
	}
	return string(s)
}

func (s *Stream) isDuplicate(ev Event) bool {
	if a, ok := ev.(*sdk.TaskArtifactUpdateEvent); ok && a.Append {
		return false
	}
	b, err := json.Marshal(sdk.StreamResponse{Event: ev})
	if err != nil {
		return false
	}
	key := sha256.Sum256(b)
	if _, dup := s.seen[key]; dup {
		return true
	}
	if len(s.seen) < maxDedupeEntries {
		s.seen[key] = struct{}{}
	}
	return false
}

func (s *Stream) finish(err error) {
	if s.finished {
		return
	}
	s.finished = true
	s.err = err
	s.cur = nil
	s.release()
}

// release cancels the read, waits for it and stops the events, which
// closes the HTTP response.
func (s *Stream) release() {
	s.closeMu.Do(func() {
		s.cancel()
		s.pullMu.Lock()
		defer s.pullMu.Unlock()
		if !s.pulled {
			s.pulled = true
			s.stopPull()
		}
	})
}

// Event returns the event Next advanced to: *Task, *Message, *StatusUpdate
// or *ArtifactUpdate. It is nil after the stream ended.
func (s *Stream) Event() Event { return s.cur }

// Err returns nil if the stream ended normally (terminal or interrupted
// state, message reply, or Close) and the [*clienterr.Error] that ended it otherwise.
func (s *Stream) Err() error { return s.err }

// Close ends the stream and releases its connection. It is idempotent, safe
// to call from any goroutine, and never cancels the remote task.
func (s *Stream) Close() error {
	s.closed.Store(true)
	s.release()
	return nil
}

// TaskID returns the remote task id seen on the stream ("" before one is seen).
func (s *Stream) TaskID() TaskID { return s.taskID }

// ContextID returns the remote context id seen on the stream.
func (s *Stream) ContextID() string { return s.contextID }

// State returns the last task state seen on the stream.
func (s *Stream) State() TaskState { return s.state }

// Terminal reports whether a terminal state was seen.
func (s *Stream) Terminal() bool { return IsTerminal(s.state) }

// Dropped returns how many duplicate events were dropped.
func (s *Stream) Dropped() int { return s.dropped }

// SendStreaming sends a message and streams the task's events. It returns
// once the first event arrived, or with the error that prevented it
// (clienterr.KindUnauthorized, clienterr.KindRejected, clienterr.KindUnavailable, ...). When the card does
// not advertise streaming, a2a-go degrades to one blocking send whose
// result is the stream's single event. The stream has no overall timeout:
// bound it with ctx.
func (c *Client) SendStreaming(ctx context.Context, r SendRequest, opts ...StreamOptions) (*Stream, error) {
	const op = "stream"
	req, err := r.build()
	if err != nil {
		return nil, NewError(clienterr.KindRejected, op, err)
	}
	return newStream(ctx, op, credentials.Secret(c.cred), firstOpt(opts), func(sctx context.Context) iter.Seq2[Event, error] {
		return c.sdk.SendStreamingMessage(sctx, req)
	})
}

// SubscribeRequest names the task to subscribe to.
type SubscribeRequest struct {
	// TaskID is required.
	TaskID TaskID
	// Tenant is sent as the request's tenant (empty: the interface's tenant).
	Tenant string
}

// Subscribe (re)attaches to a running task's event stream. The first event
// is the task snapshot. A task without an active execution (finished, or
// unknown) is clienterr.KindNotFound: use GetTask. Missed events are not replayed.
func (c *Client) Subscribe(ctx context.Context, r SubscribeRequest, opts ...StreamOptions) (*Stream, error) {
	const op = "subscribe"
	if r.TaskID == "" {
		return nil, NewError(clienterr.KindRejected, op, errors.New("SubscribeRequest.TaskID is required"))
	}
	req := &sdk.SubscribeToTaskRequest{ID: r.TaskID, Tenant: r.Tenant}
	return newStream(ctx, op, credentials.Secret(c.cred), firstOpt(opts), func(sctx context.Context) iter.Seq2[Event, error] {
		return c.sdk.SubscribeToTask(sctx, req)
	})
}

func firstOpt(opts []StreamOptions) StreamOptions {
	if len(opts) > 0 {
		return opts[0]
	}
	return StreamOptions{}
}
