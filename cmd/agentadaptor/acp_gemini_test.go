package main

import (
	"context"
	"os"
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

// The real Gemini CLI 0.61.0 (gemini --experimental-acp) as the parent of
// serve, offline against the fake Gemini API: its model calls
// delegate_to_agent, the host delegates over A2A, the remote's progress is
// a nested subagent of a valid AG-UI stream under Gemini's own tool call,
// and Gemini's final answer is built from the tool result, which never
// carries the remote's progress text. Gemini's MCP request carries no
// parent tool call id (its ACP tool call id is its own, e.g.
// "mcp_a2a-delegation_delegate_to_agent__<model call id>"): the subagent
// is paired with the tool call by call order.
func TestServeGeminiParentDelegates(t *testing.T) {
	bin := realcli.Require(t, realcli.Gemini)
	remote := fakea2a.New(t, fakea2a.Options{Name: "reviewer", Streaming: true,
		Behavior: fakea2a.Script(fakea2a.Working("REMOTE-PROGRESS checking"), fakea2a.Completed("REMOTE-VERDICT looks good"))})
	model := fakemodel.NewGemini(
		fakemodel.Turn{Text: "Asking the reviewer.", Chunks: 1, Tool: &fakemodel.ToolCall{Server: "a2a-delegation", Tool: "delegate_to_agent", ID: "gemini-call-1",
			Args: map[string]any{"agent": "reviewer", "objective": "review the change"}}},
		fakemodel.Turn{Text: "The reviewer answered: {{result}}"},
	)
	t.Cleanup(model.Close)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	settings := `{"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"general":{"disableAutoUpdate":true},"security":{"auth":{"selectedType":"gemini-api-key"}}}`
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"HOME": home, "GOOGLE_GEMINI_BASE_URL": model.URL, "GEMINI_API_KEY": "test-key",
		"GEMINI_CLI_NO_RELAUNCH": "true", "GEMINI_CLI_TRUST_WORKSPACE": "true", "NO_COLOR": "1"} {
		t.Setenv(k, v)
	}
	cfg := &hostconfig.Config{
		Parent: hostconfig.Parent{Adapter: "acp", Binary: bin, Args: []string{"--experimental-acp", "--model", "gemini-2.5-flash"}, WorkDir: t.TempDir(), Timeout: hostconfig.Duration(90 * time.Second)},
		Agents: []hostconfig.Agent{{Key: "reviewer", DisplayName: "Reviewer", Protocol: "a2a", AgentCardURL: remote.CardURL()}},
	}
	h, err := hostyaml.New(context.Background(), cfg, hostyaml.Options{StateDir: t.TempDir(), AdapterFactory: parentAdapter})
	if err != nil {
		t.Fatal(err)
	}
	srv := hosttest.Serve(t, h)
	body := ssetest.PostAll(t.Context(), t, srv.URL+"/agui", `{"threadId":"th-g","runId":"run-gemini-1","messages":[{"id":"u1","role":"user","content":"get the change reviewed"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`)
	if err := aguiverify.VerifyReader(strings.NewReader(string(body))); err != nil {
		t.Fatalf("invalid AG-UI stream: %v\n%s", err, body)
	}
	checkNestedDelegation(t, body, "", "REMOTE-VERDICT looks good")
	checkTextBeforeTool(t, body, "Asking the reviewer.", "")
	for _, r := range fakemodel.GeminiStreams(model.Requests()) {
		if strings.Contains(string(r.Body), "REMOTE-PROGRESS") {
			t.Errorf("the remote's progress reached Gemini's model")
		}
	}
}
