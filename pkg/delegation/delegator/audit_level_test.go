package delegator_test

import (
	"strings"
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// What each audit_level records of a delegation's events
// (docs/design.md#audit-and-artifacts): minimal only the critical ones
// (started, input_required, the terminal), standard every event but text
// deltas and without remote text, full every event with its text
// (truncated). Every level keeps the record itself and its result.
func TestAuditLevelDecidesWhatIsRecorded(t *testing.T) {
	dt.CheckLeaks(t)
	for _, tt := range []struct {
		level      string
		kinds      []delegation.DelegationEventKind // recorded at least once
		notKinds   []delegation.DelegationEventKind // never recorded
		remoteText bool
	}{
		{registry.AuditMinimal, []delegation.DelegationEventKind{delegation.DelegationStarted, delegation.DelegationFinished},
			[]delegation.DelegationEventKind{delegation.DelegationStatus, delegation.DelegationTextStart, delegation.DelegationTextDelta, delegation.DelegationTextEnd, delegation.DelegationArtifactCreated}, false},
		{registry.AuditStandard, []delegation.DelegationEventKind{delegation.DelegationStarted, delegation.DelegationStatus, delegation.DelegationTextStart, delegation.DelegationTextEnd, delegation.DelegationArtifactCreated, delegation.DelegationFinished},
			[]delegation.DelegationEventKind{delegation.DelegationTextDelta}, false},
		{registry.AuditFull, []delegation.DelegationEventKind{delegation.DelegationStarted, delegation.DelegationStatus, delegation.DelegationTextStart, delegation.DelegationTextDelta, delegation.DelegationTextEnd, delegation.DelegationArtifactCreated, delegation.DelegationFinished},
			nil, true},
	} {
		t.Run(tt.level, func(t *testing.T) {
			srv := dt.StreamingFake(t, fakea2a.Working("Reading the sources."), fakea2a.TextChunks("The answer ", "is 42."), dt.TextArtifact("notes.md", "text/markdown", "# Notes"), fakea2a.Completed("done"))
			e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) { s.Policy.AuditLevel = tt.level })})
			rec := e.Record(t, "run-"+tt.level)
			res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-" + tt.level, Agent: "research", Objective: "x"})
			if res.Status != delegation.StatusCompleted {
				t.Fatalf("result %+v %+v", res, res.Error)
			}
			evs := rec.WaitTerminals(t, 1)
			if len(dt.OfKind(evs, delegation.DelegationTextDelta)) == 0 || len(dt.OfKind(evs, delegation.DelegationStatus)) == 0 {
				t.Fatalf("the delegation published no deltas or statuses to audit: %s", dt.KindsOf(evs))
			}
			recs := e.D.Audit().ListRun("run-" + tt.level)
			if len(recs) != 1 || recs[0].Status != delegation.StatusCompleted || recs[0].Result == nil || recs[0].Result.Summary != res.Summary {
				t.Fatalf("audit record %+v", recs)
			}
			seen := map[delegation.DelegationEventKind]int{}
			withText := false
			for _, ev := range recs[0].Events {
				seen[ev.Kind]++
				withText = withText || ev.Text != ""
			}
			for _, k := range tt.kinds {
				if seen[k] == 0 {
					t.Errorf("%s not recorded: %v", k, seen)
				}
			}
			for _, k := range tt.notKinds {
				if seen[k] != 0 {
					t.Errorf("%s recorded %d times at level %s", k, seen[k], tt.level)
				}
			}
			if withText != tt.remoteText {
				t.Errorf("remote text recorded: %v, want %v (%s)", withText, tt.remoteText, texts(recs[0].Events))
			}
		})
	}
}

func texts(evs []audit.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Text != "" {
			b.WriteString(string(ev.Kind) + "=" + ev.Text + "; ")
		}
	}
	return b.String()
}
