package scripted

import (
	"encoding/json"
	"strings"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// BenchmarkParseToolResult parses what a run of the benchmark's parent
// writes for one delegation: its tool_call and tool_result lines (the
// result as text and as structured content, as delegate_to_agent returns
// it).
func BenchmarkParseToolResult(b *testing.B) {
	result := map[string]any{
		"status": "completed", "agent": "bench", "delegation_id": "del-0f9c2b7a1e5d4c3b", "protocol": "a2a",
		"summary":  strings.Repeat("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx ~c0:123456789012~", 2),
		"messages": []any{map[string]any{"role": "assistant", "text": strings.Repeat("xxxxxxxxxxxxxxxx ~c1:123456789012~", 2)}},
		"artifacts": []any{map[string]any{"id": "out-1", "name": "assistant-output", "mime_type": "text/plain",
			"uri": "host://delegations/del-0f9c2b7a1e5d4c3b/artifacts/out-1"}},
		"remote_task_id": "b6f0c3a4-6a53-4d3c-9d5e-0e8f2b1c7a90", "remote_context_id": "c1d2e3f4-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
		"raw_task": map[string]any{"id": "b6f0c3a4-6a53-4d3c-9d5e-0e8f2b1c7a90", "status": map[string]any{"state": "completed"}},
	}
	text, _ := json.Marshal(result)
	call, _ := json.Marshal(line{Type: lineToolCall, ID: "call-0123abcd-0.7", Name: "delegate_to_agent", Server: "a2a-delegation",
		Args: json.RawMessage(`{"agent":"bench","objective":"chunks=2 interval_ms=20 size=48 stream=7"}`)})
	res, _ := json.Marshal(line{Type: lineToolResult, ID: "call-0123abcd-0.7", Content: string(text), Structured: json.RawMessage(text)})
	p := newParser(nil)
	emit := func(agentadaptor.StreamPayload) {}
	b.SetBytes(int64(len(call) + len(res)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.ParseLine(call, emit); err != nil {
			b.Fatal(err)
		}
		if err := p.ParseLine(res, emit); err != nil {
			b.Fatal(err)
		}
	}
}
