package delegator_test

import (
	"context"
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// A delegation holds one concurrency slot of its agent while it is active
// and gives it back when it ends, however it ends: max_concurrent_per_run
// and max_concurrent_global count active delegations, not delegations ever
// started (docs/design.md#policy).
func TestConcurrencySlotIsGivenBackWhenADelegationEnds(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.Fake(t, fakea2a.Options{Streaming: true, Choose: fakea2a.ByText(map[string]fakea2a.Behavior{
		"complete": fakea2a.Script(fakea2a.Working("on it"), fakea2a.Completed("done")),
		"fail":     fakea2a.Script(fakea2a.Working("on it"), fakea2a.Failed("it broke")),
		"reject":   fakea2a.Script(fakea2a.Rejected("not my job")),
	}, fakea2a.Script(fakea2a.Working("busy"), fakea2a.Hang()))})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) {
		s.Policy.MaxConcurrentPerRun, s.Policy.MaxConcurrentGlobal = 1, 1
	})})
	delegate := func(ctx context.Context, runID, objective string) delegation.Result {
		return e.D.Delegate(ctx, delegator.Request{RunID: runID, Agent: "research", Objective: objective})
	}
	limited := func(res delegation.Result) bool {
		return res.Error != nil && res.Error.Code == delegation.CodeConcurrencyLimit
	}

	// Active: its slot is taken, for its run and globally.
	rec := e.Record(t, "run-1")
	ctx, cancel := context.WithCancel(dt.Ctx(t))
	defer cancel()
	held := make(chan delegation.Result, 1)
	go func() { held <- delegate(ctx, "run-1", "hold") }()
	rec.WaitKind(t, delegation.DelegationStatus, "working")
	for _, run := range []string{"run-1", "run-2"} {
		if res := delegate(dt.Ctx(t), run, "complete"); !limited(res) {
			t.Errorf("%s while a delegation is active: %s %+v, want concurrency_limited", run, res.Status, res.Error)
		}
	}
	cancel()
	if res := <-held; res.Status != delegation.StatusCancelled {
		t.Fatalf("held delegation %s %+v, want cancelled", res.Status, res.Error)
	}

	// Ended, however: the next delegation, of this run or another, gets the slot.
	for _, tc := range []struct {
		objective string
		want      string
	}{
		{"complete", delegation.StatusCompleted},
		{"fail", delegation.StatusFailed},
		{"reject", delegation.StatusFailed},
		{"complete", delegation.StatusCompleted},
	} {
		for _, run := range []string{"run-1", "run-2"} {
			res := delegate(dt.Ctx(t), run, tc.objective)
			if limited(res) || res.Status != tc.want {
				t.Errorf("%s %q after the previous delegations ended: %s %+v, want %s", run, tc.objective, res.Status, res.Error, tc.want)
			}
		}
	}
	if st := e.D.Stats(); st.ActiveDelegations != 0 {
		t.Errorf("stats %+v, want no active delegation", st)
	}
}
