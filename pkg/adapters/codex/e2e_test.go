package codex_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/fakemodel"
	"github.com/seed0634/agentadaptor/internal/realcli"
	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
	"github.com/seed0634/agentadaptor/pkg/adapters/codex"
)

type e2e struct {
	model *fakemodel.OpenAI
	sdk   *agentadaptor.SDK
	opts  []agentadaptor.RunOption
}

func newE2E(t *testing.T, cfg codex.Config, turns ...fakemodel.Turn) *e2e {
	t.Helper()
	bin := realcli.Require(t, realcli.Codex)
	model := fakemodel.NewOpenAI(turns...)
	t.Cleanup(model.Close)
	catalog := filepath.Join(t.TempDir(), "catalog.json")
	if err := fakemodel.WriteCodexModelCatalog(catalog); err != nil {
		t.Fatal(err)
	}
	cfg.Binary = bin
	cfg.Isolate = true
	cfg.ExtraConfig = append(cfg.ExtraConfig, model.CodexConfig("FAKE_KEY", catalog)...)
	cfg.ExtraArgs = append(cfg.ExtraArgs, "--disable", "plugins", "--disable", "remote_plugin", "--disable", "apps")
	a, err := codex.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(a))
	if err != nil {
		t.Fatal(err)
	}
	return &e2e{model: model, sdk: sdk, opts: []agentadaptor.RunOption{
		agentadaptor.WithWorkDir(t.TempDir()),
		agentadaptor.WithEnv(map[string]string{"FAKE_KEY": "test-key"}),
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
	e := newE2E(t, codex.Config{}, fakemodel.Turn{Text: "Hello from the fake model.", InputTokens: 12, OutputTokens: 7, CacheReadTokens: 4})
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
	if res.SessionID == "" {
		t.Errorf("no thread id")
	}
	if res.Usage == nil || res.Usage.InputTokens != 12 || res.Usage.OutputTokens != 7 || res.Usage.CacheReadTokens != 4 {
		t.Errorf("usage %+v", res.Usage)
	}
}

func TestE2EMCPToolWithRunToken(t *testing.T) {
	svc := fakemodel.NewMCPService("e2e-tools")
	t.Cleanup(svc.Close)
	e := newE2E(t, codex.Config{},
		fakemodel.Turn{Text: "Let me check.", Tool: &fakemodel.ToolCall{Server: "e2e-tools", Tool: "echo", Args: map[string]any{"text": "ping"}, ID: "call_e2e_1"}},
		fakemodel.Turn{Text: "The tool said {{result}}."},
	)
	ctx := ctxFor(t)
	h, err := e.sdk.Start(ctx, "use the tool", e.with(agentadaptor.WithRuntimeServices(svc))...)
	if err != nil {
		t.Fatal(err)
	}
	token := svc.TokenFor(h.RunID())
	if token == "" {
		t.Fatal("the runtime service got no token")
	}
	var ps []agentadaptor.StreamPayload
	checked := false
	for p := range h.StreamEvents() {
		ps = append(ps, p)
		if p.Kind == agentadaptor.KindToolCallStart && !checked {
			// codex's argv carries the MCP URL (in -c mcp_servers...): find it.
			procs := realcli.WaitFor(svc.URL(), 5*time.Second)
			if len(procs) == 0 {
				t.Errorf("no live process has %s on its command line", svc.URL())
			}
			for pid, cmd := range procs {
				if strings.Contains(cmd, token) {
					t.Errorf("pid %d has the run token on its command line", pid)
				}
			}
			checked = true
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
	if calls[0].RunID != h.RunID() {
		t.Errorf("the MCP server resolved run %q, want %q", calls[0].RunID, h.RunID())
	}
	if calls[0].Meta["callId"] != "call_e2e_1" || calls[0].Meta["threadId"] != res.SessionID {
		t.Errorf("_meta %v: want callId call_e2e_1 and threadId %s", calls[0].Meta, res.SessionID)
	}
	var sawResult bool
	for _, p := range ps {
		if p.Kind == agentadaptor.KindToolCallEnd && (p.ToolName != "echo" || p.ToolArgs != `{"text":"ping"}`) {
			t.Errorf("tool_call.end %+v", p)
		}
		if p.Kind == agentadaptor.KindToolCallResult {
			sawResult = p.ToolResult == "echo:ping"
		}
	}
	if !sawResult {
		t.Errorf("no tool_call.result echo:ping in %v", names(ps))
	}
	if strings.Contains(string(res.RawStreams.Stdout)+string(res.RawStreams.Stderr), token) {
		t.Errorf("token leaked into the raw streams")
	}
	if st, err := svc.ProbeStatus(ctx, token); err != nil || st != http.StatusUnauthorized {
		t.Errorf("token after the run: %d %v, want 401", st, err)
	}
}

func TestE2ECancelMidStream(t *testing.T) {
	e := newE2E(t, codex.Config{}, fakemodel.Turn{Text: "one two three four five six", Chunks: 6, Delay: 2 * time.Second})
	ctx := ctxFor(t)
	root := t.TempDir()
	h, err := e.sdk.Start(ctx, "talk slowly", e.with(agentadaptor.WithTempRoot(root), agentadaptor.WithCancelGrace(3*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the model is streaming its answer.
	if procs := realcli.WaitFor(e.model.URL+"/v1", 5*time.Second); len(procs) == 0 {
		t.Errorf("codex is not running")
	}
	for deadline := time.Now().Add(30 * time.Second); len(fakemodel.ModelRequests(e.model.Requests())) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("codex never called the model")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := h.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCancelled {
		t.Fatalf("status %s, want cancelled", res.Status)
	}
	// The fake model's URL is on codex's command line (-c model_providers...).
	if procs := realcli.WaitGone(e.model.URL+"/v1", 10*time.Second); len(procs) > 0 {
		t.Errorf("processes left behind: %v", procs)
	}
	if entries, _ := os.ReadDir(root); len(entries) > 0 {
		t.Errorf("temp dir left behind: %v", entries)
	}
}

func TestE2ESessionResume(t *testing.T) {
	e := newE2E(t, codex.Config{IsolateDir: t.TempDir()},
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
		t.Fatalf("run 2: %v %+v\nstderr: %s", err, r2, r2.RawStreams.Stderr)
	}
	if r2.SessionID != r1.SessionID || r1.SessionID == "" {
		t.Errorf("threads %q then %q, want the same", r1.SessionID, r2.SessionID)
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
	e := newE2E(t, codex.Config{}, fakemodel.Turn{Status: http.StatusInternalServerError})
	ctx := ctxFor(t)
	res, err := e.sdk.Run(ctx, "hi", e.opts...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentadaptor.StatusFailed || res.Failure == nil || res.Failure.Code != agentadaptor.FailureModel {
		t.Fatalf("status %s failure %+v, want model_error", res.Status, res.Failure)
	}
	if !res.Failure.Retryable {
		t.Errorf("a 5xx model failure should be retryable: %+v", res.Failure)
	}
}
