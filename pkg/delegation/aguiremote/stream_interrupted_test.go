package aguiremote_test

import (
	"net/http"
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// A remote AG-UI run whose stream ends without RUN_FINISHED or RUN_ERROR,
// however it ends, fails the delegation as stream_interrupted (retryable;
// AG-UI runs cannot be resumed), in the result, the failed event and the
// audit — never as another failure such as auth_required, which a run
// that merely stopped would be mistaken for (docs/design.md#remote-ag-ui--delegation-event).
func TestAGUIStreamEndingWithoutTerminalIsStreamInterrupted(t *testing.T) {
	dt.CheckLeaks(t)
	for _, tt := range []struct {
		name   string
		script func(w *dt.SSEWriter)
	}{
		{"end of stream after text", func(w *dt.SSEWriter) { w.Started(); w.Text("m1", "partial") }},
		{"end of stream after RUN_STARTED", func(w *dt.SSEWriter) { w.Started() }},
		{"empty stream", func(w *dt.SSEWriter) {}},
		{"a message left open", func(w *dt.SSEWriter) {
			w.Started()
			w.Ev(`{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"half"}`)
		}},
		{"the terminal frame cut short", func(w *dt.SSEWriter) {
			w.Started()
			w.Raw(`data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}` + "\n") // no blank line: the event never completes
		}},
		{"connection aborted", func(w *dt.SSEWriter) { w.Started(); w.Text("m1", "partial"); panic(http.ErrAbortHandler) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rm := dt.NewSSERemote(t, tt.script)
			e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.AGUISpec("remote", rm.URL())})
			rec := e.Record(t, "run-i")
			res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-i", Agent: "remote", Objective: "x"})
			if res.Status != delegation.StatusFailed || res.Error == nil || res.Error.Code != delegation.CodeStreamInterrupted || !res.Error.Retryable {
				t.Fatalf("result %s %+v, want failed stream_interrupted (retryable)", res.Status, res.Error)
			}
			evs := rec.WaitTerminals(t, 1)
			dt.CheckLifecycle(t, evs)
			if f := dt.OfKind(evs, delegation.DelegationFailed); len(f) != 1 || f[0].Error == nil || f[0].Error.Code != delegation.CodeStreamInterrupted {
				t.Errorf("failed events %+v", f)
			}
			if recs := e.D.Audit().ListRun("run-i"); len(recs) != 1 || recs[0].Result == nil || recs[0].Result.Error == nil || recs[0].Result.Error.Code != delegation.CodeStreamInterrupted {
				t.Errorf("audit %+v", recs)
			}
		})
	}
	t.Run("the answered follow-up run", func(t *testing.T) {
		rm := dt.NewSSERemote(t, func(w *dt.SSEWriter) {
			w.Started()
			if len(w.In.Messages) == 1 {
				w.Ev(`{"type":"RUN_FINISHED","threadId":"$THREAD","runId":"$RUN","outcome":{"type":"interrupt","interrupts":[{"id":"i1","reason":"input_required","message":"Which year?"}]}}`)
				return
			}
			w.Text("m2", "partial") // the run that carries the answer is cut
		})
		e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.AGUISpec("remote", rm.URL(), func(s *registry.RemoteAgentSpec) { s.Policy.InputRequired = registry.InputRequiredReturn })})
		first := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-f", Agent: "remote", Objective: "x"})
		if first.Status != delegation.StatusInputRequired || first.Continue == nil {
			t.Fatalf("first call %+v %+v", first, first.Error)
		}
		res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-f", Agent: "remote", Objective: "2024", Continue: first.DelegationID})
		if res.Status != delegation.StatusFailed || res.Error == nil || res.Error.Code != delegation.CodeStreamInterrupted {
			t.Fatalf("continuing call %s %+v, want failed stream_interrupted", res.Status, res.Error)
		}
	})
}
