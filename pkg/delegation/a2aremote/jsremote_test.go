package a2aremote_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// The remote of these tests is an @a2a-js/sdk 1.3 server
// (tests/node/a2a-js-remote.mjs): its answers travel only in artifacts and
// end with the bare status "done", its follow-up streams begin with the
// still input-required Task and end with its last word in the status
// message; it can be polled (a non-streaming card), send its terminal frame
// before its artifacts, or end with an agent-adaptor-result artifact. The replay tests serve its recorded wire
// traffic (internal/testkit/delegationtest/testdata/jsa2a) and always run; the live
// test runs the script itself. Record again with
//
//	AGENTADAPTOR_RECORD_JSA2A=1 go test -run TestRecordJSRemote ./pkg/delegation/a2aremote

const (
	genericObjective = "What is the capital of France?"
	askObjective     = "Please ask me where to fly, then book it."
	genericAnswer    = "The capital of France is Paris."
	booked           = "Booked Paris."
	// lastWord is the ask scenario's final status message.
	lastWord = "you answered: Paris"
)

// textMessages returns the subagent's text messages as the panel shows
// them (the text of each subagent.text.end), in order.
func textMessages(evs []delegation.DelegationEvent) []string {
	var out []string
	for _, ev := range evs {
		if ev.Kind == delegation.DelegationTextEnd {
			out = append(out, ev.Text)
		}
	}
	return out
}

// checkTextDeltas: every text message's deltas add up to its end text.
func checkTextDeltas(t *testing.T, evs []delegation.DelegationEvent) {
	t.Helper()
	got := map[string]string{}
	for _, ev := range evs {
		switch ev.Kind {
		case delegation.DelegationTextDelta:
			got[ev.RemoteMessageID] += ev.Delta
		case delegation.DelegationTextEnd:
			if got[ev.RemoteMessageID] != ev.Text {
				t.Errorf("message %s: deltas %q, end %q", ev.RemoteMessageID, got[ev.RemoteMessageID], ev.Text)
			}
		}
	}
}

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
	// The bare "done" does not hide the answer; it follows it, as the
	// remote's last word.
	if res.Status != delegation.StatusCompleted || res.Error != nil || res.Summary != genericAnswer+"\n\ndone" ||
		len(res.Messages) != 2 || res.Messages[0].Text != genericAnswer || res.Messages[1].Text != "done" {
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
	if fin := dt.OfKind(evs, delegation.DelegationFinished); len(fin) != 1 || fin[0].Text != res.Summary {
		t.Errorf("finished %+v", fin)
	}
	if msgs := textMessages(evs); !slices.Equal(msgs, []string{"done"}) {
		t.Errorf("the panel's text messages %q, want the final status message", msgs)
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
	if res.Status != delegation.StatusCompleted || res.Summary != booked+"\n\n"+lastWord {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	// The remote's last word is the subagent's last message, right before
	// its end.
	if msgs := textMessages(evs); len(msgs) == 0 || msgs[len(msgs)-1] != lastWord {
		t.Errorf("the panel's text messages %q, want %q last", msgs, lastWord)
	}
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
	if res.Status != delegation.StatusCompleted || res.Summary != booked+"\n\n"+lastWord || res.DelegationID != first.DelegationID || res.RemoteTaskID != first.RemoteTaskID {
		t.Fatalf("continuing call %+v err %+v", res, res.Error)
	}
	dt.CheckLifecycle(t, rec.WaitTerminals(t, 1))
}

// polled: a remote that does not stream is polled; what the polls show
// reaches the panel as text (growing by what each poll adds) and
// artifacts, and its final status message as the last message.
func polled(t *testing.T, e *env.Env, run string) {
	t.Helper()
	rec := e.Record(t, run)
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: run, Agent: "js", Objective: "[poll] Report, please."})
	const output = "Polled answer.\n\n# Report\nThree polls."
	if res.Status != delegation.StatusCompleted || res.Summary != output+"\n\nAll polled." ||
		len(res.Messages) != 2 || res.Messages[0].Text != "Polled answer." || res.Messages[1].Text != "All polled." {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	checkTextDeltas(t, evs)
	if msgs := textMessages(evs); !slices.Equal(msgs, []string{"Polled answer.", "All polled."}) {
		t.Errorf("the panel's text messages %q", msgs)
	}
	var deltas []string
	for _, ev := range dt.OfKind(evs, delegation.DelegationTextDelta) {
		deltas = append(deltas, ev.Delta)
	}
	if !slices.Equal(deltas, []string{"Polled ", "answer.", "All polled."}) {
		t.Errorf("text deltas %q, want the polled text as it grew, then the last word", deltas)
	}
	if arts := dt.OfKind(evs, delegation.DelegationArtifactCreated); len(arts) != 1 || arts[0].Artifact.Name != "report.md" || arts[0].Artifact.URI == "" {
		t.Errorf("artifacts %+v", arts)
	}
}

// early: a remote that sends its terminal frame before its artifacts; the
// host reads the task once and the answer is the artifact.
func early(t *testing.T, e *env.Env, run string) {
	t.Helper()
	rec := e.Record(t, run)
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: run, Agent: "js", Objective: "[early] Answer quickly."})
	if res.Status != delegation.StatusCompleted || res.Summary != "Early answer." || len(res.Artifacts) != 1 || res.Artifacts[0].Name != "answer" {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	if arts := dt.OfKind(evs, delegation.DelegationArtifactCreated); len(arts) != 1 || arts[0].Artifact.URI == "" {
		t.Errorf("the panel shows artifacts %+v, want the answer", arts)
	}
}

// structured: an agent-adaptor-result is read whole: its summary is the
// summary, its session and usage reach raw_task; the panel shows the text
// and the artifact.
func structured(t *testing.T, e *env.Env, run string) {
	t.Helper()
	rec := e.Record(t, run)
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: run, Agent: "js", Objective: "[result] Summarize."})
	if res.Status != delegation.StatusCompleted || res.Summary != "Structured summary." || res.RawTask == nil ||
		res.RawTask.SessionID != "sess-js-1" || res.RawTask.Usage == nil || *res.RawTask.Usage != (delegation.RemoteUsage{InputTokens: 12, OutputTokens: 34}) {
		t.Fatalf("result %+v raw %+v err %+v", res, res.RawTask, res.Error)
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].Name != "notes.md" {
		t.Errorf("artifacts %+v", res.Artifacts)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	if msgs := textMessages(evs); !slices.Equal(msgs, []string{"Local text."}) {
		t.Errorf("the panel's text messages %q", msgs)
	}
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
	early(t, e, "run-record-early")
	structured(t, e, "run-record-result")
	polled(t, jsEnv(t, base+"/poll/.well-known/agent-card.json", registry.InputRequiredSurface), "run-record-poll")
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
	t.Run("polled", func(t *testing.T) {
		r := dt.ReplayJSRemote(t)
		polled(t, jsEnv(t, r.PollCardURL(), registry.InputRequiredSurface), "run-poll")
		checkReplay(t, r, "poll")
	})
	t.Run("terminal frame before the artifacts", func(t *testing.T) {
		r := dt.ReplayJSRemote(t)
		early(t, jsEnv(t, r.CardURL(), registry.InputRequiredSurface), "run-early")
		if calls := checkReplay(t, r, "early"); len(calls) != 2 || calls[1].Method != "GetTask" {
			t.Errorf("the task was not read back once: %+v", calls)
		}
	})
	t.Run("agent-adaptor-result", func(t *testing.T) {
		r := dt.ReplayJSRemote(t)
		structured(t, jsEnv(t, r.CardURL(), registry.InputRequiredSurface), "run-result")
		checkReplay(t, r, "result")
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
	polled(t, jsEnv(t, base+"/poll/.well-known/agent-card.json", registry.InputRequiredSurface), "run-live-poll")
	early(t, jsEnv(t, card, registry.InputRequiredSurface), "run-live-early")
	structured(t, jsEnv(t, card, registry.InputRequiredSurface), "run-live-result")
	if strings.Contains(base, "localhost") {
		t.Error("the remote must listen on 127.0.0.1")
	}
}
