package sse_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"

	"github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/aguiverify"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts under testdata/golden")

const goldenDir = "testdata/golden"

// goldenCases are StreamPayload inputs whose AG-UI SSE transcripts are pinned
// byte for byte. Times are fixed and ids sequential, so output is stable.
var goldenCases = []struct {
	name     string
	payloads []agentadaptor.StreamPayload
	close    bool // the stream ends without a terminal payload
}{
	{name: "plain_text", payloads: []agentadaptor.StreamPayload{
		{Kind: agentadaptor.KindRunStarted, Adapter: "claude"},
		{Kind: agentadaptor.KindTextEnd, MessageID: "msg_01", Text: "Hello! How can I help?"},
		{Kind: agentadaptor.KindUsage, Usage: &agentadaptor.Usage{InputTokens: 12, OutputTokens: 7}},
		{Kind: agentadaptor.KindRunFinished, Text: "Hello! How can I help?"},
	}},
	{name: "streamed_text", payloads: []agentadaptor.StreamPayload{
		{Kind: agentadaptor.KindRunStarted},
		{Kind: agentadaptor.KindTextStart, MessageID: "msg_01"},
		{Kind: agentadaptor.KindTextDelta, MessageID: "msg_01", Delta: "Streaming "},
		{Kind: agentadaptor.KindTextDelta, MessageID: "msg_01", Delta: "works <fine> & \"quoted\"\nnext line"},
		{Kind: agentadaptor.KindTextEnd, MessageID: "msg_01", Text: "Streaming works <fine> & \"quoted\"\nnext line"},
		{Kind: agentadaptor.KindRunFinished},
	}},
	{name: "tool_call", payloads: []agentadaptor.StreamPayload{
		{Kind: agentadaptor.KindRunStarted},
		{Kind: agentadaptor.KindTextDelta, MessageID: "msg_01", Delta: "Let me search."},
		{Kind: agentadaptor.KindTextEnd, MessageID: "msg_01"},
		{Kind: agentadaptor.KindToolCallStart, MessageID: "msg_01", ToolCallID: "toolu_01", ToolName: "mcp__a2a-delegation__delegate_to_agent"},
		{Kind: agentadaptor.KindToolCallArgs, ToolCallID: "toolu_01", Delta: `{"agent_key":"research",`},
		{Kind: agentadaptor.KindToolCallArgs, ToolCallID: "toolu_01", Delta: `"task":"find examples"}`},
		{Kind: agentadaptor.KindToolCallEnd, ToolCallID: "toolu_01", ToolArgs: `{"agent_key":"research","task":"find examples"}`},
		{Kind: agentadaptor.KindToolCallResult, ToolCallID: "toolu_01", ToolResult: `{"status":"completed","summary":"3 examples"}`},
		{Kind: agentadaptor.KindTextEnd, MessageID: "msg_02", Text: "Found 3 examples."},
		{Kind: agentadaptor.KindRunFinished},
	}},
	{name: "adapter_failure", payloads: []agentadaptor.StreamPayload{
		{Kind: agentadaptor.KindRunStarted},
		{Kind: agentadaptor.KindTextDelta, MessageID: "msg_01", Delta: "Working on"},
		{Kind: agentadaptor.KindToolCallStart, ToolCallID: "toolu_01", ToolName: "Bash"},
		{Kind: agentadaptor.KindDiagnostic, Diagnostic: &agentadaptor.Diagnostic{Code: agentadaptor.DiagMalformedLine, Message: "invalid character 'x'", Line: 4, Bytes: 3, Excerpt: "xyz"}},
		{Kind: agentadaptor.KindRunFailed, Failure: &agentadaptor.Failure{Code: agentadaptor.FailureModel, Message: "model API returned 529 overloaded", Retryable: true}},
	}},
	{name: "start_failure", payloads: []agentadaptor.StreamPayload{
		{Kind: agentadaptor.KindRunFailed, Failure: &agentadaptor.Failure{Code: agentadaptor.FailureStart, Message: "starting /usr/bin/claude: no such file or directory"}},
	}},
	{name: "cancellation", payloads: []agentadaptor.StreamPayload{
		{Kind: agentadaptor.KindRunStarted},
		{Kind: agentadaptor.KindReasoningDelta, MessageID: "msg_01", Delta: "Considering the options"},
		{Kind: agentadaptor.KindTextDelta, MessageID: "msg_01", Delta: "Partial ans"},
		{Kind: agentadaptor.KindStreamDropped, Dropped: 17},
		{Kind: agentadaptor.KindRunCancelled, Failure: &agentadaptor.Failure{Code: agentadaptor.FailureCancelled, Message: "the run was cancelled"}},
	}},
	{name: "custom_payload", payloads: []agentadaptor.StreamPayload{
		{Kind: agentadaptor.KindRunStarted},
		{Name: "claude.system", Raw: map[string]any{"subtype": "init", "tools": []any{"Bash", "Read"}}},
		{Name: "subagent.text.delta", Raw: map[string]any{"delegation_id": "del-1", "agent_key": "research", "delta": "Searching..."}},
		{Name: "codex.empty"},
		{Kind: agentadaptor.KindRunFinished},
	}},
	{name: "reasoning", payloads: []agentadaptor.StreamPayload{
		{Kind: agentadaptor.KindRunStarted},
		{Kind: agentadaptor.KindReasoningStart, MessageID: "msg_01"},
		{Kind: agentadaptor.KindReasoningDelta, MessageID: "msg_01", Delta: "The user wants a greeting."},
		{Kind: agentadaptor.KindReasoningEnd, MessageID: "msg_01"},
		{Kind: agentadaptor.KindTextEnd, MessageID: "msg_01", Text: "Hi!"},
		{Kind: agentadaptor.KindRunFinished},
	}},
	{name: "stream_ended", close: true, payloads: []agentadaptor.StreamPayload{
		{Kind: agentadaptor.KindRunStarted},
		{Kind: agentadaptor.KindTextDelta, MessageID: "msg_01", Delta: "cut"},
	}},
}

var goldenT0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// goldenOptions is a fixed clock and sequential ids.
func goldenOptions() agui.Options {
	n := 0
	return agui.Options{
		ThreadID: "thread-golden",
		RunID:    "run-golden",
		Clock:    func() time.Time { return goldenT0.Add(time.Hour) },
		NewID:    func(prefix string) string { n++; return fmt.Sprintf("%s%04d", prefix, n) },
	}
}

// renderGolden runs payloads through the translator and the SSE encoder.
func renderGolden(t testing.TB, payloads []agentadaptor.StreamPayload, closeStream bool) []byte {
	var buf bytes.Buffer
	enc := sse.NewEncoder(&buf)
	tr := agui.NewTranslator(goldenOptions())
	for i, p := range payloads {
		p.RunID, p.Seq, p.Time = "run-sdk", uint64(i+1), goldenT0.Add(time.Duration(i)*time.Millisecond)
		for _, ev := range tr.Translate(p) {
			if err := enc.WriteEvent(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if closeStream {
		for _, ev := range tr.Close("", "") {
			if err := enc.WriteEvent(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	return buf.Bytes()
}

func goldenFiles() []string {
	out := make([]string, len(goldenCases))
	for i, c := range goldenCases {
		out[i] = filepath.Join(goldenDir, c.name+".sse")
	}
	return out
}

func TestGoldenTranscripts(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			got := renderGolden(t, tc.payloads, tc.close)
			if err := aguiverify.VerifyReader(bytes.NewReader(got)); err != nil {
				t.Fatalf("the transcript does not verify: %v\n%s", err, got)
			}
			path := filepath.Join(goldenDir, tc.name+".sse")
			if *update {
				if err := os.MkdirAll(goldenDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run `go test ./pkg/bridges/sse -run TestGoldenTranscripts -update` to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the golden file (rerun with -update if the change is intended)\n--- got\n%s\n--- want\n%s", path, got, want)
			}
			// The stored file itself verifies too, with our verifier and the
			// Go SDK's decoder and sequence validation.
			if err := aguiverify.VerifyReader(bytes.NewReader(want)); err != nil {
				t.Errorf("%s: %v", path, err)
			}
			frames, _ := aguiverify.Frames(bytes.NewReader(want))
			var evs []events.Event
			for _, fr := range frames {
				ev, err := events.EventFromJSON(fr.Data)
				if err != nil {
					t.Fatalf("%s frame %s: %v", path, fr.ID, err)
				}
				evs = append(evs, ev)
			}
			if err := events.ValidateSequence(evs); err != nil {
				t.Errorf("%s: ValidateSequence: %v", path, err)
			}
		})
	}
}
