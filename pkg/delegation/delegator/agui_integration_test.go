package delegator_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	agentadaptor "github.com/seed0634/agentadaptor"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden files")

// normalize reduces a delegation's events to the protocol-independent
// family the UI renders: kinds in order, consecutive statuses and text
// deltas merged, text content, artifact metadata and the terminal text.
func normalize(evs []delegation.DelegationEvent) string {
	var b strings.Builder
	var last delegation.DelegationEventKind
	var delta strings.Builder
	flush := func() {
		if last == delegation.DelegationTextDelta {
			fmt.Fprintf(&b, "%s %q\n", delegation.DelegationTextDelta, delta.String())
			delta.Reset()
		}
	}
	for _, ev := range evs {
		if ev.Kind == last && (ev.Kind == delegation.DelegationStatus || ev.Kind == delegation.DelegationTextDelta) {
			delta.WriteString(ev.Delta)
			continue
		}
		flush()
		last = ev.Kind
		switch ev.Kind {
		case delegation.DelegationTextDelta:
			delta.WriteString(ev.Delta)
		case delegation.DelegationTextEnd:
			fmt.Fprintf(&b, "%s %q\n", ev.Kind, ev.Text)
		case delegation.DelegationArtifactCreated:
			fmt.Fprintf(&b, "%s %s %s %d stored=%v\n", ev.Kind, ev.Artifact.Name, ev.Artifact.MimeType, ev.Artifact.SizeBytes, ev.Artifact.URI != "")
		case delegation.DelegationFinished, delegation.DelegationFailed, delegation.DelegationCancelled:
			fmt.Fprintf(&b, "%s %s %q\n", ev.Kind, ev.Status, ev.Text)
		default:
			fmt.Fprintf(&b, "%s\n", ev.Kind)
		}
	}
	flush()
	return b.String()
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s--- want\n%s", name, got, want)
	}
}

// TestAGUIAndA2AProduceTheSameFamily is the phase 7 exit criterion: the
// same script played by a remote A2A agent (internal/testkit/fakea2a) and by a
// remote AG-UI agent (the real pkg/bridges/sse handler over the scripted
// agent) yields the same subagent event family.
func TestAGUIAndA2AProduceTheSameFamily(t *testing.T) {
	dt.CheckLeaks(t)
	const text = "Comparing task streaming and artifact behavior."
	a2aSrv := dt.StreamingFake(t,
		fakea2a.Working("Searching official A2A SDK examples..."),
		fakea2a.TextChunks("Comparing task ", "streaming and ", "artifact behavior."),
		dt.TextArtifact("a2a-sdk-notes.md", "text/markdown", "# Notes"),
		fakea2a.Completed(""),
	)
	bridge := dt.NewAGUIBridge(t, `
- say: "`+text+`"
- artifact: {name: a2a-sdk-notes.md, mime_type: text/markdown, text: "# Notes"}
`)
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", a2aSrv), dt.AGUISpec("research-agui", bridge.URL())})

	results, norms := map[string]delegation.Result{}, map[string]string{}
	for _, agent := range []string{"research", "research-agui"} {
		run := "run-golden-" + agent
		rec := e.Record(t, run)
		res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: run, ParentToolCallID: "toolu-1", Agent: agent, Objective: "Find the streaming API."})
		if res.Status != delegation.StatusCompleted || res.Error != nil {
			t.Fatalf("%s: result %+v err %+v", agent, res, res.Error)
		}
		evs := rec.WaitTerminals(t, 1)
		dt.CheckLifecycle(t, evs)
		for _, ev := range evs {
			if ev.Kind == delegation.DelegationStarted && agent == "research" {
				continue // A2A: started precedes the remote task
			}
			if ev.RemoteTaskID != res.RemoteTaskID || ev.RemoteContextID != res.RemoteContextID || ev.ParentToolCallID != "toolu-1" {
				t.Errorf("%s: event ids %+v, result %s/%s", agent, ev, res.RemoteTaskID, res.RemoteContextID)
			}
		}
		norms[agent] = normalize(evs)
		results[agent] = res
		dt.NoSecret(t, agent+" events", evs)
	}
	if norms["research"] != norms["research-agui"] {
		t.Errorf("A2A and AG-UI families differ:\n--- a2a\n%s--- agui\n%s", norms["research"], norms["research-agui"])
	}
	checkGolden(t, "subagent_family.golden", norms["research-agui"])
	a, g := results["research"], results["research-agui"]
	// The summary is the task's output in both protocols: the assistant
	// text and the text artifact (docs/design.md#tool-contract); the answer
	// message is the assistant text.
	if a.Summary != text+"\n\n# Notes" || g.Summary != a.Summary || len(g.Messages) != 1 || g.Messages[0].Text != text ||
		len(a.Messages) != 1 || a.Messages[0].Text != text {
		t.Errorf("summaries %q / %q, messages %+v", a.Summary, g.Summary, g.Messages)
	}
	if len(g.Artifacts) != 1 || g.Artifacts[0].Name != a.Artifacts[0].Name || g.Artifacts[0].MimeType != a.Artifacts[0].MimeType || g.Artifacts[0].URI == "" {
		t.Errorf("artifacts %+v / %+v", a.Artifacts, g.Artifacts)
	}
	if g.RemoteProtocol != delegation.ProtocolAGUI || g.RawTask == nil || g.RawTask.Provider != delegation.ProtocolAGUI || g.RawTask.TaskID != g.RemoteTaskID ||
		a.RawTask == nil || a.RawTask.Provider != delegation.ProtocolA2A {
		t.Errorf("protocol identifiers: %+v %+v / %+v %+v", g, g.RawTask, a, a.RawTask)
	}
	for _, h := range bridge.AuthHeaders() {
		if h != "Bearer "+dt.SecretToken {
			t.Errorf("the AG-UI remote got Authorization %q", h)
		}
	}
	// The remote run id is the one the remote ran (and reported in RUN_STARTED).
	if res := bridge.WaitRun(t, g.RemoteTaskID); res.Status != agentadaptor.StatusCompleted {
		t.Errorf("remote run %s", res.Status)
	}
	recs := e.D.Audit().ListRun("run-golden-research-agui")
	if len(recs) != 1 || recs[0].Protocol != delegation.ProtocolAGUI || recs[0].RemoteTaskID != g.RemoteTaskID || recs[0].RemoteContextID != g.RemoteContextID ||
		recs[0].Status != delegation.StatusCompleted || recs[0].Mode != "streaming" || len(recs[0].Events) == 0 {
		t.Errorf("audit %+v", recs)
	}
}

// TestAGUIFailuresEndInOneTypedTerminal covers malformed and oversized
// frames, a stream cut before the terminal, a remote that never finishes,
// a RUN_ERROR and refused requests.
func TestAGUIFailuresEndInOneTypedTerminal(t *testing.T) {
	dt.CheckLeaks(t)
	cases := []struct {
		name    string
		script  func(w *dt.SSEWriter)
		timeout time.Duration
		code    delegation.FailureCode
		gone    bool
	}{
		{name: "malformed frame", code: delegation.CodeRemoteFailed, script: func(w *dt.SSEWriter) {
			w.Started()
			w.Raw("data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\n\n")
		}},
		{name: "frame without type", code: delegation.CodeRemoteFailed, script: func(w *dt.SSEWriter) { w.Ev(`{"delta":"x"}`) }},
		{name: "oversized frame", code: delegation.CodeRemoteFailed, script: func(w *dt.SSEWriter) {
			w.Started()
			w.Raw("data: {\"type\":\"CUSTOM\",\"name\":\"x\",\"value\":\"" + strings.Repeat("a", 2<<20) + "\"}\n\n")
		}},
		{name: "stream ends without terminal", code: delegation.CodeStreamInterrupted, script: func(w *dt.SSEWriter) {
			w.Started()
			w.Text("m1", "partial")
		}},
		{name: "remote never finishes", code: delegation.CodeRemoteTimeout, timeout: 300 * time.Millisecond, gone: true, script: func(w *dt.SSEWriter) {
			w.Started()
			w.Text("m1", "thinking")
			w.Hold()
		}},
		{name: "remote never answers", code: delegation.CodeRemoteTimeout, timeout: 300 * time.Millisecond, gone: true, script: func(w *dt.SSEWriter) { w.Hold() }},
		{name: "RUN_ERROR", code: delegation.CodeRemoteFailed, script: func(w *dt.SSEWriter) {
			w.Started()
			w.Ev(`{"type":"RUN_ERROR","message":"remote exploded","code":"boom"}`)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rm := dt.NewSSERemote(t, tc.script)
			e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.AGUISpec("remote", rm.URL(), func(s *registry.RemoteAgentSpec) {
				if tc.timeout > 0 {
					s.Policy.MaxTimeout = tc.timeout
				}
			})})
			rec := e.Record(t, "run-f")
			res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-f", Agent: "remote", Objective: "x"})
			if res.Status != delegation.StatusFailed || res.Error == nil || res.Error.Code != tc.code {
				t.Fatalf("result %+v err %+v", res, res.Error)
			}
			evs := rec.WaitTerminals(t, 1)
			dt.CheckLifecycle(t, evs)
			if f := dt.OfKind(evs, delegation.DelegationFailed); len(f) != 1 || f[0].Error.Code != tc.code {
				t.Errorf("failed events %+v", f)
			}
			if tc.gone {
				rm.WaitGone(t)
			}
			if recs := e.D.Audit().ListRun("run-f"); len(recs) != 1 || recs[0].Status != delegation.StatusFailed || recs[0].Result.Error.Code != tc.code {
				t.Errorf("audit %+v", recs)
			}
		})
	}
	t.Run("refused requests", func(t *testing.T) {
		e := env.NewEnv(t, []registry.RemoteAgentSpec{
			dt.AGUISpec("nothing", "http://127.0.0.1:1/agui"),
			dt.AGUISpec("nocred", "http://127.0.0.1:1/agui", func(s *registry.RemoteAgentSpec) { s.AuthRef = "env:A2ADELEGATION_UNSET_VARIABLE" }),
		})
		for _, agent := range []string{"nothing", "nocred"} {
			rec := e.Record(t, "run-"+agent)
			res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-" + agent, Agent: agent, Objective: "x"})
			if res.Error == nil || res.Error.Code != delegation.CodeAgentUnavailable {
				t.Errorf("%s: %+v", agent, res)
			}
			dt.CheckLifecycle(t, rec.WaitTerminals(t, 1))
		}
	})
}

// TestAGUICancellationAbortsTheRemoteRequest: AG-UI has no cancel call;
// cancelling the tool call aborts the request, which the remote sees.
func TestAGUICancellationAbortsTheRemoteRequest(t *testing.T) {
	dt.CheckLeaks(t)
	t.Run("raw remote", func(t *testing.T) {
		rm := dt.NewSSERemote(t, func(w *dt.SSEWriter) {
			w.Started()
			w.Text("m1", "working")
			w.Hold()
		})
		e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.AGUISpec("remote", rm.URL())})
		rec := e.Record(t, "run-c")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan delegation.Result, 1)
		go func() { done <- e.D.Delegate(ctx, delegator.Request{RunID: "run-c", Agent: "remote", Objective: "x"}) }()
		rec.WaitKind(t, delegation.DelegationTextEnd, "")
		cancel()
		res := <-done
		if res.Status != delegation.StatusCancelled || res.Error == nil || res.Error.Code != delegation.CodeCancelled {
			t.Fatalf("result %+v err %+v", res, res.Error)
		}
		rm.WaitGone(t)
		evs := rec.WaitTerminals(t, 1)
		dt.CheckLifecycle(t, evs)
		if recs := e.D.Audit().ListRun("run-c"); len(recs) != 1 || recs[0].CancelConfirmed == nil || !*recs[0].CancelConfirmed {
			t.Errorf("audit %+v", recs)
		}
	})
	t.Run("bridge remote run is cancelled", func(t *testing.T) {
		bridge := dt.NewAGUIBridge(t, "- say: Working on it\n- sleep: 30s\n- say: never\n")
		e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.AGUISpec("remote", bridge.URL())})
		rec := e.Record(t, "run-cb")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan delegation.Result, 1)
		go func() { done <- e.D.Delegate(ctx, delegator.Request{RunID: "run-cb", Agent: "remote", Objective: "x"}) }()
		rec.WaitKind(t, delegation.DelegationTextEnd, "")
		cancel()
		res := <-done
		if res.Status != delegation.StatusCancelled {
			t.Fatalf("result %+v", res)
		}
		if r := bridge.WaitRun(t, res.RemoteTaskID); r.Status != agentadaptor.StatusCancelled {
			t.Errorf("remote run status %s, want cancelled", r.Status)
		}
	})
	t.Run("service close", func(t *testing.T) {
		rm := dt.NewSSERemote(t, func(w *dt.SSEWriter) {
			w.Started()
			w.Hold()
		})
		e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.AGUISpec("remote", rm.URL())})
		rec := e.Record(t, "run-sc")
		done := make(chan delegation.Result, 1)
		go func() {
			done <- e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-sc", Agent: "remote", Objective: "x"})
		}()
		rec.WaitKind(t, delegation.DelegationStarted, "")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := e.D.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if res := <-done; res.Status != delegation.StatusCancelled || !strings.Contains(res.Error.Message, "shutting down") {
			t.Errorf("result %+v", res)
		}
		rm.WaitGone(t)
	})
}

// TestAGUIAuthAndSecrets: the auth ref's credential goes to the remote as a
// bearer token and nowhere else, even when the remote echoes it.
func TestAGUIAuthAndSecrets(t *testing.T) {
	dt.CheckLeaks(t)
	rm := dt.NewSSERemote(t, func(w *dt.SSEWriter) {
		w.Started()
		w.Text("m1", "your token is "+dt.SecretToken)
		w.Ev(`{"type":"CUSTOM","name":"echo","value":{"token":"`+dt.SecretToken+`"}}`,
			`{"type":"TOOL_CALL_START","toolCallId":"t1","toolCallName":"`+dt.SecretToken+`"}`,
			`{"type":"CUSTOM","name":"agent.artifact","value":{"name":"`+dt.SecretToken+`.txt","text":"x"}}`,
			`{"type":"RUN_ERROR","message":"bad token `+dt.SecretToken+`","code":"`+dt.SecretToken+`"}`)
	})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.AGUISpec("remote", rm.URL(), func(s *registry.RemoteAgentSpec) { s.Policy.AuditLevel = registry.AuditFull })})
	rec := e.Record(t, "run-s")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-s", Agent: "remote", Objective: "x"})
	if res.Error == nil || res.Error.Code != delegation.CodeRemoteFailed {
		t.Fatalf("result %+v", res)
	}
	reqs := rm.Requests()
	if len(reqs) != 1 || reqs[0].Auth != "Bearer "+dt.SecretToken {
		t.Fatalf("auth header not sent: %+v", reqs)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.NoSecret(t, "events", evs)
	dt.NoSecret(t, "result", res)
	dt.NoSecret(t, "audit", e.D.Audit().ListRun("run-s"))
	dt.NoSecret(t, "logs", e.Logs.String())
	if !strings.Contains(fmt.Sprint(dt.OfKind(evs, delegation.DelegationStatus)[0].Raw), "[REDACTED]") {
		t.Errorf("echoed secret not visibly redacted: %+v", dt.OfKind(evs, delegation.DelegationStatus)[0].Raw)
	}
}

// TestAGUIRequestAndContextPolicies: what the remote receives, and the
// thread (remote context) chosen per context policy.
func TestAGUIRequestAndContextPolicies(t *testing.T) {
	dt.CheckLeaks(t)
	rm := dt.NewSSERemote(t, func(w *dt.SSEWriter) {
		w.Started()
		w.Text("m1", "ok")
		w.Finished()
	})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{
		dt.AGUISpec("eph", rm.URL()),
		dt.AGUISpec("run", rm.URL(), func(s *registry.RemoteAgentSpec) { s.Policy.ContextPolicy = registry.ContextStickyPerRunAgent }),
		dt.AGUISpec("thread", rm.URL(), func(s *registry.RemoteAgentSpec) { s.Policy.ContextPolicy = registry.ContextStickyPerParentThreadAgent }),
	})
	del := func(agent, run, session string) delegation.Result {
		t.Helper()
		res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: run, SessionKey: session, Agent: agent, Objective: "Summarize.",
			Input: delegator.TaskInput{Prompt: "Be brief.", Context: "We build delegation.", Artifacts: []delegator.InputArtifact{{Name: "spec.md", URI: "https://example.com/spec.md"}}}})
		if res.Status != delegation.StatusCompleted {
			t.Fatalf("%s: %+v", agent, res)
		}
		return res
	}
	e1, e2 := del("eph", "r1", "s1"), del("eph", "r1", "s1")
	r1, r2, r3 := del("run", "r1", "s1"), del("run", "r1", "s1"), del("run", "r2", "s1")
	t1, t2 := del("thread", "r1", "s1"), del("thread", "r2", "s1")
	if e1.RemoteContextID == e2.RemoteContextID || r1.RemoteContextID != r2.RemoteContextID || r1.RemoteContextID == r3.RemoteContextID || t1.RemoteContextID != t2.RemoteContextID {
		t.Errorf("contexts: eph %s %s, run %s %s %s, thread %s %s", e1.RemoteContextID, e2.RemoteContextID, r1.RemoteContextID, r2.RemoteContextID, r3.RemoteContextID, t1.RemoteContextID, t2.RemoteContextID)
	}
	reqs := rm.Requests()
	runs := map[string]bool{}
	for i, r := range reqs {
		if runs[r.Input.RunID] {
			t.Errorf("runId %s reused", r.Input.RunID)
		}
		runs[r.Input.RunID] = true
		if len(r.Input.Messages) != 1 || r.Input.Messages[0].Role != types.RoleUser ||
			r.Input.Messages[0].Content != "Summarize.\n\nBe brief.\n\nContext:\nWe build delegation." ||
			len(r.Input.Context) != 1 || r.Input.Context[0].Value != "https://example.com/spec.md" || len(r.Input.Tools) != 0 {
			t.Errorf("request %d: %+v", i, r.Input)
		}
	}
	if len(reqs) != 7 || reqs[0].Input.ThreadID != e1.RemoteContextID || reqs[0].Input.RunID != e1.RemoteTaskID {
		t.Errorf("requests %d, first %+v vs %+v", len(reqs), reqs[0].Input, e1)
	}
}

// TestAGUIInputRequired: a remote that pauses for input (the scripted
// agent's ask over the SSE bridge) is answered through AnswerInput and
// resumed with a new run on the same thread; refused when policy says so.
func TestAGUIInputRequired(t *testing.T) {
	dt.CheckLeaks(t)
	bridge := dt.NewAGUIBridge(t, "- say: Let me check.\n- ask: Which year?\n- say: Done for the year you gave.\n")
	e := env.NewEnv(t, []registry.RemoteAgentSpec{
		dt.AGUISpec("ask", bridge.URL(), func(s *registry.RemoteAgentSpec) { s.Policy.AllowInputRequired = true }),
		dt.AGUISpec("strict", bridge.URL()),
	})
	rec := e.Record(t, "run-i")
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-i", Agent: "ask", Objective: "Report."})
	}()
	q := rec.WaitKind(t, delegation.DelegationInputRequired, "")
	if q.Text != "Which year?" {
		t.Errorf("question %+v", q)
	}
	first := q.RemoteTaskID
	if err := e.D.AnswerInput(dt.Ctx(t), "run-i", q.DelegationID, "2024"); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Status != delegation.StatusCompleted || res.Summary != "Let me check.\n\nWhich year?\n\nDone for the year you gave." || res.RemoteTaskID == first {
		t.Fatalf("result %+v %+v", res, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	if got := dt.KindsOf(dt.OfKind(evs, delegation.DelegationStatus)); !strings.Contains(got, "input_provided") {
		t.Errorf("statuses %s", got)
	}
	if r := bridge.WaitRun(t, res.RemoteTaskID); r.Status != agentadaptor.StatusCompleted {
		t.Errorf("resumed run %s", r.Status)
	}

	res = e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-i2", Agent: "strict", Objective: "Report."})
	if res.Error == nil || res.Error.Code != delegation.CodeInputRequiredUnsupported || !strings.Contains(res.Error.Message, "Which year?") {
		t.Errorf("strict result %+v %+v", res, res.Error)
	}
}

// TestAGUIInputReturnedToParent: the input policy "return" is
// protocol-neutral: a paused AG-UI run's question goes back to the parent,
// whose continuing call resumes the same thread with a new run.
func TestAGUIInputReturnedToParent(t *testing.T) {
	dt.CheckLeaks(t)
	bridge := dt.NewAGUIBridge(t, "- say: Let me check.\n- ask: Which year?\n- say: Done for the year you gave.\n")
	e := env.NewEnv(t, []registry.RemoteAgentSpec{
		dt.AGUISpec("ask", bridge.URL(), func(s *registry.RemoteAgentSpec) { s.Policy.InputRequired = registry.InputRequiredReturn }),
	})
	rec := e.Record(t, "run-ir")
	first := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-ir", Agent: "ask", Objective: "Report."})
	if first.Status != delegation.StatusInputRequired || first.Question != "Which year?" || first.Continue == nil || first.RemoteProtocol != delegation.ProtocolAGUI {
		t.Fatalf("first call %+v %+v", first, first.Error)
	}
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-ir", Agent: "ask", Objective: "2024", Continue: first.DelegationID})
	if res.Status != delegation.StatusCompleted || res.DelegationID != first.DelegationID || res.RemoteContextID != first.RemoteContextID || res.RemoteTaskID == first.RemoteTaskID ||
		!strings.HasSuffix(res.Summary, "Done for the year you gave.") {
		t.Fatalf("continuing call %+v %+v", res, res.Error)
	}
	dt.CheckLifecycle(t, rec.WaitTerminals(t, 1))
}

// TestAGUIConcurrencyLimit: the policy's per-run limit applies to AG-UI agents.
func TestAGUIConcurrencyLimit(t *testing.T) {
	dt.CheckLeaks(t)
	rm := dt.NewSSERemote(t, func(w *dt.SSEWriter) {
		w.Started()
		w.Hold()
	})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.AGUISpec("remote", rm.URL(), func(s *registry.RemoteAgentSpec) { s.Policy.MaxConcurrentPerRun = 1 })})
	rec := e.Record(t, "run-l")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan delegation.Result, 1)
	go func() { done <- e.D.Delegate(ctx, delegator.Request{RunID: "run-l", Agent: "remote", Objective: "x"}) }()
	rec.WaitKind(t, delegation.DelegationStarted, "")
	if res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-l", Agent: "remote", Objective: "y"}); res.Error == nil || res.Error.Code != delegation.CodeConcurrencyLimit {
		t.Errorf("second delegation %+v", res)
	}
	cancel()
	if res := <-done; res.Status != delegation.StatusCancelled {
		t.Errorf("first delegation %+v", res)
	}
	rm.WaitGone(t)
}
