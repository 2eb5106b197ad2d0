package claude_test

import (
	"net/http"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/cliharness"
	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/internal/testkit/realcli"
	"github.com/seed0634/agentadaptor/pkg/adapters/claude"
)

// e2e bundles a real-claude SDK pointed at a fake Anthropic server.
type e2e struct {
	*cliharness.Rig
	model *fakemodel.Anthropic
}

func newE2E(t *testing.T, cfg claude.Config, turns ...fakemodel.Turn) *e2e {
	t.Helper()
	bin := realcli.Require(t, realcli.Claude)
	model := fakemodel.NewAnthropic(turns...)
	t.Cleanup(model.Close)
	cfg.Binary = bin
	cfg.Isolate = true
	a, err := claude.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &e2e{model: model, Rig: cliharness.NewRig(t, a, map[string]string{
		"ANTHROPIC_BASE_URL":                       model.URL,
		"ANTHROPIC_API_KEY":                        "test-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_TELEMETRY":                        "1",
		"CLAUDE_CODE_MAX_RETRIES":                  "0",
	})}
}

// runArgv finds the claude process of a run: the run id is in its argv.
func runArgv(h *agentadaptor.RunHandle) string { return h.RunID() }

func TestE2EPlain(t *testing.T) {
	e := newE2E(t, claude.Config{}, fakemodel.Turn{Text: "Hello from the fake model.", InputTokens: 12, OutputTokens: 7, CacheReadTokens: 3})
	ps, res := e.Completed(cliharness.Context(t), t, "say hello", agentadaptor.WithStreaming())
	if res.Output != "Hello from the fake model." {
		t.Errorf("output %q", res.Output)
	}
	if len(res.SessionID) != 36 {
		t.Errorf("session id %q", res.SessionID)
	}
	if res.Usage == nil || res.Usage.InputTokens != 12 || res.Usage.OutputTokens != 7 || res.Usage.CacheReadTokens != 3 {
		t.Errorf("usage %+v", res.Usage)
	}
	deltas := 0
	for _, p := range ps {
		if p.Kind == agentadaptor.KindTextDelta {
			deltas++
		}
	}
	if deltas < 2 {
		t.Errorf("streaming gave %d text deltas, want several", deltas)
	}
}

func TestE2EMCPToolWithRunToken(t *testing.T) {
	svc := fakemodel.NewMCPService("e2e-tools")
	t.Cleanup(svc.Close)
	e := newE2E(t, claude.Config{},
		fakemodel.Turn{Text: "Let me check.", Tool: &fakemodel.ToolCall{Server: "e2e-tools", Tool: "echo", Args: map[string]any{"text": "ping"}}},
		fakemodel.Turn{Text: "The tool said {{result}}."},
	)
	ctx := cliharness.Context(t)
	run := e.RunTool(ctx, t, svc, "use the tool", "The tool said echo:ping.", runArgv, agentadaptor.WithStreaming())
	var toolCallID string
	for _, p := range run.Payloads {
		if p.Kind == agentadaptor.KindToolCallEnd {
			toolCallID = p.ToolCallID
			if p.ToolName != "mcp__e2e-tools__echo" || p.ToolArgs != `{"text":"ping"}` {
				t.Errorf("tool_call.end %+v", p)
			}
		}
		if p.Kind == agentadaptor.KindToolCallResult && p.ToolResult != "echo:ping" {
			t.Errorf("tool_call.result %+v", p)
		}
	}
	if got := run.Calls[0].Meta["claudecode/toolUseId"]; got != toolCallID || toolCallID == "" {
		t.Errorf("_meta claudecode/toolUseId = %v, stream tool call id %q", got, toolCallID)
	}
	run.CheckTokenGone(ctx, t, svc)
	// The fake model saw the tool under its Claude name.
	if !fakemodel.ContainsText(fakemodel.ModelRequests(e.model.Requests())[0], "mcp__e2e-tools__echo") {
		t.Errorf("the model request does not offer mcp__e2e-tools__echo")
	}
}

func TestE2ECancelMidStream(t *testing.T) {
	e := newE2E(t, claude.Config{}, fakemodel.Turn{Text: "one two three four five six", Chunks: 6, Delay: 2 * time.Second})
	midStream := func(h *agentadaptor.RunHandle) {
		for p := range h.StreamEvents() {
			if p.Kind == agentadaptor.KindTextDelta {
				break // the model is mid-stream
			}
			if p.Kind.Terminal() {
				t.Fatalf("run ended before streaming: %+v", p)
			}
		}
	}
	e.CancelMidStream(cliharness.Context(t), t, "talk slowly", midStream, runArgv, agentadaptor.WithStreaming())
}

func TestE2ESessionResume(t *testing.T) {
	e := newE2E(t, claude.Config{IsolateDir: t.TempDir()},
		fakemodel.Turn{Text: "The first answer."},
		fakemodel.Turn{Text: "The second answer."},
	)
	e.ResumeSession(cliharness.Context(t), t, &e.model.Server, "The first answer.")
}

func TestE2EModelError(t *testing.T) {
	e := newE2E(t, claude.Config{}, fakemodel.Turn{Status: http.StatusInternalServerError})
	res, err := e.SDK.Run(cliharness.Context(t), "hi", e.Opts...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentadaptor.StatusFailed || res.Failure == nil {
		t.Fatalf("status %s %v", res.Status, res.Failure)
	}
	if res.Failure.Code != agentadaptor.FailureModel || res.Failure.Detail["status"] != 500 {
		t.Errorf("failure %+v, want model_error with status 500", res.Failure)
	}
}
