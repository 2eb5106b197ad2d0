package a2adelegation

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/fakea2a"
	aguiclient "github.com/seed0634/agentadaptor/pkg/clients/agui"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden files")

// normalize reduces a delegation's events to the protocol-independent
// family the UI renders: kinds in order, consecutive statuses and text
// deltas merged, text content, artifact metadata and the terminal text.
func normalize(evs []DelegationEvent) string {
	var b strings.Builder
	var last DelegationEventKind
	var delta strings.Builder
	flush := func() {
		if last == DelegationTextDelta {
			fmt.Fprintf(&b, "%s %q\n", DelegationTextDelta, delta.String())
			delta.Reset()
		}
	}
	for _, ev := range evs {
		if ev.Kind == last && (ev.Kind == DelegationStatus || ev.Kind == DelegationTextDelta) {
			delta.WriteString(ev.Delta)
			continue
		}
		flush()
		last = ev.Kind
		switch ev.Kind {
		case DelegationTextDelta:
			delta.WriteString(ev.Delta)
		case DelegationTextEnd:
			fmt.Fprintf(&b, "%s %q\n", ev.Kind, ev.Text)
		case DelegationArtifactCreated:
			fmt.Fprintf(&b, "%s %s %s %d stored=%v\n", ev.Kind, ev.Artifact.Name, ev.Artifact.MimeType, ev.Artifact.SizeBytes, ev.Artifact.URI != "")
		case DelegationFinished, DelegationFailed, DelegationCancelled:
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
// same script played by a remote A2A agent (internal/fakea2a) and by a
// remote AG-UI agent (the real pkg/bridges/sse handler over the scripted
// agent) yields the same subagent event family.
func TestAGUIAndA2AProduceTheSameFamily(t *testing.T) {
	checkLeaks(t)
	const text = "Comparing task streaming and artifact behavior."
	a2aSrv := streamingFake(t,
		fakea2a.Working("Searching official A2A SDK examples..."),
		fakea2a.TextChunks("Comparing task ", "streaming and ", "artifact behavior."),
		textArtifact("a2a-sdk-notes.md", "text/markdown", "# Notes"),
		fakea2a.Completed(""),
	)
	bridge := newAGUIBridge(t, `
- say: "`+text+`"
- artifact: {name: a2a-sdk-notes.md, mime_type: text/markdown, text: "# Notes"}
`)
	e := newEnv(t, []RemoteAgentSpec{specFor("research", a2aSrv), aguiSpec("research-agui", bridge.URL())})

	results, norms := map[string]Result{}, map[string]string{}
	for _, agent := range []string{"research", "research-agui"} {
		run := "run-golden-" + agent
		rec := e.record(t, run)
		res := e.svc.Delegate(tctx(t), Request{RunID: run, ParentToolCallID: "toolu-1", Agent: agent, Objective: "Find the streaming API."})
		if res.Status != StatusCompleted || res.Error != nil {
			t.Fatalf("%s: result %+v err %+v", agent, res, res.Error)
		}
		evs := rec.waitTerminals(t, 1)
		checkLifecycle(t, evs)
		for _, ev := range evs {
			if ev.Kind == DelegationStarted && agent == "research" {
				continue // A2A: started precedes the remote task
			}
			if ev.RemoteTaskID != res.RemoteTaskID || ev.RemoteContextID != res.RemoteContextID || ev.ParentToolCallID != "toolu-1" {
				t.Errorf("%s: event ids %+v, result %s/%s", agent, ev, res.RemoteTaskID, res.RemoteContextID)
			}
		}
		norms[agent] = normalize(evs)
		results[agent] = res
		noSecret(t, agent+" events", evs)
	}
	if norms["research"] != norms["research-agui"] {
		t.Errorf("A2A and AG-UI families differ:\n--- a2a\n%s--- agui\n%s", norms["research"], norms["research-agui"])
	}
	checkGolden(t, "subagent_family.golden", norms["research-agui"])
	a, g := results["research"], results["research-agui"]
	if a.Summary != text || g.Summary != a.Summary || len(g.Messages) != 1 || g.Messages[0].Text != text {
		t.Errorf("summaries %q / %q, messages %+v", a.Summary, g.Summary, g.Messages)
	}
	if len(g.Artifacts) != 1 || g.Artifacts[0].Name != a.Artifacts[0].Name || g.Artifacts[0].MimeType != a.Artifacts[0].MimeType || g.Artifacts[0].URI == "" {
		t.Errorf("artifacts %+v / %+v", a.Artifacts, g.Artifacts)
	}
	if g.RemoteProtocol != ProtocolAGUI || g.RawTask == nil || g.RawTask.Provider != ProtocolAGUI || g.RawTask.TaskID != g.RemoteTaskID ||
		a.RawTask == nil || a.RawTask.Provider != ProtocolA2A {
		t.Errorf("protocol identifiers: %+v %+v / %+v %+v", g, g.RawTask, a, a.RawTask)
	}
	for _, h := range bridge.authHeaders() {
		if h != "Bearer "+secretToken {
			t.Errorf("the AG-UI remote got Authorization %q", h)
		}
	}
	// The remote run id is the one the remote ran (and reported in RUN_STARTED).
	if res := bridge.waitRun(t, g.RemoteTaskID); res.Status != agentadaptor.StatusCompleted {
		t.Errorf("remote run %s", res.Status)
	}
	recs := e.svc.Audit().ListRun("run-golden-research-agui")
	if len(recs) != 1 || recs[0].Protocol != ProtocolAGUI || recs[0].RemoteTaskID != g.RemoteTaskID || recs[0].RemoteContextID != g.RemoteContextID ||
		recs[0].Status != StatusCompleted || recs[0].Mode != "streaming" || len(recs[0].Events) == 0 {
		t.Errorf("audit %+v", recs)
	}
}

func mapAll(t *testing.T, m *aguiMapper, lines ...string) []DelegationEvent {
	t.Helper()
	var out []DelegationEvent
	for _, l := range lines {
		ev, err := aguiclient.DecodeEvent([]byte(l))
		if err != nil {
			t.Fatalf("decode %s: %v", l, err)
		}
		out = append(out, m.Map(ev)...)
	}
	return out
}

func kindStatus(evs []DelegationEvent) string {
	var parts []string
	for _, ev := range evs {
		s := string(ev.Kind)
		if ev.Kind == DelegationStatus || ev.Kind == DelegationInputRequired {
			s += "(" + ev.Status + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// TestAGUIMappingTable is the SPEC §9 "Remote AG-UI to DelegationEvent" table.
func TestAGUIMappingTable(t *testing.T) {
	const (
		runStarted  = `{"type":"RUN_STARTED","threadId":"th-1","runId":"run-r1"}`
		runFinished = `{"type":"RUN_FINISHED","threadId":"th-1","runId":"run-r1"}`
	)
	cases := []struct {
		name  string
		allow bool
		in    []string
		want  string
		check func(t *testing.T, m *aguiMapper, evs []DelegationEvent)
	}{
		{name: "RUN_STARTED is subagent.started with the remote run id", in: []string{runStarted},
			want: "subagent.started",
			check: func(t *testing.T, m *aguiMapper, evs []DelegationEvent) {
				if m.m.taskID != "run-r1" || m.m.contextID != "th-1" || evs[0].Raw["remote_run_started"] != true {
					t.Errorf("ids %q %q raw %v", m.m.taskID, m.m.contextID, evs[0].Raw)
				}
			}},
		{name: "started is synthesized when another event comes first",
			in:   []string{`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"hi"}`, runStarted},
			want: "subagent.started subagent.text.start subagent.text.delta subagent.status(working)",
			check: func(t *testing.T, m *aguiMapper, evs []DelegationEvent) {
				if evs[0].Raw["remote_run_started"] != false {
					t.Errorf("raw %v", evs[0].Raw)
				}
			}},
		{name: "TEXT_MESSAGE_* keep the message lifecycle and ids", in: []string{runStarted,
			`{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Hel"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"lo"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"late"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`},
			want: "subagent.started subagent.text.start subagent.text.delta subagent.text.delta subagent.text.end",
			check: func(t *testing.T, m *aguiMapper, evs []DelegationEvent) {
				for _, ev := range evs[1:] {
					if ev.RemoteMessageID != "m1" {
						t.Errorf("message id %q", ev.RemoteMessageID)
					}
				}
				if evs[4].Text != "Hello" {
					t.Errorf("end text %q", evs[4].Text)
				}
			}},
		{name: "TEXT_MESSAGE_CHUNK opens and closes messages", in: []string{runStarted,
			`{"type":"TEXT_MESSAGE_CHUNK","messageId":"c1","delta":"a"}`, `{"type":"TEXT_MESSAGE_CHUNK","delta":"b"}`,
			`{"type":"TEXT_MESSAGE_CHUNK","messageId":"c2","delta":"c"}`, `{"type":"STEP_STARTED","stepName":"plan"}`},
			want: "subagent.started subagent.text.start subagent.text.delta subagent.text.delta subagent.text.end subagent.text.start subagent.text.delta subagent.text.end subagent.status(step)",
			check: func(t *testing.T, m *aguiMapper, evs []DelegationEvent) {
				if evs[4].Text != "ab" || evs[4].RemoteMessageID != "c1" || evs[7].RemoteMessageID != "c2" {
					t.Errorf("chunks %+v %+v", evs[4], evs[7])
				}
			}},
		{name: "TOOL_CALL_* are status, never parent tool calls", in: []string{runStarted,
			`{"type":"TOOL_CALL_START","toolCallId":"tc1","toolCallName":"search"}`, `{"type":"TOOL_CALL_ARGS","toolCallId":"tc1","delta":"{\"q\":"}`,
			`{"type":"TOOL_CALL_ARGS","toolCallId":"tc1","delta":"\"go\"}"}`, `{"type":"TOOL_CALL_END","toolCallId":"tc1"}`,
			`{"type":"TOOL_CALL_RESULT","messageId":"m9","toolCallId":"tc1","content":"3 results"}`,
			`{"type":"TOOL_CALL_CHUNK","toolCallId":"tc2","toolCallName":"fetch","delta":"{}"}`},
			want: "subagent.started subagent.status(tool_call) subagent.status(tool_call) subagent.status(tool_result) subagent.status(tool_call)",
			check: func(t *testing.T, m *aguiMapper, evs []DelegationEvent) {
				if evs[1].Text != "Calling tool search" {
					t.Errorf("text %q", evs[1].Text)
				}
				end := evs[2].Raw["nested_tool_call"].(map[string]any)
				res := evs[3].Raw["nested_tool_call"].(map[string]any)
				if end["args"] != `{"q":"go"}` || end["phase"] != "end" || res["content"] != "3 results" || res["name"] != "search" {
					t.Errorf("nested %v %v", end, res)
				}
				for _, ev := range evs {
					if ev.Delta != "" || ev.Kind == DelegationTextStart || ev.Kind == DelegationTextDelta {
						t.Errorf("a remote tool call leaked into text: %+v", ev)
					}
				}
				if len(m.m.textOrder) != 0 || m.accumulated() != "" {
					t.Errorf("tool traffic became assistant text: %q", m.accumulated())
				}
			}},
		{name: "CUSTOM agent.artifact is subagent.artifact", in: []string{runStarted,
			`{"type":"CUSTOM","name":"agent.artifact","value":{"name":"notes.md","mime_type":"text/markdown","text":"# N"}}`,
			`{"type":"CUSTOM","name":"artifact","value":{"id":"u1","name":"link","uri":"https://example.com/x"}}`},
			want: "subagent.started subagent.artifact subagent.artifact",
			check: func(t *testing.T, m *aguiMapper, evs []DelegationEvent) {
				a, b := evs[1].Artifact, evs[2].Artifact
				if a.Name != "notes.md" || a.MimeType != "text/markdown" || a.SizeBytes != 3 || b.MimeType != "text/uri-list" || evs[2].RemoteArtifactID != "u1" {
					t.Errorf("artifacts %+v %+v", a, b)
				}
			}},
		{name: "other CUSTOM is status with the raw payload", in: []string{runStarted,
			`{"type":"CUSTOM","name":"remote.note","value":{"n":1}}`, `{"type":"CUSTOM","name":"agentadaptor.usage","value":{"inputTokens":1}}`, runFinished},
			want: "subagent.started subagent.status(custom) subagent.finished",
			check: func(t *testing.T, m *aguiMapper, evs []DelegationEvent) {
				c := evs[1].Raw["custom"].(map[string]any)
				if c["name"] != "remote.note" || c["value"].(map[string]any)["n"] != float64(1) {
					t.Errorf("custom %v", c)
				}
				if u := evs[2].Raw["usage"].(map[string]any); u["inputTokens"] != float64(1) {
					t.Errorf("usage %v", evs[2].Raw)
				}
			}},
		{name: "nested SUBAGENT_* and subagent.* stay second-level metadata", in: []string{runStarted,
			`{"type":"SUBAGENT_STARTED","subagentRunId":"del-n1","name":"critic","parentToolCallId":"tc7"}`,
			`{"type":"CUSTOM","name":"subagent.text.delta","value":{"delegationId":"del-n1","delta":"nested words"}}`,
			`{"type":"CUSTOM","name":"subagent.text.end","value":{"delegationId":"del-n1","agentName":"Critic","text":"nested words"}}`,
			`{"type":"SUBAGENT_ERROR","subagentRunId":"del-n1","message":"boom","code":"x"}`,
			`{"type":"THINKING_START"}`, `{"type":"STATE_SNAPSHOT","snapshot":{"a":1}}`, runFinished},
			want: "subagent.started subagent.status(nested_subagent) subagent.status(nested_subagent) subagent.status(nested_subagent) subagent.finished",
			check: func(t *testing.T, m *aguiMapper, evs []DelegationEvent) {
				n := evs[1].Raw["nested_subagent"].(map[string]any)
				if n["subagentRunId"] != "del-n1" || n["name"] != "critic" || n["type"] != "started" || n["event"] != "SUBAGENT_STARTED" {
					t.Errorf("nested %v", n)
				}
				if n := evs[2].Raw["nested_subagent"].(map[string]any); n["subagentRunId"] != "del-n1" || n["text"] != "nested words" || n["type"] != "text.end" {
					t.Errorf("nested custom %v", n)
				}
				if n := evs[3].Raw["nested_subagent"].(map[string]any); n["message"] != "boom" || n["type"] != "error" {
					t.Errorf("nested error %v", n)
				}
				if m.accumulated() != "" || evs[4].Text != "" {
					t.Errorf("nested text flattened into the subagent's: %q / %q", m.accumulated(), evs[4].Text)
				}
			}},
		{name: "RUN_FINISHED summary is the accumulated assistant text", in: []string{runStarted,
			`{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","delta":"First."}`, `{"type":"TEXT_MESSAGE_CHUNK","messageId":"m2","delta":"Second."}`, runFinished,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m3","delta":"after"}`, `{"type":"RUN_ERROR","message":"x"}`},
			want: "subagent.started subagent.text.start subagent.text.delta subagent.text.end subagent.text.start subagent.text.delta subagent.text.end subagent.finished",
			check: func(t *testing.T, m *aguiMapper, evs []DelegationEvent) {
				if s := m.m.summary(); s != "First.\n\nSecond." || evs[7].Text != s || evs[7].Status != "completed" {
					t.Errorf("summary %q, finished %+v", s, evs[7])
				}
			}},
		{name: "RUN_FINISHED.result is the summary", in: []string{runStarted, `{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","delta":"chatter"}`,
			`{"type":"RUN_FINISHED","threadId":"th-1","runId":"run-r1","result":{"summary":"The answer.","status":"completed"}}`},
			want: "subagent.started subagent.text.start subagent.text.delta subagent.text.end subagent.finished",
			check: func(t *testing.T, m *aguiMapper, evs []DelegationEvent) {
				if m.m.summary() != "The answer." {
					t.Errorf("summary %q", m.m.summary())
				}
			}},
		{name: "RUN_ERROR is subagent.failed remote_failed", in: []string{runStarted, `{"type":"RUN_ERROR","message":"quota exceeded","code":"E42"}`},
			want: "subagent.started subagent.failed",
			check: func(t *testing.T, m *aguiMapper, evs []DelegationEvent) {
				e := evs[1].Error
				if e == nil || e.Code != CodeRemoteFailed || !strings.Contains(e.Message, "quota exceeded") || !strings.Contains(e.Message, "E42") || evs[1].Raw["remote_code"] != "E42" {
					t.Errorf("failed %+v %+v", evs[1], e)
				}
			}},
		{name: "interrupt outcome is input_required when allowed", allow: true, in: []string{runStarted,
			`{"type":"TEXT_MESSAGE_START","messageId":"m1"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Need input"}`,
			`{"type":"RUN_FINISHED","threadId":"th-1","runId":"run-r1","outcome":{"type":"interrupt","interrupts":[{"id":"i1","reason":"confirm","message":"Which year?"}]}}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"ignored while paused"}`},
			want: "subagent.started subagent.text.start subagent.text.delta subagent.text.end subagent.input_required(input-required)",
			check: func(t *testing.T, m *aguiMapper, evs []DelegationEvent) {
				if evs[4].Text != "Which year?" || !m.paused || m.m.terminal != "" {
					t.Errorf("input required %+v", evs[4])
				}
			}},
		{name: "agent.input_required then RUN_FINISHED is a status when input is not allowed", in: []string{runStarted,
			`{"type":"CUSTOM","name":"agent.input_required","value":{"text":"Which year?"}}`, runFinished},
			want: "subagent.started subagent.status(input-required)",
			check: func(t *testing.T, m *aguiMapper, evs []DelegationEvent) {
				if evs[1].Text != "Which year?" || !m.paused {
					t.Errorf("status %+v", evs[1])
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newAGUIMapper(newMapper(mapperConfig{streamText: true, allowInput: tc.allow, runID: "run-1", delegationID: "del-1"}))
			evs := mapAll(t, m, tc.in...)
			if got := kindStatus(evs); got != tc.want {
				t.Fatalf("kinds\n got  %s\n want %s", got, tc.want)
			}
			for _, ev := range evs {
				if !ev.Kind.Known() {
					t.Errorf("unknown kind %q", ev.Kind)
				}
			}
			if tc.check != nil {
				tc.check(t, m, evs)
			}
		})
	}
}

// TestAGUIFailuresEndInOneTypedTerminal covers malformed and oversized
// frames, a stream cut before the terminal, a remote that never finishes,
// a RUN_ERROR and refused requests.
func TestAGUIFailuresEndInOneTypedTerminal(t *testing.T) {
	checkLeaks(t)
	cases := []struct {
		name    string
		script  func(w *sseW)
		timeout time.Duration
		code    FailureCode
		gone    bool
	}{
		{name: "malformed frame", code: CodeRemoteFailed, script: func(w *sseW) {
			w.started()
			w.raw("data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\n\n")
		}},
		{name: "frame without type", code: CodeRemoteFailed, script: func(w *sseW) { w.ev(`{"delta":"x"}`) }},
		{name: "oversized frame", code: CodeRemoteFailed, script: func(w *sseW) {
			w.started()
			w.raw("data: {\"type\":\"CUSTOM\",\"name\":\"x\",\"value\":\"" + strings.Repeat("a", 2<<20) + "\"}\n\n")
		}},
		{name: "stream ends without terminal", code: CodeStreamInterrupted, script: func(w *sseW) {
			w.started()
			w.text("m1", "partial")
		}},
		{name: "remote never finishes", code: CodeRemoteTimeout, timeout: 300 * time.Millisecond, gone: true, script: func(w *sseW) {
			w.started()
			w.text("m1", "thinking")
			w.hold()
		}},
		{name: "remote never answers", code: CodeRemoteTimeout, timeout: 300 * time.Millisecond, gone: true, script: func(w *sseW) { w.hold() }},
		{name: "RUN_ERROR", code: CodeRemoteFailed, script: func(w *sseW) {
			w.started()
			w.ev(`{"type":"RUN_ERROR","message":"remote exploded","code":"boom"}`)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rm := newSSERemote(t, tc.script)
			e := newEnv(t, []RemoteAgentSpec{aguiSpec("remote", rm.URL(), func(s *RemoteAgentSpec) {
				if tc.timeout > 0 {
					s.Policy.MaxTimeout = tc.timeout
				}
			})})
			rec := e.record(t, "run-f")
			res := e.svc.Delegate(tctx(t), Request{RunID: "run-f", Agent: "remote", Objective: "x"})
			if res.Status != StatusFailed || res.Error == nil || res.Error.Code != tc.code {
				t.Fatalf("result %+v err %+v", res, res.Error)
			}
			evs := rec.waitTerminals(t, 1)
			checkLifecycle(t, evs)
			if f := ofKind(evs, DelegationFailed); len(f) != 1 || f[0].Error.Code != tc.code {
				t.Errorf("failed events %+v", f)
			}
			if tc.gone {
				rm.waitGone(t)
			}
			if recs := e.svc.Audit().ListRun("run-f"); len(recs) != 1 || recs[0].Status != StatusFailed || recs[0].Result.Error.Code != tc.code {
				t.Errorf("audit %+v", recs)
			}
		})
	}
	t.Run("refused requests", func(t *testing.T) {
		e := newEnv(t, []RemoteAgentSpec{
			aguiSpec("nothing", "http://127.0.0.1:1/agui"),
			aguiSpec("nocred", "http://127.0.0.1:1/agui", func(s *RemoteAgentSpec) { s.AuthRef = "env:A2ADELEGATION_UNSET_VARIABLE" }),
		})
		for _, agent := range []string{"nothing", "nocred"} {
			rec := e.record(t, "run-"+agent)
			res := e.svc.Delegate(tctx(t), Request{RunID: "run-" + agent, Agent: agent, Objective: "x"})
			if res.Error == nil || res.Error.Code != CodeAgentUnavailable {
				t.Errorf("%s: %+v", agent, res)
			}
			checkLifecycle(t, rec.waitTerminals(t, 1))
		}
	})
}

// TestAGUICancellationAbortsTheRemoteRequest: AG-UI has no cancel call;
// cancelling the tool call aborts the request, which the remote sees.
func TestAGUICancellationAbortsTheRemoteRequest(t *testing.T) {
	checkLeaks(t)
	t.Run("raw remote", func(t *testing.T) {
		rm := newSSERemote(t, func(w *sseW) {
			w.started()
			w.text("m1", "working")
			w.hold()
		})
		e := newEnv(t, []RemoteAgentSpec{aguiSpec("remote", rm.URL())})
		rec := e.record(t, "run-c")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan Result, 1)
		go func() { done <- e.svc.Delegate(ctx, Request{RunID: "run-c", Agent: "remote", Objective: "x"}) }()
		rec.waitKind(t, DelegationTextEnd, "")
		cancel()
		res := <-done
		if res.Status != StatusCancelled || res.Error == nil || res.Error.Code != CodeCancelled {
			t.Fatalf("result %+v err %+v", res, res.Error)
		}
		rm.waitGone(t)
		evs := rec.waitTerminals(t, 1)
		checkLifecycle(t, evs)
		if recs := e.svc.Audit().ListRun("run-c"); len(recs) != 1 || recs[0].CancelConfirmed == nil || !*recs[0].CancelConfirmed {
			t.Errorf("audit %+v", recs)
		}
	})
	t.Run("bridge remote run is cancelled", func(t *testing.T) {
		bridge := newAGUIBridge(t, "- say: Working on it\n- sleep: 30s\n- say: never\n")
		e := newEnv(t, []RemoteAgentSpec{aguiSpec("remote", bridge.URL())})
		rec := e.record(t, "run-cb")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan Result, 1)
		go func() { done <- e.svc.Delegate(ctx, Request{RunID: "run-cb", Agent: "remote", Objective: "x"}) }()
		rec.waitKind(t, DelegationTextEnd, "")
		cancel()
		res := <-done
		if res.Status != StatusCancelled {
			t.Fatalf("result %+v", res)
		}
		if r := bridge.waitRun(t, res.RemoteTaskID); r.Status != agentadaptor.StatusCancelled {
			t.Errorf("remote run status %s, want cancelled", r.Status)
		}
	})
	t.Run("service close", func(t *testing.T) {
		rm := newSSERemote(t, func(w *sseW) {
			w.started()
			w.hold()
		})
		e := newEnv(t, []RemoteAgentSpec{aguiSpec("remote", rm.URL())})
		rec := e.record(t, "run-sc")
		done := make(chan Result, 1)
		go func() { done <- e.svc.Delegate(tctx(t), Request{RunID: "run-sc", Agent: "remote", Objective: "x"}) }()
		rec.waitKind(t, DelegationStarted, "")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := e.svc.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if res := <-done; res.Status != StatusCancelled || !strings.Contains(res.Error.Message, "shutting down") {
			t.Errorf("result %+v", res)
		}
		rm.waitGone(t)
	})
}

// TestAGUIAuthAndSecrets: the auth ref's credential goes to the remote as a
// bearer token and nowhere else, even when the remote echoes it.
func TestAGUIAuthAndSecrets(t *testing.T) {
	checkLeaks(t)
	rm := newSSERemote(t, func(w *sseW) {
		w.started()
		w.text("m1", "your token is "+secretToken)
		w.ev(`{"type":"CUSTOM","name":"echo","value":{"token":"`+secretToken+`"}}`,
			`{"type":"TOOL_CALL_START","toolCallId":"t1","toolCallName":"`+secretToken+`"}`,
			`{"type":"CUSTOM","name":"agent.artifact","value":{"name":"`+secretToken+`.txt","text":"x"}}`,
			`{"type":"RUN_ERROR","message":"bad token `+secretToken+`","code":"`+secretToken+`"}`)
	})
	e := newEnv(t, []RemoteAgentSpec{aguiSpec("remote", rm.URL(), func(s *RemoteAgentSpec) { s.Policy.AuditLevel = AuditFull })})
	rec := e.record(t, "run-s")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-s", Agent: "remote", Objective: "x"})
	if res.Error == nil || res.Error.Code != CodeRemoteFailed {
		t.Fatalf("result %+v", res)
	}
	reqs := rm.requests()
	if len(reqs) != 1 || reqs[0].Auth != "Bearer "+secretToken {
		t.Fatalf("auth header not sent: %+v", reqs)
	}
	evs := rec.waitTerminals(t, 1)
	noSecret(t, "events", evs)
	noSecret(t, "result", res)
	noSecret(t, "audit", e.svc.Audit().ListRun("run-s"))
	noSecret(t, "logs", e.logs.String())
	if !strings.Contains(fmt.Sprint(ofKind(evs, DelegationStatus)[0].Raw), redactedMark) {
		t.Errorf("echoed secret not visibly redacted: %+v", ofKind(evs, DelegationStatus)[0].Raw)
	}
}

// TestAGUIRequestAndContextPolicies: what the remote receives, and the
// thread (remote context) chosen per context policy.
func TestAGUIRequestAndContextPolicies(t *testing.T) {
	checkLeaks(t)
	rm := newSSERemote(t, func(w *sseW) {
		w.started()
		w.text("m1", "ok")
		w.finished()
	})
	e := newEnv(t, []RemoteAgentSpec{
		aguiSpec("eph", rm.URL()),
		aguiSpec("run", rm.URL(), func(s *RemoteAgentSpec) { s.Policy.ContextPolicy = ContextStickyPerRunAgent }),
		aguiSpec("thread", rm.URL(), func(s *RemoteAgentSpec) { s.Policy.ContextPolicy = ContextStickyPerParentThreadAgent }),
	})
	del := func(agent, run, session string) Result {
		t.Helper()
		res := e.svc.Delegate(tctx(t), Request{RunID: run, SessionKey: session, Agent: agent, Objective: "Summarize.",
			Input: TaskInput{Prompt: "Be brief.", Context: "We build delegation.", Artifacts: []InputArtifact{{Name: "spec.md", URI: "https://example.com/spec.md"}}}})
		if res.Status != StatusCompleted {
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
	reqs := rm.requests()
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
	checkLeaks(t)
	bridge := newAGUIBridge(t, "- say: Let me check.\n- ask: Which year?\n- say: Done for the year you gave.\n")
	e := newEnv(t, []RemoteAgentSpec{
		aguiSpec("ask", bridge.URL(), func(s *RemoteAgentSpec) { s.Policy.AllowInputRequired = true }),
		aguiSpec("strict", bridge.URL()),
	})
	rec := e.record(t, "run-i")
	done := make(chan Result, 1)
	go func() { done <- e.svc.Delegate(tctx(t), Request{RunID: "run-i", Agent: "ask", Objective: "Report."}) }()
	q := rec.waitKind(t, DelegationInputRequired, "")
	if q.Text != "Which year?" {
		t.Errorf("question %+v", q)
	}
	first := q.RemoteTaskID
	if err := e.svc.AnswerInput(tctx(t), "run-i", q.DelegationID, "2024"); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Status != StatusCompleted || res.Summary != "Let me check.\n\nWhich year?\n\nDone for the year you gave." || res.RemoteTaskID == first {
		t.Fatalf("result %+v %+v", res, res.Error)
	}
	evs := rec.waitTerminals(t, 1)
	checkLifecycle(t, evs)
	if got := kindStatus(ofKind(evs, DelegationStatus)); !strings.Contains(got, "input_provided") {
		t.Errorf("statuses %s", got)
	}
	if r := bridge.waitRun(t, res.RemoteTaskID); r.Status != agentadaptor.StatusCompleted {
		t.Errorf("resumed run %s", r.Status)
	}

	res = e.svc.Delegate(tctx(t), Request{RunID: "run-i2", Agent: "strict", Objective: "Report."})
	if res.Error == nil || res.Error.Code != CodeInputRequiredUnsupported || !strings.Contains(res.Error.Message, "Which year?") {
		t.Errorf("strict result %+v %+v", res, res.Error)
	}
}

// TestAGUIConcurrencyLimit: the policy's per-run limit applies to AG-UI agents.
func TestAGUIConcurrencyLimit(t *testing.T) {
	checkLeaks(t)
	rm := newSSERemote(t, func(w *sseW) {
		w.started()
		w.hold()
	})
	e := newEnv(t, []RemoteAgentSpec{aguiSpec("remote", rm.URL(), func(s *RemoteAgentSpec) { s.Policy.MaxConcurrentPerRun = 1 })})
	rec := e.record(t, "run-l")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() { done <- e.svc.Delegate(ctx, Request{RunID: "run-l", Agent: "remote", Objective: "x"}) }()
	rec.waitKind(t, DelegationStarted, "")
	if res := e.svc.Delegate(tctx(t), Request{RunID: "run-l", Agent: "remote", Objective: "y"}); res.Error == nil || res.Error.Code != CodeConcurrencyLimit {
		t.Errorf("second delegation %+v", res)
	}
	cancel()
	if res := <-done; res.Status != StatusCancelled {
		t.Errorf("first delegation %+v", res)
	}
	rm.waitGone(t)
}
