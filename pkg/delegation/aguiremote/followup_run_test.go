package aguiremote_test

import (
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// Each turn of a delegation to an AG-UI agent is a new RunAgentInput POST
// on the same thread with a new runId: the answer to a question is not a
// replay of the run that asked it (docs/design.md#remote-ag-ui--delegation-event).
func TestAGUIFollowUpTurnIsANewRunOnTheSameThread(t *testing.T) {
	dt.CheckLeaks(t)
	rm := dt.NewSSERemote(t, func(w *dt.SSEWriter) {
		w.Started()
		if len(w.In.Messages) == 1 {
			w.Ev(`{"type":"RUN_FINISHED","threadId":"$THREAD","runId":"$RUN","outcome":{"type":"interrupt","interrupts":[{"id":"i1","reason":"input_required","message":"Which year?"}]}}`)
			return
		}
		w.Text("m2", "The 2024 figures.")
		w.Finished()
	})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.AGUISpec("remote", rm.URL(), func(s *registry.RemoteAgentSpec) { s.Policy.InputRequired = registry.InputRequiredReturn })})
	first := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-f", Agent: "remote", Objective: "Find the figures."})
	if first.Status != delegation.StatusInputRequired || first.Continue == nil {
		t.Fatalf("first call %+v %+v", first, first.Error)
	}
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-f", Agent: "remote", Objective: "2024", Continue: first.DelegationID})
	if res.Status != delegation.StatusCompleted {
		t.Fatalf("continuing call %s %+v", res.Status, res.Error)
	}
	reqs := rm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d runs, want 2", len(reqs))
	}
	a, b := reqs[0].Input, reqs[1].Input
	if a.ThreadID == "" || b.ThreadID != a.ThreadID {
		t.Errorf("threads %q then %q, want the same", a.ThreadID, b.ThreadID)
	}
	if a.RunID == "" || b.RunID == "" || b.RunID == a.RunID {
		t.Errorf("run ids %q then %q, want two different ones", a.RunID, b.RunID)
	}
	if n := len(b.Messages); n < 2 || b.Messages[n-1].Content != "2024" {
		t.Errorf("the follow-up run does not end with the answer: %+v", b.Messages)
	}
}
