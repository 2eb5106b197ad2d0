package aguiremote

import (
	"strings"
	"testing"

	aguiclient "github.com/seed0634/agentadaptor/pkg/clients/agui"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

func mapAll(t *testing.T, m *mapper, lines ...string) []delegation.DelegationEvent {
	t.Helper()
	var out []delegation.DelegationEvent
	for _, l := range lines {
		ev, err := aguiclient.DecodeEvent([]byte(l))
		if err != nil {
			t.Fatalf("decode %s: %v", l, err)
		}
		out = append(out, m.Map(ev)...)
	}
	return out
}

func kindStatus(evs []delegation.DelegationEvent) string {
	var parts []string
	for _, ev := range evs {
		s := string(ev.Kind)
		if ev.Kind == delegation.DelegationStatus || ev.Kind == delegation.DelegationInputRequired {
			s += "(" + ev.Status + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// TestAGUIMappingTable is the "remote AG-UI -> delegation event" table of docs/design.md#event-mapping.
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
		check func(t *testing.T, m *mapper, evs []delegation.DelegationEvent)
	}{
		{name: "RUN_STARTED is subagent.started with the remote run id", in: []string{runStarted},
			want: "subagent.started",
			check: func(t *testing.T, m *mapper, evs []delegation.DelegationEvent) {
				if m.t.TaskID() != "run-r1" || m.t.ContextID() != "th-1" || evs[0].Raw["remote_run_started"] != true {
					t.Errorf("ids %q %q raw %v", m.t.TaskID(), m.t.ContextID(), evs[0].Raw)
				}
			}},
		{name: "started is synthesized when another event comes first",
			in:   []string{`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"hi"}`, runStarted},
			want: "subagent.started subagent.text.start subagent.text.delta subagent.status(working)",
			check: func(t *testing.T, m *mapper, evs []delegation.DelegationEvent) {
				if evs[0].Raw["remote_run_started"] != false {
					t.Errorf("raw %v", evs[0].Raw)
				}
			}},
		{name: "TEXT_MESSAGE_* keep the message lifecycle and ids", in: []string{runStarted,
			`{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Hel"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"lo"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"late"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`},
			want: "subagent.started subagent.text.start subagent.text.delta subagent.text.delta subagent.text.end",
			check: func(t *testing.T, m *mapper, evs []delegation.DelegationEvent) {
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
			check: func(t *testing.T, m *mapper, evs []delegation.DelegationEvent) {
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
			check: func(t *testing.T, m *mapper, evs []delegation.DelegationEvent) {
				if evs[1].Text != "Calling tool search" {
					t.Errorf("text %q", evs[1].Text)
				}
				end := evs[2].Raw["nested_tool_call"].(map[string]any)
				res := evs[3].Raw["nested_tool_call"].(map[string]any)
				if end["args"] != `{"q":"go"}` || end["phase"] != "end" || res["content"] != "3 results" || res["name"] != "search" {
					t.Errorf("nested %v %v", end, res)
				}
				for _, ev := range evs {
					if ev.Delta != "" || ev.Kind == delegation.DelegationTextStart || ev.Kind == delegation.DelegationTextDelta {
						t.Errorf("a remote tool call leaked into text: %+v", ev)
					}
				}
				if len(m.t.Accumulated()) != 0 || m.t.Accumulated() != "" {
					t.Errorf("tool traffic became assistant text: %q", m.t.Accumulated())
				}
			}},
		{name: "CUSTOM agent.artifact is subagent.artifact", in: []string{runStarted,
			`{"type":"CUSTOM","name":"agent.artifact","value":{"name":"notes.md","mime_type":"text/markdown","text":"# N"}}`,
			`{"type":"CUSTOM","name":"artifact","value":{"id":"u1","name":"link","uri":"https://example.com/x"}}`},
			want: "subagent.started subagent.artifact subagent.artifact",
			check: func(t *testing.T, m *mapper, evs []delegation.DelegationEvent) {
				a, b := evs[1].Artifact, evs[2].Artifact
				if a.Name != "notes.md" || a.MimeType != "text/markdown" || a.SizeBytes != 3 || b.MimeType != "text/uri-list" || evs[2].RemoteArtifactID != "u1" {
					t.Errorf("artifacts %+v %+v", a, b)
				}
			}},
		{name: "other CUSTOM is status with the raw payload", in: []string{runStarted,
			`{"type":"CUSTOM","name":"remote.note","value":{"n":1}}`, `{"type":"CUSTOM","name":"agentadaptor.usage","value":{"inputTokens":1}}`, runFinished},
			want: "subagent.started subagent.status(custom) subagent.finished",
			check: func(t *testing.T, m *mapper, evs []delegation.DelegationEvent) {
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
			check: func(t *testing.T, m *mapper, evs []delegation.DelegationEvent) {
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
				if m.t.Accumulated() != "" || evs[4].Text != "" {
					t.Errorf("nested text flattened into the subagent's: %q / %q", m.t.Accumulated(), evs[4].Text)
				}
			}},
		{name: "RUN_FINISHED summary is the accumulated assistant text", in: []string{runStarted,
			`{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","delta":"First."}`, `{"type":"TEXT_MESSAGE_CHUNK","messageId":"m2","delta":"Second."}`, runFinished,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m3","delta":"after"}`, `{"type":"RUN_ERROR","message":"x"}`},
			want: "subagent.started subagent.text.start subagent.text.delta subagent.text.end subagent.text.start subagent.text.delta subagent.text.end subagent.finished",
			check: func(t *testing.T, m *mapper, evs []delegation.DelegationEvent) {
				if s := m.t.Summary(); s != "First.\n\nSecond." || evs[7].Text != s || evs[7].Status != "completed" {
					t.Errorf("summary %q, finished %+v", s, evs[7])
				}
			}},
		{name: "RUN_FINISHED.result is the summary", in: []string{runStarted, `{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","delta":"chatter"}`,
			`{"type":"RUN_FINISHED","threadId":"th-1","runId":"run-r1","result":{"summary":"The answer.","status":"completed"}}`},
			want: "subagent.started subagent.text.start subagent.text.delta subagent.text.end subagent.finished",
			check: func(t *testing.T, m *mapper, evs []delegation.DelegationEvent) {
				if m.t.Summary() != "The answer." {
					t.Errorf("summary %q", m.t.Summary())
				}
			}},
		{name: "RUN_ERROR is subagent.failed remote_failed", in: []string{runStarted, `{"type":"RUN_ERROR","message":"quota exceeded","code":"E42"}`},
			want: "subagent.started subagent.failed",
			check: func(t *testing.T, m *mapper, evs []delegation.DelegationEvent) {
				e := evs[1].Error
				if e == nil || e.Code != delegation.CodeRemoteFailed || !strings.Contains(e.Message, "quota exceeded") || !strings.Contains(e.Message, "E42") || evs[1].Raw["remote_code"] != "E42" {
					t.Errorf("failed %+v %+v", evs[1], e)
				}
			}},
		{name: "interrupt outcome is input_required when allowed", allow: true, in: []string{runStarted,
			`{"type":"TEXT_MESSAGE_START","messageId":"m1"}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Need input"}`,
			`{"type":"RUN_FINISHED","threadId":"th-1","runId":"run-r1","outcome":{"type":"interrupt","interrupts":[{"id":"i1","reason":"confirm","message":"Which year?"}]}}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"ignored while paused"}`},
			want: "subagent.started subagent.text.start subagent.text.delta subagent.text.end subagent.input_required(input-required)",
			check: func(t *testing.T, m *mapper, evs []delegation.DelegationEvent) {
				if evs[4].Text != "Which year?" || !m.paused || m.t.Terminal() != "" {
					t.Errorf("input required %+v", evs[4])
				}
			}},
		{name: "agent.input_required then RUN_FINISHED is a status when input is not allowed", in: []string{runStarted,
			`{"type":"CUSTOM","name":"agent.input_required","value":{"text":"Which year?"}}`, runFinished},
			want: "subagent.started subagent.status(input-required)",
			check: func(t *testing.T, m *mapper, evs []delegation.DelegationEvent) {
				if evs[1].Text != "Which year?" || !m.paused {
					t.Errorf("status %+v", evs[1])
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMapper(remote.NewTranscript(remote.TranscriptConfig{AllowInput: tc.allow}))
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
