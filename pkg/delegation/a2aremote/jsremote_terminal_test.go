package a2aremote_test

import (
	"strings"
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// The terminal states an @a2a-js/sdk agent reports on its own, besides
// completed (jsremote_test.go): failed and canceled, pinned as recorded
// wire traffic (see jsremote_test.go for recording them again).
const (
	failObjective   = "Find me a flight (this one will fail)."
	failReason      = "No flights found: the airline is offline."
	cancelObjective = "Hold a booking until the airline can cancel it."
	cancelReason    = "The airline cancelled the booking."
)

// remoteFailed: TASK_STATE_FAILED with a status message fails the
// delegation remote_failed, the remote's reason in the message and the
// failed event (docs/design.md#a2a--delegation-event).
func remoteFailed(t *testing.T, e *env.Env, run string) {
	t.Helper()
	rec := e.Record(t, run)
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: run, Agent: "js", Objective: failObjective})
	if res.Status != delegation.StatusFailed || res.Error == nil || res.Error.Code != delegation.CodeRemoteFailed ||
		!strings.Contains(res.Error.Message, failReason) || res.Error.RemoteStatus != "failed" {
		t.Fatalf("result %s %+v", res.Status, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	if f := dt.OfKind(evs, delegation.DelegationFailed); len(f) != 1 || f[0].Error == nil || f[0].Error.Code != delegation.CodeRemoteFailed {
		t.Errorf("failed events %+v", f)
	}
}

// remoteCanceled: a task the agent itself ends TASK_STATE_CANCELED ends
// the delegation cancelled (the remote's cancel, not the host's: no
// CancelTask is sent), with its reason (docs/design.md#a2a--delegation-event).
func remoteCanceled(t *testing.T, e *env.Env, run string) {
	t.Helper()
	rec := e.Record(t, run)
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: run, Agent: "js", Objective: cancelObjective})
	if res.Status != delegation.StatusCancelled || res.Error == nil || res.Error.RemoteStatus != "canceled" {
		t.Fatalf("result %s %+v", res.Status, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	c := dt.OfKind(evs, delegation.DelegationCancelled)
	if len(c) != 1 || !strings.Contains(c[0].Text+c[0].Error.Message, cancelReason) {
		t.Errorf("cancelled events %+v", c)
	}
}

// TestJSRemoteReplayFailedAndCanceled replays the recorded @a2a-js/sdk
// traffic of a failed and of a canceled task.
func TestJSRemoteReplayFailedAndCanceled(t *testing.T) {
	dt.CheckLeaks(t)
	for scenario, run := range map[string]func(*testing.T, *env.Env, string){"failed": remoteFailed, "canceled": remoteCanceled} {
		t.Run(scenario, func(t *testing.T) {
			r := dt.ReplayJSRemote(t)
			if len(r.Recorded(scenario)) == 0 {
				t.Fatalf("no recording of %s (record with AGENTADAPTOR_RECORD_JSA2A=1)", scenario)
			}
			run(t, jsEnv(t, r.CardURL(), registry.InputRequiredSurface), "run-"+scenario)
			checkReplay(t, r, scenario)
		})
	}
}

// TestJSRemoteLiveFailedAndCanceled runs the same against the live script.
func TestJSRemoteLiveFailedAndCanceled(t *testing.T) {
	dt.CheckLeaks(t)
	card := dt.StartJSRemote(t) + "/.well-known/agent-card.json"
	remoteFailed(t, jsEnv(t, card, registry.InputRequiredSurface), "run-live-failed")
	remoteCanceled(t, jsEnv(t, card, registry.InputRequiredSurface), "run-live-canceled")
}
