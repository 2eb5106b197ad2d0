package codex_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/cliharness"
	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/internal/testkit/realcli"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
	"github.com/seed0634/agentadaptor/pkg/adapters/codex"
)

// e2e bundles a real-codex SDK pointed at a fake OpenAI server.
type e2e struct {
	*cliharness.Rig
	model *fakemodel.OpenAI
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
	return &e2e{model: model, Rig: cliharness.NewRig(t, a, map[string]string{"FAKE_KEY": "test-key"})}
}

// modelArgv finds the codex process of the test: the fake model's URL is on
// its command line (-c model_providers...).
func (e *e2e) modelArgv(*agentadaptor.RunHandle) string { return e.model.URL + "/v1" }

func TestE2EPlain(t *testing.T) {
	e := newE2E(t, codex.Config{}, fakemodel.Turn{Text: "Hello from the fake model.", InputTokens: 12, OutputTokens: 7, CacheReadTokens: 4})
	_, res := e.Completed(cliharness.Context(t), t, "say hello", agentadaptor.WithStreaming())
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
	ctx := cliharness.Context(t)
	// codex's argv carries the MCP URL (in -c mcp_servers...): find it.
	run := e.RunTool(ctx, t, svc, "use the tool", "The tool said echo:ping.", func(*agentadaptor.RunHandle) string { return svc.URL() })
	if meta := run.Calls[0].Meta; meta["callId"] != "call_e2e_1" || meta["threadId"] != run.Result.SessionID {
		t.Errorf("_meta %v: want callId call_e2e_1 and threadId %s", meta, run.Result.SessionID)
	}
	var sawResult bool
	for _, p := range run.Payloads {
		if p.Kind == agentadaptor.KindToolCallEnd && (p.ToolName != "echo" || p.ToolArgs != `{"text":"ping"}`) {
			t.Errorf("tool_call.end %+v", p)
		}
		if p.Kind == agentadaptor.KindToolCallResult {
			sawResult = p.ToolResult == "echo:ping"
		}
	}
	if !sawResult {
		t.Errorf("no tool_call.result echo:ping in %v", adaptertest.Names(run.Payloads))
	}
	run.CheckTokenGone(ctx, t, svc)
}

func TestE2ECancelMidStream(t *testing.T) {
	e := newE2E(t, codex.Config{}, fakemodel.Turn{Text: "one two three four five six", Chunks: 6, Delay: 2 * time.Second})
	// Wait until the model is streaming its answer (slowly: a chunk every
	// 2s). codex exec --json prints no text before the message is whole, so
	// the model server's log is what tells.
	midStream := func(h *agentadaptor.RunHandle) {
		ctx, cancel := context.WithTimeout(cliharness.Context(t), testenv.WaitTimeout)
		defer cancel()
		go func() { // stop waiting when the run ends without calling the model
			select {
			case <-h.Done():
				cancel()
			case <-ctx.Done():
			}
		}()
		calledModel := func(rs []fakemodel.Request) bool { return len(fakemodel.ModelRequests(rs)) > 0 }
		if _, err := e.model.AwaitRequests(ctx, calledModel); err != nil {
			t.Fatalf("codex never called the model: %v", err)
		}
		if procs := realcli.WaitFor(e.modelArgv(h), 5*time.Second); len(procs) == 0 {
			t.Errorf("codex is not running")
		}
	}
	e.CancelMidStream(cliharness.Context(t), t, "talk slowly", midStream, e.modelArgv)
}

func TestE2ESessionResume(t *testing.T) {
	e := newE2E(t, codex.Config{IsolateDir: t.TempDir()},
		fakemodel.Turn{Text: "The first answer."},
		fakemodel.Turn{Text: "The second answer."},
	)
	e.ResumeSession(cliharness.Context(t), t, &e.model.Server, "The first answer.")
}

func TestE2EModelError(t *testing.T) {
	e := newE2E(t, codex.Config{}, fakemodel.Turn{Status: http.StatusInternalServerError})
	res, err := e.SDK.Run(cliharness.Context(t), "hi", e.Opts...)
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
