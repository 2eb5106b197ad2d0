package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/hostyaml"
	"github.com/seed0634/agentadaptor/internal/testkit/aguiverify"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/internal/testkit/hosttest"
	"github.com/seed0634/agentadaptor/internal/testkit/realcli"
	"github.com/seed0634/agentadaptor/internal/testkit/ssetest"
)

// The real codex-acp 0.16.0 (@zed-industries/codex-acp) as the parent of
// serve, offline against the fake OpenAI Responses API: its model calls
// delegate_to_agent, the host delegates over A2A, the remote's progress is
// a nested subagent of a valid AG-UI stream under codex-acp's own tool
// call (its ACP toolCallId is the model's call id, "codex-call-1"), and
// the final answer is built from the tool result, which never carries the
// remote's progress text. codex-acp's MCP request carries no call id in
// _meta (only threadId and turn metadata): the subagent is paired with the
// tool call by call order on the mcp__a2a-delegation__delegate_to_agent
// name the adapter reads from the call's rawInput {server, tool}.
func TestServeCodexACPParentDelegates(t *testing.T) {
	bin := realcli.Require(t, realcli.CodexACP)
	remote := fakea2a.New(t, fakea2a.Options{Name: "reviewer", Streaming: true,
		Behavior: fakea2a.Script(fakea2a.Working("REMOTE-PROGRESS checking"), fakea2a.Completed("REMOTE-VERDICT looks good"))})
	model := fakemodel.NewOpenAI(
		fakemodel.Turn{Text: "Asking the reviewer.", Chunks: 1, Tool: &fakemodel.ToolCall{Server: "a2a-delegation", Tool: "delegate_to_agent", ID: "codex-call-1",
			Args: map[string]any{"agent": "reviewer", "objective": "review the change"}}},
		fakemodel.Turn{Text: "The reviewer answered: {{result}}"},
	)
	t.Cleanup(model.Close)
	home := t.TempDir()
	catalog := filepath.Join(home, "catalog.json")
	if err := fakemodel.WriteCodexACPModelCatalog(catalog); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"HOME": home, "CODEX_HOME": home, "FAKE_KEY": "test-key"} {
		t.Setenv(k, v)
	}
	// The example configuration's parent, with the installed binary, the
	// fake model provider and the fake remote.
	cfg, err := hostconfig.Load(filepath.Join("..", "..", "examples", "configs", "codex-acp-parent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Parent.Binary, cfg.Parent.WorkDir, cfg.Parent.Timeout = bin, t.TempDir(), hostconfig.Duration(90*time.Second)
	cfg.Parent.Args = append(cfg.Parent.Args, model.CodexACPArgs("FAKE_KEY", catalog)...)
	cfg.Agents = []hostconfig.Agent{{Key: "reviewer", DisplayName: "Reviewer", Protocol: "a2a", AgentCardURL: remote.CardURL()}}
	h, err := hostyaml.New(context.Background(), cfg, hostyaml.Options{StateDir: t.TempDir(), AdapterFactory: parentAdapter})
	if err != nil {
		t.Fatal(err)
	}
	srv := hosttest.Serve(t, h)
	body := ssetest.PostAll(t.Context(), t, srv.URL+"/agui", `{"threadId":"th-c","runId":"run-codex-acp-1","messages":[{"id":"u1","role":"user","content":"get the change reviewed"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`)
	if err := aguiverify.VerifyReader(strings.NewReader(string(body))); err != nil {
		t.Fatalf("invalid AG-UI stream: %v\n%s", err, body)
	}
	checkNestedDelegation(t, body, "codex-call-1", "REMOTE-VERDICT looks good")
	checkTextBeforeTool(t, body, "Asking the reviewer.", "codex-call-1")
	outputs := 0
	for _, r := range model.Requests() {
		if strings.Contains(string(r.Body), "REMOTE-PROGRESS") {
			t.Errorf("the remote's progress reached codex-acp's model")
		}
		if out, ok := fakemodel.FunctionCallOutputs(r)["codex-call-1"]; ok {
			outputs++
			if !strings.Contains(out, "REMOTE-VERDICT looks good") {
				t.Errorf("the tool result fed to the model: %q", out)
			}
		}
	}
	if outputs == 0 {
		t.Errorf("the model never got the delegation's result")
	}
}
