package realclis_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/internal/testkit/realcli"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"

	"github.com/seed0634/agentadaptor/internal/testkit/ssetest"
)

// codexACPRemote serves the real codex-acp 0.16.0 (@zed-industries/codex-acp,
// Codex over the Agent Client Protocol) with `agentadaptor a2a serve
// --adapter acp --binary codex-acp --arg ...` and a2aArgs. Its model
// provider comes from CODEX_HOME/config.toml, as a user would set it; one
// setting goes on the command line through --arg, which is how ACP agents
// are configured: features.shell_snapshot=false keeps Codex from writing its
// environment (the run's token among it) to CODEX_HOME.
func codexACPRemote(a2aArgs ...string) remoteStarter {
	return func(t *testing.T, bin, root string, openai *fakemodel.OpenAI) *a2aServer {
		t.Helper()
		acpBin := realcli.Require(t, realcli.CodexACP)
		home := filepath.Join(root, "codex-acp-user")
		codexHome := filepath.Join(home, ".codex")
		work := filepath.Join(root, "codex-acp-work")
		for _, d := range []string{codexHome, work} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		catalog := filepath.Join(codexHome, "catalog.json")
		if err := fakemodel.WriteCodexACPModelCatalog(catalog); err != nil {
			t.Fatal(err)
		}
		config := fmt.Sprintf(`model_provider = "fake"
model = %q
model_catalog_json = %q

[model_providers.fake]
name = "fake"
base_url = %q
wire_api = "responses"
env_key = "REALMODE_FAKE_OPENAI_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
`, fakemodel.FakeCodexModel, catalog, openai.URL+"/v1")
		if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		env := cleanEnv("HOME", "CODEX_HOME", "OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY")
		env = append(env, "HOME="+home, "CODEX_HOME="+codexHome, "REALMODE_FAKE_OPENAI_KEY=test-key")
		args := append([]string{"--adapter", "acp", "--binary", acpBin, "--arg=-c", "--arg=features.shell_snapshot=false"}, a2aArgs...)
		return startA2AServe(t, bin, work, env, args)
	}
}

// TestClaudeDelegatesToCodexACPOverA2A: the Claude -> Codex topology with
// the remote an ACP agent. A real Claude Code parent calls
// delegate_to_agent; the host delegates over A2A to codex-acp served by
// `a2a serve --adapter acp`; its run streams into the AG-UI stream as a
// nested subagent before the tool result (its reasoning as progress, with
// --expose-reasoning); Claude's model gets the real answer as the
// structured result and never the progress.
func TestClaudeDelegatesToCodexACPOverA2A(t *testing.T) {
	r := runDelegation(t, codexACPRemote("--expose-reasoning"), []fakemodel.Turn{{Thinking: progressText, Text: codexVerdict}}, parentFinal)
	for _, want := range []string{progressMarker, codexVerdict} {
		if !strings.Contains(r.subText, want) {
			t.Errorf("the subagent events before the tool result lack %q; their text:\n%s", want, r.subText)
		}
	}
	if !strings.Contains(r.afterText, "Codex finished the review.") || !strings.Contains(r.afterText, codexVerdict) {
		t.Errorf("parent text after the tool result: %q", r.afterText)
	}
	for _, req := range r.parentRequests {
		if fakemodel.ContainsText(req, progressMarker) {
			t.Errorf("remote progress reached the parent model:\n%s", req.Body)
		}
	}
	if len(r.result.Messages) != 1 || r.result.Messages[0].Text != codexVerdict {
		t.Errorf("result messages %+v, want only the verdict", r.result.Messages)
	}
	r.checkAudit(t)
	r.shutdown(t)
}

// TestCancelCascadesToCodexACPOverA2A: Stop on the parent run while the
// ACP remote is mid-turn (its model answering slowly) ends the parent run
// cancelled and cascades over A2A to `a2a serve --adapter acp`, which
// cancels its run: session/cancel, then the signals; the codex-acp process
// group is gone while a2a serve itself keeps serving.
func TestCancelCascadesToCodexACPOverA2A(t *testing.T) {
	claudeBin := realcli.Require(t, realcli.Claude)
	root := t.TempDir()
	bin := buildBinary(t)
	openai := fakemodel.NewOpenAI(fakemodel.Turn{Text: "a very slow review that never ends in time", Chunks: 40, Delay: 2 * time.Second})
	t.Cleanup(openai.Close)
	anthropic := fakemodel.NewAnthropic(
		fakemodel.Turn{Text: parentIntro, Tool: &fakemodel.ToolCall{Server: "a2a-delegation", Tool: "delegate_to_agent",
			Args: map[string]any{"agent": "codex", "objective": "Review the change"}}},
		fakemodel.Turn{Text: "not reached"},
	)
	t.Cleanup(anthropic.Close)
	t.Cleanup(func() {
		if left := waitNoProcesses(root, 15*time.Second); len(left) > 0 {
			t.Errorf("processes left behind: %v", left)
		}
	})
	remote := codexACPRemote()(t, bin, root, openai)
	h, srv := startHost(t, claudeBin, root, anthropic, remote.cardURL)
	_ = h

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(ssetest.PostRequest(ctx, t, srv.URL+"/agui", runInput))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	frames := bufio.NewScanner(resp.Body)
	frames.Buffer(nil, 1<<22)
	var seen []event
	next := func() (event, bool) {
		for frames.Scan() {
			d, ok := strings.CutPrefix(frames.Text(), "data: ")
			if !ok {
				continue
			}
			var e event
			if json.Unmarshal([]byte(d), &e) == nil {
				seen = append(seen, e)
				return e, true
			}
		}
		return event{}, false
	}
	// The subagent started, and codex-acp's model is answering.
	for {
		e, ok := next()
		if !ok {
			t.Fatalf("the stream ended before the subagent started: %+v\n--- a2a serve:\n%s", seen, remote.log.String())
		}
		if e.Type == "CUSTOM" && e.Name == "subagent.started" {
			break
		}
	}
	if _, err := openai.AwaitRequests(ctx, func(rs []fakemodel.Request) bool { return len(fakemodel.ModelRequests(rs)) > 0 }); err != nil {
		t.Fatalf("codex-acp never asked its model: %v\n--- a2a serve:\n%s", err, remote.log.String())
	}
	acpProcs := func() map[int]string {
		out := map[int]string{}
		for pid, cmd := range processesUnder(root) {
			if pid != remote.cmd.Process.Pid && strings.Contains(cmd, "codex-acp") {
				out[pid] = cmd
			}
		}
		return out
	}
	if len(acpProcs()) == 0 {
		t.Fatalf("no codex-acp process under the test's root while its model answers")
	}

	cr, err := http.Post(srv.URL+"/agui/runs/"+clientRunID+"/cancel", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	cr.Body.Close()
	if cr.StatusCode/100 != 2 {
		t.Fatalf("cancel: %d", cr.StatusCode)
	}
	for {
		if _, ok := next(); !ok {
			break
		}
	}
	last := seen[len(seen)-1]
	if last.Type != "RUN_ERROR" {
		t.Errorf("last event %+v, want RUN_ERROR", last)
	}
	// The remote confirmed the cancel: subagent.cancelled, not
	// cancel_pending (docs/design.md#the-cascade).
	var cancelled *event
	for i, e := range seen {
		if e.Type == "CUSTOM" && e.Name == "subagent.cancelled" {
			cancelled = &seen[i]
		}
	}
	if cancelled == nil || cancelled.Value["status"] == "cancel_pending" {
		t.Errorf("subagent.cancelled %+v: want the remote's confirmed cancel", cancelled)
	}
	// The cascade reached the ACP agent: its whole process group is gone
	// while a2a serve keeps running.
	var left map[int]string
	testenv.Poll(30*time.Second, func() bool { left = acpProcs(); return len(left) == 0 })
	if len(left) > 0 {
		t.Errorf("codex-acp processes left after the cancel: %v\n--- a2a serve:\n%s", left, remote.log.String())
	}
	select {
	case <-remote.done:
		t.Fatalf("a2a serve exited: %v\n%s", remote.waitErr, remote.log.String())
	default:
	}
	if err := remote.stop(); err != nil {
		t.Errorf("a2a serve: %v\n%s", err, remote.log.String())
	}
}
