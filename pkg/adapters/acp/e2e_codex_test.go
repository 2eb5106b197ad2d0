package acp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/cliharness"
	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/internal/testkit/realcli"
	"github.com/seed0634/agentadaptor/pkg/adapters/acp"
)

// codex-acp 0.16.0 (@zed-industries/codex-acp, a native binary) over ACP,
// offline, against the fake OpenAI Responses API (internal/testkit/fakemodel.OpenAI).
// What the binary does, measured:
//   - it takes Codex's `-c key=value` overrides and no other flag; a model
//     provider with env_key needs no authenticate call; the model catalog
//     needs two more fields than plain Codex's (CodexACPModelCatalog);
//   - it calls only POST {base_url}/responses; initialize advertises
//     loadSession and mcpCapabilities {http};
//   - an MCP tool call is a tool_call titled "Tool: <server>/<tool>" with
//     rawInput {server, tool, arguments}, its toolCallId the model's call
//     id, then session/request_permission (options approved,
//     approved-for-session, approved-always, cancel);
//   - its MCP request's _meta holds threadId, progressToken and
//     x-codex-turn-metadata but no call id: the delegation pairs the
//     subagent with the tool call by call order;
//   - it reports no token usage in the prompt answer, only usage_update
//     (context window) notifications;
//   - it does not exit when its stdin closes: every run ends with the
//     SIGINT after the cancel grace, which it honours.
type codexACPRig struct {
	*cliharness.Rig
	model *fakemodel.OpenAI
	home  string
}

func newCodexACP(t *testing.T, turns ...fakemodel.Turn) *codexACPRig {
	t.Helper()
	bin := realcli.Require(t, realcli.CodexACP)
	model := fakemodel.NewOpenAI(turns...)
	t.Cleanup(model.Close)
	home := t.TempDir()
	catalog := filepath.Join(home, "catalog.json")
	if err := fakemodel.WriteCodexACPModelCatalog(catalog); err != nil {
		t.Fatal(err)
	}
	a, err := acp.New(acp.Config{Binary: bin, Args: model.CodexACPArgs("FAKE_KEY", catalog)})
	if err != nil {
		t.Fatal(err)
	}
	return &codexACPRig{model: model, home: home, Rig: cliharness.NewRig(t, a, map[string]string{"HOME": home, "CODEX_HOME": home, "FAKE_KEY": "test-key"})}
}

// argv finds the test's codex-acp process: the fake model's URL is on its
// command line (-c model_providers...).
func (g *codexACPRig) argv(*agentadaptor.RunHandle) string { return g.model.URL + "/v1" }

func TestCodexACPE2EPlain(t *testing.T) {
	g := newCodexACP(t, fakemodel.Turn{Text: "Hello from the fake model.", Thinking: "pondering"})
	ps, res := g.Completed(cliharness.Context(t), t, "say hello", agentadaptor.WithStreaming())
	if res.Output != "Hello from the fake model." || res.SessionID == "" {
		t.Errorf("output %q session %q", res.Output, res.SessionID)
	}
	deltas, reasoning := 0, 0
	for _, p := range ps {
		switch p.Kind {
		case agentadaptor.KindTextDelta:
			deltas++
		case agentadaptor.KindReasoningDelta:
			reasoning++
		}
	}
	if deltas < 2 || reasoning == 0 {
		t.Errorf("%d text deltas, %d reasoning deltas", deltas, reasoning)
	}
	if reqs := g.model.Requests(); len(reqs) != 1 || reqs[0].Path != "/v1/responses" {
		t.Errorf("model requests: %d", len(reqs))
	}
}

// An MCP tool of a run-scoped server with its bearer token: codex-acp's
// call is named mcp__<server>__<tool> with the tool's own arguments, its
// permission is asked and allowed as a host tool, and the token is in no
// argv, raw stream or file under CODEX_HOME.
func TestCodexACPE2EMCPToolWithRunToken(t *testing.T) {
	svc := fakemodel.NewMCPService("e2e-tools")
	t.Cleanup(svc.Close)
	g := newCodexACP(t,
		fakemodel.Turn{Text: "Let me check.", Tool: &fakemodel.ToolCall{Server: "e2e-tools", Tool: "echo", Args: map[string]any{"text": "ping"}, ID: "call_e2e_1"}},
		fakemodel.Turn{Text: "The tool said {{result}}."},
	)
	ctx := cliharness.Context(t)
	run := g.RunTool(ctx, t, svc, "use the tool", "The tool said echo:ping.", g.argv, agentadaptor.WithStreaming())
	var end *agentadaptor.StreamPayload
	permitted := false
	for i, p := range run.Payloads {
		if p.Kind == agentadaptor.KindToolCallEnd {
			end = &run.Payloads[i]
		}
		if p.Name == "acp.permission" && p.Raw["decision"] == "allowed" && p.Raw["tool"] == "mcp__e2e-tools__echo" && p.Raw["option_id"] == "approved" {
			permitted = true
		}
	}
	if end == nil || end.ToolCallID != "call_e2e_1" || end.ToolName != "mcp__e2e-tools__echo" || end.ToolArgs != `{"text":"ping"}` {
		t.Errorf("tool_call.end %+v", end)
	}
	if !permitted {
		t.Errorf("no allowed acp.permission for the host tool")
	}
	if meta := run.Calls[0].Meta; meta["threadId"] != run.Result.SessionID {
		t.Errorf("_meta %v: want threadId %s", meta, run.Result.SessionID)
	}
	run.CheckTokenGone(ctx, t, svc)
	_ = filepath.Walk(g.home, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), run.Token) {
				t.Errorf("the run token is in %s", p)
			}
		}
		return nil
	})
}

func TestCodexACPE2ECancelMidStream(t *testing.T) {
	g := newCodexACP(t, fakemodel.Turn{Text: "one two three four five six", Chunks: 6, Delay: 2 * time.Second})
	midStream := func(h *agentadaptor.RunHandle) {
		for p := range h.StreamEvents() {
			if p.Kind == agentadaptor.KindTextDelta {
				return
			}
			if p.Kind.Terminal() {
				t.Fatalf("run ended before streaming: %+v", p)
			}
		}
	}
	g.CancelMidStream(cliharness.Context(t), t, "talk slowly", midStream, g.argv, agentadaptor.WithStreaming())
}

// A chat thread's second run loads the first run's session with
// session/load: the model's last request holds the first turn.
func TestCodexACPE2ESessionLoad(t *testing.T) {
	g := newCodexACP(t, fakemodel.Turn{Text: "The first answer."}, fakemodel.Turn{Text: "The second answer."})
	g.ResumeSession(cliharness.Context(t), t, &g.model.Server, "The first answer.")
}
