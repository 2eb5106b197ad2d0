package fakea2a

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// errStopped ends an execution that cannot reach a terminal state: a2a-go's
// server waits for a terminal (or interrupted) event or an error, so an
// executor must never just return mid-task.
var errStopped = errors.New("fakea2a: task stopped before a terminal state (script ended, cancelled or server closing)")

// executor runs task scripts inside a2a-go's server.
type executor struct{ s *Server }

var _ a2asrv.AgentExecutor = (*executor)(nil)

func (e *executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		s := e.s
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		s.execWG.Add(1)
		s.mu.Unlock()
		defer s.execWG.Done()

		s.mu.Lock()
		run, ok := s.runs[ec.TaskID]
		if !ok {
			run = &taskRun{behavior: s.choose(ec.Message)}
			s.runs[ec.TaskID] = run
		}
		start := run.next
		s.mu.Unlock()

		cw, _ := ctx.Value(streamKey{}).(*connWriter)
		finished := false
		defer func() {
			if !finished {
				yield(nil, errStopped)
			}
		}()
		emitted := 0
		var last a2a.Event
		emit := func(ev a2a.Event) bool {
			emitted++
			last = ev
			return yield(ev, nil)
		}
		if ec.StoredTask == nil {
			if !emit(a2a.NewSubmittedTask(ec, ec.Message)) {
				return
			}
		}
		steps := run.behavior.Steps
		for i := start; i < len(steps); i++ {
			st := steps[i]
			switch st.Kind {
			case StepStatus:
				var msg *a2a.Message
				if st.Text != "" {
					msg = a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(st.Text))
				}
				if !emit(a2a.NewStatusUpdateEvent(ec, st.State, msg)) {
					return
				}
				if st.State.Terminal() {
					s.setNext(ec.TaskID, len(steps))
					finished = true
					return
				}
			case StepInputRequired:
				s.setNext(ec.TaskID, i+1)
				msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(st.Text))
				finished = emit(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, msg))
				return
			case StepArtifact:
				if !emit(artifactEvent(ec, st.Artifact)) {
					return
				}
			case StepDuplicate:
				if last != nil && !emit(last) {
					return
				}
			case StepSleep:
				t := time.NewTimer(st.Duration)
				select {
				case <-t.C:
				case <-ctx.Done():
				case <-s.closing:
				}
				t.Stop()
				if ctx.Err() != nil || s.isClosing() {
					return
				}
			case StepHang:
				e.wait(ctx, nil)
				return
			case StepDropStream, StepCloseStream:
				if cw != nil {
					cw.waitFrames(ctx, emitted, 5*time.Second)
					cw.drop(st.Kind == StepDropStream)
				}
			case StepAwaitSubscribe:
				if !e.wait(ctx, s.signal(s.subs, ec.TaskID)) {
					return
				}
			case StepAwaitRelease:
				if !e.wait(ctx, s.signal(s.releases, ec.TaskID)) {
					return
				}
			}
		}
		s.setNext(ec.TaskID, len(steps))
	}
}

// wait blocks until ch fires (true), or ctx/server end (false).
func (e *executor) wait(ctx context.Context, ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-ctx.Done():
	case <-e.s.closing:
	}
	return false
}

func (s *Server) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

func (s *Server) setNext(id a2a.TaskID, next int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.runs[id]; ok {
		r.next = next
	}
}

func artifactEvent(ec *a2asrv.ExecutorContext, spec ArtifactSpec) *a2a.TaskArtifactUpdateEvent {
	id := spec.ID
	if id == "" {
		id = spec.Name
	}
	if id == "" {
		id = string(a2a.NewArtifactID())
	}
	parts := append(a2a.ContentParts{}, spec.Parts...)
	if spec.Text != "" {
		parts = append(parts, a2a.NewTextPart(spec.Text))
	}
	return &a2a.TaskArtifactUpdateEvent{
		TaskID: ec.TaskID, ContextID: ec.ContextID, Append: spec.Append, LastChunk: spec.LastChunk,
		Artifact: &a2a.Artifact{ID: a2a.ArtifactID(id), Name: spec.Name, Parts: parts},
	}
}

func (e *executor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		switch e.s.opts.Cancel {
		case CancelRefuse:
			yield(nil, a2a.ErrTaskNotCancelable)
		case CancelHang:
			e.wait(ctx, nil)
			yield(nil, a2a.ErrTaskNotCancelable)
		default:
			msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("canceled"))
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, msg), nil)
		}
	}
}

// recorder is an a2a-go server interceptor filling the request records.
type recorder struct{ s *Server }

var _ a2asrv.CallInterceptor = (*recorder)(nil)

func (r *recorder) Before(ctx context.Context, cc *a2asrv.CallContext, req *a2asrv.Request) (context.Context, any, error) {
	rec, ok := ctx.Value(reqKey{}).(*Request)
	if !ok {
		return ctx, nil, nil
	}
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	rec.Method = cc.Method()
	rec.Tenant = cc.Tenant()
	switch p := req.Payload.(type) {
	case *a2a.GetTaskRequest:
		rec.TaskID, rec.HistoryLength = p.ID, p.HistoryLength
	case *a2a.CancelTaskRequest:
		rec.TaskID, rec.Metadata = p.ID, p.Metadata
	case *a2a.SubscribeToTaskRequest:
		rec.TaskID = p.ID
	case *a2a.SendMessageRequest:
		rec.Metadata = p.Metadata
		if p.Config != nil {
			rec.ReturnImmediately, rec.HistoryLength = p.Config.ReturnImmediately, p.Config.HistoryLength
		}
		if p.Message != nil {
			rec.TaskID = p.Message.TaskID
			for _, part := range p.Message.Parts {
				if part != nil {
					rec.MessageText += part.Text()
				}
			}
		}
	}
	return ctx, nil, nil
}

func (r *recorder) After(ctx context.Context, cc *a2asrv.CallContext, resp *a2asrv.Response) error {
	if cc.Method() != "SubscribeToTask" || resp.Err != nil {
		return nil
	}
	if ev, ok := resp.Payload.(a2a.Event); ok && ev != nil {
		ch := r.s.signal(r.s.subs, ev.TaskInfo().TaskID)
		r.s.mu.Lock()
		select {
		case <-ch:
		default:
			close(ch)
		}
		r.s.mu.Unlock()
	}
	return nil
}
