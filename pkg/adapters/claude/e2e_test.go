package claude_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/fakemodel"
	"github.com/seed0634/agentadaptor/internal/realcli"
	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
	"github.com/seed0634/agentadaptor/pkg/adapters/claude"
)

// e2e bundles a real-claude SDK pointed at a fake Anthropic server.
type e2e struct {
	model *fakemodel.Anthropic
	sdk   *agentadaptor.SDK
	opts  []agentadaptor.RunOption
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
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(a))
	if err != nil {
		t.Fatal(err)
	}
	return &e2e{model: model, sdk: sdk, opts: []agentadaptor.RunOption{
		agentadaptor.WithWorkDir(t.TempDir()),
		agentadaptor.WithEnv(map[string]string{
			"ANTHROPIC_BASE_URL":                       model.URL,
			"ANTHROPIC_API_KEY":                        "test-key",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
			"DISABLE_TELEMETRY":                        "1",
			"CLAUDE_CODE_MAX_RETRIES":                  "0",
		}),
		agentadaptor.WithTimeout(60 * time.Second),
	}}
}

func (e *e2e) with(opts ...agentadaptor.RunOption) []agentadaptor.RunOption {
	return append(append([]agentadaptor.RunOption{}, e.opts...), opts...)
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestE2EPlain(t *testing.T) {
	e := newE2E(t, claude.Config{}, fakemodel.Turn{Text: "Hello from the fake model.", InputTokens: 12, OutputTokens: 7, CacheReadTokens: 3})
	ctx := ctxFor(t)
	h, err := e.sdk.Start(ctx, "say hello", e.with(agentadaptor.WithStreaming())...)
	if err != nil {
		t.Fatal(err)
	}
	ps := adaptertest.Collect(ctx, t, h)
	adaptertest.CheckStream(t, h.RunID(), ps)
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("status %s: %v\nstderr: %s", res.Status, res.Failure, res.RawStreams.Stderr)
	}
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
	ctx := ctxFor(t)
	h, err := e.sdk.Start(ctx, "use the tool", e.with(agentadaptor.WithStreaming(), agentadaptor.WithRuntimeServices(svc))...)
	if err != nil {
		t.Fatal(err)
	}
	token := svc.TokenFor(h.RunID())
	if token == "" {
		t.Fatal("the runtime service got no token")
	}
	var ps []agentadaptor.StreamPayload
	checkedArgv := false
	for p := range h.StreamEvents() {
		ps = append(ps, p)
		if p.Kind == agentadaptor.KindToolCallStart && !checkedArgv {
			// The child is alive: its argv (world-readable) must not hold the token.
			procs := realcli.WaitFor(h.RunID(), 5*time.Second)
			if len(procs) == 0 {
				t.Errorf("no process mentions the run %s in its argv", h.RunID())
			}
			for pid, cmd := range procs {
				if strings.Contains(cmd, token) {
					t.Errorf("pid %d has the run token on its command line", pid)
				}
			}
			checkedArgv = true
		}
	}
	adaptertest.CheckStream(t, h.RunID(), ps)
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("status %s: %v\nstderr: %s", res.Status, res.Failure, res.RawStreams.Stderr)
	}
	if res.Output != "The tool said echo:ping." {
		t.Errorf("output %q", res.Output)
	}
	calls := svc.Calls()
	if len(calls) != 1 {
		t.Fatalf("tool calls %+v", calls)
	}
	var toolCallID string
	for _, p := range ps {
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
	if calls[0].RunID != h.RunID() {
		t.Errorf("the MCP server resolved run %q from the token, want %q", calls[0].RunID, h.RunID())
	}
	if got := calls[0].Meta["claudecode/toolUseId"]; got != toolCallID || toolCallID == "" {
		t.Errorf("_meta claudecode/toolUseId = %v, stream tool call id %q", got, toolCallID)
	}
	for _, f := range [][]byte{res.RawStreams.Stdout, res.RawStreams.Stderr} {
		if strings.Contains(string(f), token) {
			t.Errorf("token leaked into the raw streams")
		}
	}
	// The token is revoked when the run ends.
	st, err := svc.ProbeStatus(ctx, token)
	if err != nil || st != http.StatusUnauthorized {
		t.Errorf("token after the run: status %d, %v; want 401", st, err)
	}
	// The fake model saw the tool under its Claude name.
	if !fakemodel.ContainsText(fakemodel.ModelRequests(e.model.Requests())[0], "mcp__e2e-tools__echo") {
		t.Errorf("the model request does not offer mcp__e2e-tools__echo")
	}
}

func TestE2ECancelMidStream(t *testing.T) {
	e := newE2E(t, claude.Config{}, fakemodel.Turn{Text: "one two three four five six", Chunks: 6, Delay: 2 * time.Second})
	ctx := ctxFor(t)
	root := t.TempDir()
	h, err := e.sdk.Start(ctx, "talk slowly", e.with(agentadaptor.WithStreaming(), agentadaptor.WithTempRoot(root), agentadaptor.WithCancelGrace(3*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	for p := range h.StreamEvents() {
		if p.Kind == agentadaptor.KindTextDelta {
			break // the model is mid-stream
		}
		if p.Kind.Terminal() {
			t.Fatalf("run ended before streaming: %+v", p)
		}
	}
	if err := h.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCancelled {
		t.Fatalf("status %s, want cancelled", res.Status)
	}
	if procs := realcli.WaitGone(h.RunID(), 10*time.Second); len(procs) > 0 {
		t.Errorf("processes left behind: %v", procs)
	}
	if entries, _ := os.ReadDir(root); len(entries) > 0 {
		t.Errorf("temp dir left behind: %v", entries)
	}
}

func TestE2ESessionResume(t *testing.T) {
	e := newE2E(t, claude.Config{IsolateDir: t.TempDir()},
		fakemodel.Turn{Text: "The first answer."},
		fakemodel.Turn{Text: "The second answer."},
	)
	ctx := ctxFor(t)
	r1, err := e.sdk.Run(ctx, "first question", e.with(agentadaptor.WithSessionKey("conv-1"))...)
	if err != nil || r1.Status != agentadaptor.StatusCompleted {
		t.Fatalf("run 1: %v %+v", err, r1)
	}
	r2, err := e.sdk.Run(ctx, "second question", e.with(agentadaptor.WithSessionKey("conv-1"))...)
	if err != nil || r2.Status != agentadaptor.StatusCompleted {
		t.Fatalf("run 2: %v %+v", err, r2)
	}
	if r2.SessionID != r1.SessionID || r1.SessionID == "" {
		t.Errorf("sessions %q then %q, want the same", r1.SessionID, r2.SessionID)
	}
	reqs := fakemodel.ModelRequests(e.model.Requests())
	last := reqs[len(reqs)-1]
	for _, s := range []string{"first question", "The first answer.", "second question"} {
		if !fakemodel.ContainsText(last, s) {
			t.Errorf("the resumed request lacks %q", s)
		}
	}
}

func TestE2EModelError(t *testing.T) {
	e := newE2E(t, claude.Config{}, fakemodel.Turn{Status: http.StatusInternalServerError})
	ctx := ctxFor(t)
	res, err := e.sdk.Run(ctx, "hi", e.opts...)
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
