package a2aremote_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	env "github.com/seed0634/agentadaptor/internal/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// The remote of these tests is an @a2a-js/sdk 1.3 server
// (tests/node/a2a-js-remote.mjs): its answers travel only in artifacts and
// end with the bare status "done", and its follow-up streams begin with the
// still input-required Task. The replay tests serve its recorded wire
// traffic (internal/delegationtest/testdata/jsa2a) and always run; the live
// test runs the script itself. Record again with
//
//	AGENTADAPTOR_RECORD_JSA2A=1 go test -run TestRecordJSRemote ./pkg/delegation/a2aremote

const (
	genericObjective = "What is the capital of France?"
	askObjective     = "Please ask me where to fly, then book it."
	genericAnswer    = "The capital of France is Paris."
	booked           = "Booked Paris."
)

// jsEnv is a delegator whose agent "js" is the card at cardURL with the
// input_required policy mode.
func jsEnv(t *testing.T, cardURL, mode string) *env.Env {
	t.Helper()
	p := registry.DefaultPolicy()
	p.InputRequired = mode
	return env.NewEnv(t, []registry.RemoteAgentSpec{{Key: "js", DisplayName: "JS Agent", Protocol: delegation.ProtocolA2A, AgentCardURL: cardURL, Policy: p}})
}

// genericAnswerIsTheOutput: the answer in the "answer" artifact is the
// summary and the message; "done" is not; both artifacts are listed by
// reference (docs/design.md#tool-contract).
func genericAnswerIsTheOutput(t *testing.T, e *env.Env, run string) {
	t.Helper()
	rec := e.Record(t, run)
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: run, Agent: "js", Objective: genericObjective})
	if res.Status != delegation.StatusCompleted || res.Error != nil || res.Summary != genericAnswer ||
		len(res.Messages) != 1 || res.Messages[0].Text != genericAnswer {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	var kinds []string
	for _, a := range res.Artifacts {
		if a.URI == "" {
			t.Errorf("artifact not stored: %+v", a)
		}
		kinds = append(kinds, a.Name+" "+a.MimeType)
	}
	if !slices.Equal(kinds, []string{"answer text/plain", "facts application/json"}) {
		t.Errorf("artifacts %q", kinds)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	if fin := dt.OfKind(evs, delegation.DelegationFinished); len(fin) != 1 || fin[0].Text != genericAnswer {
		t.Errorf("finished %+v", fin)
	}
}

// askSurface: the question is surfaced, the UI answers, the follow-up
// stream's leading input-required Task does not end it, the booking is
// the answer.
func askSurface(t *testing.T, e *env.Env, run string) {
	t.Helper()
	rec := e.Record(t, run)
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: run, Agent: "js", Objective: askObjective})
	}()
	ir := rec.WaitKind(t, delegation.DelegationInputRequired, "")
	if ir.Text != "Which city?" {
		t.Errorf("question %q", ir.Text)
	}
	dt.WaitUntil(t, "the delegation to wait for input", func() bool { return e.D.AnswerInput(dt.Ctx(t), run, ir.DelegationID, "Paris") == nil })
	res := <-done
	if res.Status != delegation.StatusCompleted || res.Summary != booked {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	if n := len(dt.OfKind(evs, delegation.DelegationInputRequired)); n != 1 {
		t.Errorf("%d input_required events, want 1: %s", n, dt.KindsOf(evs))
	}
}

// askReturn: the question goes back to the parent, which continues the
// same delegation and remote task.
func askReturn(t *testing.T, e *env.Env, run string) {
	t.Helper()
	rec := e.Record(t, run)
	first := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: run, Agent: "js", Objective: askObjective})
	if first.Status != delegation.StatusInputRequired || first.Question != "Which city?" || first.Continue == nil {
		t.Fatalf("first call %+v err %+v", first, first.Error)
	}
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: run, Agent: "js", Objective: "Paris", Continue: first.DelegationID})
	if res.Status != delegation.StatusCompleted || res.Summary != booked || res.DelegationID != first.DelegationID || res.RemoteTaskID != first.RemoteTaskID {
		t.Fatalf("continuing call %+v err %+v", res, res.Error)
	}
	dt.CheckLifecycle(t, rec.WaitTerminals(t, 1))
}

// TestRecordJSRemote records the wire traffic the replay tests serve. It
// runs only with AGENTADAPTOR_RECORD_JSA2A=1; the recordings are committed.
func TestRecordJSRemote(t *testing.T) {
	if os.Getenv("AGENTADAPTOR_RECORD_JSA2A") != "1" {
		t.Skip("records the @a2a-js/sdk wire traffic only with AGENTADAPTOR_RECORD_JSA2A=1")
	}
	dir := dt.JSRemoteRecordings()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	base := dt.StartJSRemote(t, "--record", dir)
	e := jsEnv(t, base+"/.well-known/agent-card.json", registry.InputRequiredSurface)
	genericAnswerIsTheOutput(t, e, "run-record-generic")
	askSurface(t, e, "run-record-ask")
	remoteFailed(t, e, "run-record-failed")
	remoteCanceled(t, e, "run-record-canceled")
}

// TestJSRemoteReplay replays the recorded @a2a-js/sdk wire traffic through
// the A2A client, a2aremote and the delegator, with the input policies
// surface and return (the wire is the same).
func TestJSRemoteReplay(t *testing.T) {
	dt.CheckLeaks(t)
	t.Run("generic answer in artifacts", func(t *testing.T) {
		r := dt.ReplayJSRemote(t)
		genericAnswerIsTheOutput(t, jsEnv(t, r.CardURL(), registry.InputRequiredSurface), "run-generic")
		checkReplay(t, r, "generic")
	})
	for _, mode := range []string{registry.InputRequiredSurface, registry.InputRequiredReturn} {
		t.Run("follow-up beginning with the task, "+mode, func(t *testing.T) {
			r := dt.ReplayJSRemote(t)
			e := jsEnv(t, r.CardURL(), mode)
			if mode == registry.InputRequiredSurface {
				askSurface(t, e, "run-ask")
			} else {
				askReturn(t, e, "run-ask")
			}
			calls := checkReplay(t, r, "ask")
			if len(calls) != 2 || calls[1].Text != "Paris" || calls[1].TaskID == "" {
				t.Errorf("the answer did not go to the recorded task: %+v", calls)
			}
		})
	}
}

// checkReplay asserts that the client made exactly the recorded requests of
// scenario (method, task, context), and returns them.
func checkReplay(t *testing.T, r *dt.JSReplay, scenario string) []dt.ReplayedCall {
	t.Helper()
	calls := r.Calls()
	var names []string
	for _, c := range calls {
		if c.Mismatch != "" {
			t.Errorf("request %s: %s", c.Exchange, c.Mismatch)
		}
		names = append(names, c.Exchange)
	}
	if want := r.Recorded(scenario); !slices.Equal(names, want) {
		t.Errorf("requests %q, recorded %q", names, want)
	}
	return calls
}

// TestJSRemoteLive delegates to the @a2a-js/sdk remote itself.
func TestJSRemoteLive(t *testing.T) {
	dt.CheckLeaks(t)
	base := dt.StartJSRemote(t)
	card := base + "/.well-known/agent-card.json"
	genericAnswerIsTheOutput(t, jsEnv(t, card, registry.InputRequiredSurface), "run-live-generic")
	askSurface(t, jsEnv(t, card, registry.InputRequiredSurface), "run-live-surface")
	askReturn(t, jsEnv(t, card, registry.InputRequiredReturn), "run-live-return")
	if strings.Contains(base, "localhost") {
		t.Error("the remote must listen on 127.0.0.1")
	}
}
