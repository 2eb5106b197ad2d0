package acp_test

import (
	"path/filepath"
	"strings"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/fakeacp"
	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/pkg/adapters/acp"
	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
)

// The agent writes many text chunks and asks for a permission at once:
// every chunk is in the stream before the tool call the request shows,
// and the text ends before it (docs/design.md#acp-permissions).
func TestTextBeforePermissionStaysFirst(t *testing.T) {
	a := newAdapter(t, acp.Config{})
	const n = 200
	text := strings.Repeat("a", n)
	ps, res := adaptertest.RunToEnd(ctxT(t), t, newSDK(t, a), "p", script(fakeacp.Script{Turns: []fakeacp.Turn{{Steps: []fakeacp.Step{
		{Text: text, Chunks: n},
		{Permission: &fakeacp.Tool{ID: "perm-1", Title: "Shell", Kind: "execute"}},
	}}}}))
	if res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("status %s %v", res.Status, res.Failure)
	}
	deltas, toolAt, endAt := 0, -1, -1
	for i, p := range ps {
		switch {
		case p.Kind == agentadaptor.KindTextDelta && toolAt < 0:
			deltas++
		case p.Kind == agentadaptor.KindTextEnd && endAt < 0:
			endAt = i
		case p.Kind == agentadaptor.KindToolCallStart && p.ToolCallID == "perm-1":
			toolAt = i
		}
	}
	if deltas != n || endAt < 0 || endAt > toolAt {
		t.Errorf("%d of %d text deltas before the tool call (at %d), text end at %d", deltas, n, toolAt, endAt)
	}
}

// An agent that floods session updates faster than they are mapped: the
// run completes with every chunk (the ACP SDK's queue of 1024
// notifications never overflows: the reader holds the agent back).
func TestFloodOfUpdatesCompletes(t *testing.T) {
	a := newAdapter(t, acp.Config{})
	text := strings.Repeat("x", 3000)
	_, res := adaptertest.RunToEnd(ctxT(t), t, newSDK(t, a), "flood", script(fakeacp.Script{Turns: []fakeacp.Turn{{Steps: []fakeacp.Step{{Text: text, Chunks: 3000}}}}}))
	if res.Status != agentadaptor.StatusCompleted || res.Output != text {
		t.Fatalf("status %s %v, output of %d bytes", res.Status, res.Failure, len(res.Output))
	}
}

// codex-acp's form of an MCP tool call (title "Tool: <server>/<tool>",
// rawInput {server, tool, arguments}) is named mcp__<server>__<tool> with
// the tool's own arguments for a server of the run; for any other server
// the call keeps its title and raw input.
func TestCodexStyleToolCall(t *testing.T) {
	svc := fakemodel.NewMCPService("e2e-tools")
	t.Cleanup(svc.Close)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	a := newAdapter(t, acp.Config{})
	ps, res := adaptertest.RunToEnd(ctxT(t), t, newSDK(t, a), "use the tool", agentadaptor.WithRuntimeServices(svc),
		script(fakeacp.Script{Record: rec, Turns: []fakeacp.Turn{{Steps: []fakeacp.Step{
			{Tool: &fakeacp.Tool{Server: "e2e-tools", Name: "echo", Args: map[string]any{"text": "ping"}, ID: "call_1", CodexStyle: true}},
			{Tool: &fakeacp.Tool{Server: "elsewhere", Name: "echo", Args: map[string]any{"text": "pong"}, ID: "call_2", CodexStyle: true}},
			{Text: "done"},
		}}}}))
	if res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("status %s %v", res.Status, res.Failure)
	}
	got := map[string]string{}
	for _, p := range ps {
		if p.Kind == agentadaptor.KindToolCallEnd {
			got[p.ToolCallID] = p.ToolName + " " + p.ToolArgs
		}
	}
	want := map[string]string{
		"call_1": `mcp__e2e-tools__echo {"text":"ping"}`,
		"call_2": `Tool: elsewhere/echo {"arguments":{"text":"pong"},"server":"elsewhere","tool":"echo"}`,
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: got %q, want %q", id, got[id], w)
		}
	}
	if len(svc.Calls()) != 1 {
		t.Errorf("calls %+v", svc.Calls())
	}
}

// An agent that goes on replaying a loaded session's history after it
// answered session/load (Gemini CLI 0.61.0 does): the prompt waits until
// the replay is quiet, and nothing of it reaches the run's stream or
// output (docs/design.md#conversations).
func TestSessionLoadLateReplay(t *testing.T) {
	s := newSDK(t, newAdapter(t, acp.Config{}))
	ctx := ctxT(t)
	opt := script(fakeacp.Script{LoadSession: true, LateReplay: true, StateDir: t.TempDir(),
		Turns: []fakeacp.Turn{say("first answer"), say("earlier: {{history}}")}})
	_, r1 := adaptertest.RunToEnd(ctx, t, s, "first question", opt, agentadaptor.WithSessionKey("thread-1"))
	ps, r2 := adaptertest.RunToEnd(ctx, t, s, "second question", opt, agentadaptor.WithSessionKey("thread-1"))
	if r1.Status != agentadaptor.StatusCompleted || r2.Status != agentadaptor.StatusCompleted {
		t.Fatalf("runs %s %s", r1.Status, r2.Status)
	}
	if r2.SessionID != r1.SessionID || r2.Output != "earlier: first question" {
		t.Errorf("second run: session %q (first %q), output %q", r2.SessionID, r1.SessionID, r2.Output)
	}
	for _, p := range ps {
		if strings.Contains(p.Delta+p.Text, "first answer") {
			t.Errorf("the replayed history reached the run's stream: %+v", p)
		}
	}
}
