package a2aremote_test

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// An A2A auth-required state is a status, then subagent.failed with
// auth_required — never a question for the parent, whatever the agent's
// input policy: the parent cannot answer an authentication
// (docs/design.md#a2a--delegation-event; docs/design.md#failure-codes).
func TestAuthRequiredIsNeverAnInputQuestion(t *testing.T) {
	for _, mode := range []string{registry.InputRequiredFail, registry.InputRequiredSurface, registry.InputRequiredReturn} {
		t.Run(mode, func(t *testing.T) {
			dt.CheckLeaks(t)
			srv := dt.Fake(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Script(fakea2a.Working("Checking."),
				fakea2a.Status(a2a.TaskStateAuthRequired, "Sign in to the CRM first."), fakea2a.Hang())})
			e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) { s.Policy.InputRequired = mode })})
			rec := e.Record(t, "run-a")
			res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-a", Agent: "research", Objective: "x"})
			if res.Status != delegation.StatusFailed || res.Error == nil || res.Error.Code != delegation.CodeAuthRequired || res.Error.RemoteStatus != "auth-required" {
				t.Fatalf("result %+v err %+v, want failed auth_required", res, res.Error)
			}
			evs := rec.WaitTerminals(t, 1)
			dt.CheckLifecycle(t, evs)
			if q := dt.OfKind(evs, delegation.DelegationInputRequired); len(q) != 0 {
				t.Errorf("auth-required surfaced as a question: %+v", q)
			}
			found := false
			for _, ev := range dt.OfKind(evs, delegation.DelegationStatus) {
				found = found || ev.Status == "auth-required"
			}
			if !found {
				t.Errorf("no auth-required status before the failure: %s", dt.KindsOf(evs))
			}
			if f := dt.OfKind(evs, delegation.DelegationFailed); len(f) != 1 || f[0].Error == nil || f[0].Error.Code != delegation.CodeAuthRequired {
				t.Errorf("failed events %+v", f)
			}
		})
	}
}
