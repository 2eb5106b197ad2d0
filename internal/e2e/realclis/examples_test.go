package realclis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/hostyaml"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/internal/testkit/hosttest"
	"github.com/seed0634/agentadaptor/internal/testkit/realcli"
	"github.com/seed0634/agentadaptor/pkg/adapters/claude"
	"github.com/seed0634/agentadaptor/pkg/adapters/codex"

	"github.com/seed0634/agentadaptor/internal/testkit/ssetest"
)

// The real-CLI example configs (examples/configs/claude-parent.yaml and
// codex-parent.yaml) answer every message of a chat: two messages go
// through a host loaded from each file, its real CLI driven by a fake model
// that delegates each message to the configured "research" agent (a
// loopback fake A2A agent in place of the file's card URL) and then
// answers from the result. Only the card URL, the CLI binary (the one
// node_modules installs), the work dir and the model server are the test's.
func TestExampleRealParentConfigsAnswerEveryMessage(t *testing.T) {
	messages := []string{"How do penguins sleep?", "And whales?"}
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Choose: func(m *a2a.Message) fakea2a.Behavior {
		var text strings.Builder
		for _, p := range m.Parts {
			if tp, ok := p.Content.(a2a.Text); ok {
				text.WriteString(string(tp))
			}
		}
		return fakea2a.Script(fakea2a.Steps(fakea2a.TextChunks("Research about ", text.String()), fakea2a.Completed(""))...)
	}})
	turns := func() []fakemodel.Turn {
		var out []fakemodel.Turn
		for i, m := range messages {
			out = append(out,
				fakemodel.Turn{Text: "Asking research.", Tool: &fakemodel.ToolCall{Server: "a2a-delegation", Tool: "delegate_to_agent",
					Args: map[string]any{"agent": "research", "objective": m}}},
				fakemodel.Turn{Text: fmt.Sprintf("Answer %d: {{result}}", i+1)})
		}
		return out
	}
	for _, tt := range []struct {
		file, cli string
		setup     func(t *testing.T, root string) // the CLI's model server and home
		adapter   func(p hostconfig.Parent) (agentadaptor.Adapter, error)
	}{
		{"claude-parent.yaml", realcli.Claude, func(t *testing.T, root string) {
			anthropic := fakemodel.NewAnthropic(turns()...)
			t.Cleanup(anthropic.Close)
			home := filepath.Join(root, "claude-user")
			if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
				t.Fatal(err)
			}
			for k, v := range map[string]string{"HOME": home, "CLAUDE_CONFIG_DIR": filepath.Join(home, ".claude"), "ANTHROPIC_BASE_URL": anthropic.URL,
				"ANTHROPIC_API_KEY": "test-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_MAX_RETRIES": "0"} {
				t.Setenv(k, v)
			}
			for _, k := range []string{"ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"} {
				t.Setenv(k, "")
				_ = os.Unsetenv(k)
			}
		}, func(p hostconfig.Parent) (agentadaptor.Adapter, error) {
			return claude.New(claude.Config{Binary: p.Binary, PermissionMode: p.PermissionMode, AllowedTools: p.AllowedTools})
		}},
		{"codex-parent.yaml", realcli.Codex, func(t *testing.T, root string) {
			openai := fakemodel.NewOpenAI(turns()...)
			t.Cleanup(openai.Close)
			home, codexHome := writeCodexHome(t, root, openai)
			for k, v := range map[string]string{"HOME": home, "CODEX_HOME": codexHome, "REALMODE_FAKE_OPENAI_KEY": "test-key"} {
				t.Setenv(k, v)
			}
			for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY"} {
				t.Setenv(k, "")
				_ = os.Unsetenv(k)
			}
		}, func(p hostconfig.Parent) (agentadaptor.Adapter, error) {
			return codex.New(codex.Config{Binary: p.Binary})
		}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			bin := realcli.Require(t, tt.cli)
			repo, err := realcli.RepoRoot()
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := hostconfig.Load(filepath.Join(repo, "examples", "configs", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			t.Cleanup(func() {
				if left := waitNoProcesses(root, 15*time.Second); len(left) > 0 {
					t.Errorf("processes left behind: %v", left)
				}
			})
			tt.setup(t, root)
			work := filepath.Join(root, "work")
			if err := os.MkdirAll(work, 0o700); err != nil {
				t.Fatal(err)
			}
			cfg.Parent.Binary, cfg.Parent.WorkDir = bin, work
			cfg.Agents[0].AgentCardURL = remote.CardURL()
			logs := &syncBuffer{}
			h, err := hostyaml.New(context.Background(), cfg, hostyaml.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)),
				StateDir: filepath.Join(root, "state"), AdapterFactory: tt.adapter})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { // after the host's shutdown, so its log is whole
				if t.Failed() {
					t.Logf("host log:\n%s", logs.String())
				}
			})
			srv := hosttest.Serve(t, h)
			var history []map[string]string
			for i, msg := range messages {
				history = append(history, map[string]string{"id": fmt.Sprintf("u%d", i), "role": "user", "content": msg})
				ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
				input, err := json.Marshal(map[string]any{"threadId": "thread-" + tt.file, "runId": fmt.Sprintf("run-%s-%d", tt.file, i),
					"messages": history, "tools": []any{}, "context": []any{}, "state": map[string]any{}, "forwardedProps": map[string]any{}})
				if err != nil {
					t.Fatal(err)
				}
				body := ssetest.PostAll(ctx, t, srv.URL+"/agui", string(input))
				cancel()
				evs := decodeEvents(t, body)
				var sub, parent strings.Builder
				for _, e := range evs {
					switch {
					case e.Type == "CUSTOM" && e.Name == "subagent.text.delta":
						d, _ := e.Value["delta"].(string)
						sub.WriteString(d)
					case e.Type == "TEXT_MESSAGE_CONTENT":
						parent.WriteString(e.Delta)
					}
				}
				if last := evs[len(evs)-1]; last.Type != "RUN_FINISHED" {
					t.Fatalf("message %d: last event %s in:\n%s", i+1, last.Type, body)
				}
				if !strings.Contains(sub.String(), msg) || !strings.Contains(parent.String(), fmt.Sprintf("Answer %d:", i+1)) ||
					!strings.Contains(parent.String(), "Research about "+msg) {
					t.Fatalf("message %d (%q): subagent %q, parent %q", i+1, msg, sub.String(), parent.String())
				}
			}
		})
	}
}
