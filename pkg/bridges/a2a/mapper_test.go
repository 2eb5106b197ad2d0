package a2a

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	agentadaptor "github.com/seed0634/agentadaptor"
)

// chunkView is what a test checks of one assistant-output chunk.
type chunkView struct {
	text   string
	append bool
	last   bool
}

func TestMapperTextChunks(t *testing.T) {
	start := func(id string) agentadaptor.StreamPayload {
		return agentadaptor.StreamPayload{Kind: agentadaptor.KindTextStart, MessageID: id}
	}
	delta := func(id, d string) agentadaptor.StreamPayload {
		return agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: id, Delta: d}
	}
	end := func(id, text string) agentadaptor.StreamPayload {
		return agentadaptor.StreamPayload{Kind: agentadaptor.KindTextEnd, MessageID: id, Text: text}
	}
	tests := []struct {
		name     string
		payloads []agentadaptor.StreamPayload
		want     [][]chunkView // per artifact, in first-seen order
	}{
		{
			name:     "three deltas",
			payloads: []agentadaptor.StreamPayload{start("m"), delta("m", "a "), delta("m", "b "), delta("m", "c"), end("m", "a b c")},
			want:     [][]chunkView{{{"a ", false, false}, {"b ", true, false}, {"c", true, true}}},
		},
		{
			name:     "one delta is one chunk",
			payloads: []agentadaptor.StreamPayload{start("m"), delta("m", "hi"), end("m", "hi")},
			want:     [][]chunkView{{{"hi", false, true}}},
		},
		{
			name:     "whole message without deltas",
			payloads: []agentadaptor.StreamPayload{start("m"), end("m", "all at once")},
			want:     [][]chunkView{{{"all at once", false, true}}},
		},
		{
			name:     "dropped deltas are recovered from the whole text",
			payloads: []agentadaptor.StreamPayload{start("m"), delta("m", "a "), delta("m", "b "), end("m", "a b c d")},
			want:     [][]chunkView{{{"a ", false, false}, {"b c d", true, true}}},
		},
		{
			name:     "empty message publishes nothing",
			payloads: []agentadaptor.StreamPayload{start("m"), end("m", "")},
			want:     nil,
		},
		{
			name:     "two messages are two artifacts",
			payloads: []agentadaptor.StreamPayload{start("1"), delta("1", "x"), end("1", "x"), start("2"), delta("2", "y"), delta("2", "z"), end("2", "yz")},
			want:     [][]chunkView{{{"x", false, true}}, {{"y", false, false}, {"z", true, true}}},
		},
		{
			name:     "unterminated message is closed at the end",
			payloads: []agentadaptor.StreamPayload{start("m"), delta("m", "cut "), delta("m", "off")},
			want:     [][]chunkView{{{"cut ", false, false}, {"off", true, true}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMapper(a2a.TaskInfo{TaskID: "t", ContextID: "c"}, Exposure{})
			var evs []a2a.Event
			for _, p := range tt.payloads {
				evs = append(evs, m.payload(p)...)
			}
			evs = append(evs, m.finish(agentadaptor.StreamPayload{Kind: agentadaptor.KindRunFinished}, nil)...)
			var got [][]chunkView
			idx := map[a2a.ArtifactID]int{}
			for _, ev := range evs {
				a, ok := ev.(*a2a.TaskArtifactUpdateEvent)
				if !ok || a.Artifact.Name != ArtifactAssistantOutput {
					continue
				}
				i, seen := idx[a.Artifact.ID]
				if !seen {
					i = len(got)
					idx[a.Artifact.ID] = i
					got = append(got, nil)
				}
				got[i] = append(got[i], chunkView{a.Artifact.Parts[0].Text(), a.Append, a.LastChunk})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d artifacts %v, want %d %v", len(got), got, len(tt.want), tt.want)
			}
			for i := range got {
				if len(got[i]) != len(tt.want[i]) {
					t.Fatalf("artifact %d: %v, want %v", i, got[i], tt.want[i])
				}
				for j := range got[i] {
					if got[i][j] != tt.want[i][j] {
						t.Errorf("artifact %d chunk %d: %+v, want %+v", i, j, got[i][j], tt.want[i][j])
					}
				}
			}
		})
	}
}

func TestMapperFinish(t *testing.T) {
	tests := []struct {
		name       string
		payloads   []agentadaptor.StreamPayload
		terminal   agentadaptor.StreamPayload
		res        *agentadaptor.RunResult
		wantState  a2a.TaskState
		wantStatus string
		wantMsg    string
		wantErr    string
	}{
		{
			name:      "completed",
			terminal:  agentadaptor.StreamPayload{Kind: agentadaptor.KindRunFinished, SessionID: "s1"},
			res:       &agentadaptor.RunResult{Output: "out", SessionID: "s1", Usage: &agentadaptor.Usage{InputTokens: 1, OutputTokens: 2}},
			wantState: a2a.TaskStateCompleted, wantStatus: ResultCompleted,
		},
		{
			name:      "input required",
			payloads:  []agentadaptor.StreamPayload{{Name: PayloadInputRequired, Raw: map[string]any{"text": "Which one?"}}},
			terminal:  agentadaptor.StreamPayload{Kind: agentadaptor.KindRunFinished},
			res:       &agentadaptor.RunResult{Output: "Which one?"},
			wantState: a2a.TaskStateInputRequired, wantStatus: ResultInputRequired, wantMsg: "Which one?",
		},
		{
			name:      "failed",
			terminal:  agentadaptor.StreamPayload{Kind: agentadaptor.KindRunFailed, Failure: &agentadaptor.Failure{Code: agentadaptor.FailureAgent, Message: "boom"}},
			wantState: a2a.TaskStateFailed, wantStatus: ResultFailed, wantMsg: "agent_error: boom", wantErr: "boom",
		},
		{
			name:      "cancelled",
			terminal:  agentadaptor.StreamPayload{Kind: agentadaptor.KindRunCancelled, Failure: &agentadaptor.Failure{Code: agentadaptor.FailureCancelled, Message: "run cancelled"}},
			wantState: a2a.TaskStateCanceled, wantStatus: ResultCancelled, wantMsg: "the run was cancelled", wantErr: "run cancelled",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMapper(a2a.TaskInfo{TaskID: "t", ContextID: "c"}, Exposure{})
			for _, p := range tt.payloads {
				m.payload(p)
			}
			evs := m.finish(tt.terminal, tt.res)
			if len(evs) != 2 {
				t.Fatalf("%d events, want result artifact + status", len(evs))
			}
			art := evs[0].(*a2a.TaskArtifactUpdateEvent)
			if art.Artifact.ID != ArtifactAgentAdaptorResult || art.Artifact.Name != ArtifactAgentAdaptorResult || art.Append || !art.LastChunk {
				t.Errorf("result artifact %+v", art)
			}
			data := art.Artifact.Parts[0].Data().(map[string]any)
			if data["status"] != tt.wantStatus {
				t.Errorf("status %v, want %s", data["status"], tt.wantStatus)
			}
			if _, ok := data["artifacts"].([]any); !ok {
				t.Errorf("artifacts %v, want a list", data["artifacts"])
			}
			if e, _ := data["error"].(map[string]any); (e != nil) != (tt.wantErr != "") || (e != nil && e["message"] != tt.wantErr) {
				t.Errorf("error %v, want %q", data["error"], tt.wantErr)
			}
			st := evs[1].(*a2a.TaskStatusUpdateEvent)
			if st.Status.State != tt.wantState {
				t.Errorf("state %s, want %s", st.Status.State, tt.wantState)
			}
			msg := ""
			if st.Status.Message != nil {
				msg = st.Status.Message.Parts[0].Text()
			}
			if msg != tt.wantMsg {
				t.Errorf("status message %q, want %q", msg, tt.wantMsg)
			}
		})
	}
}

func TestMapperExposure(t *testing.T) {
	payloads := []agentadaptor.StreamPayload{
		{Kind: agentadaptor.KindReasoningStart, MessageID: "r"},
		{Kind: agentadaptor.KindReasoningDelta, MessageID: "r", Delta: "think"},
		{Kind: agentadaptor.KindReasoningEnd, MessageID: "r"},
		{Kind: agentadaptor.KindToolCallEnd, ToolCallID: "c1", ToolName: "lookup", ToolArgs: `{"q":1}`},
		{Kind: agentadaptor.KindToolCallResult, ToolCallID: "c1", ToolResult: "ok"},
		{Kind: agentadaptor.KindDiagnostic, Diagnostic: &agentadaptor.Diagnostic{Code: agentadaptor.DiagMalformedLine, Message: "bad"}},
		{Kind: agentadaptor.KindStreamDropped, Dropped: 3},
		{Name: "claude.system", Raw: map[string]any{"x": 1}},
	}
	tests := []struct {
		name     string
		exposure Exposure
		want     []string
	}{
		{"nothing by default", Exposure{}, nil},
		{"reasoning", Exposure{Reasoning: true}, []string{"reasoning"}},
		{"tool calls", Exposure{ToolCalls: true}, []string{"tool_call", "tool_result"}},
		{"diagnostics", Exposure{Diagnostics: true}, []string{"diagnostic", "diagnostic"}},
		{"all", Exposure{Reasoning: true, ToolCalls: true, Diagnostics: true}, []string{"reasoning", "tool_call", "tool_result", "diagnostic", "diagnostic"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMapper(a2a.TaskInfo{TaskID: "t", ContextID: "c"}, tt.exposure)
			var kinds []string
			for _, p := range payloads {
				for _, ev := range m.payload(p) {
					st, ok := ev.(*a2a.TaskStatusUpdateEvent)
					if !ok {
						t.Fatalf("unexpected %T", ev)
					}
					if st.Status.State != a2a.TaskStateWorking || st.Status.Message == nil || st.Status.Message.Role != a2a.MessageRoleAgent {
						t.Errorf("detail status %+v", st.Status)
					}
					kinds = append(kinds, st.Metadata[MetadataKind].(string))
				}
			}
			if len(kinds) != len(tt.want) {
				t.Fatalf("kinds %v, want %v", kinds, tt.want)
			}
			for i := range kinds {
				if kinds[i] != tt.want[i] {
					t.Errorf("kinds %v, want %v", kinds, tt.want)
				}
			}
		})
	}
}

func TestPromptOf(t *testing.T) {
	tests := []struct {
		name string
		msg  *a2a.Message
		want string
	}{
		{"nil", nil, ""},
		{"text parts", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("a"), a2a.NewTextPart("b")), "a\nb"},
		{"data part", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"k": "v"})), `{"k":"v"}`},
		{"empty text", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := promptOf(tt.msg); got != tt.want {
				t.Errorf("promptOf = %q, want %q", got, tt.want)
			}
		})
	}
}
