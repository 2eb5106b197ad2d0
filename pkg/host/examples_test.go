package host_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
)

// chatTurn posts one message of thread to base's /agui (with header) and
// returns the parent's text and the subagents' text of the run.
func chatTurn(t *testing.T, base, thread string, n int, history []string, header map[string]string) (parent, sub string) {
	t.Helper()
	msgs := []map[string]string{}
	for i, h := range history {
		msgs = append(msgs, map[string]string{"id": fmt.Sprintf("u%d", i), "role": "user", "content": h})
	}
	body, _ := json.Marshal(map[string]any{"threadId": thread, "runId": fmt.Sprintf("%s-run-%d", thread, n), "messages": msgs,
		"tools": []any{}, "context": []any{}, "state": map[string]any{}, "forwardedProps": map[string]any{}})
	req, _ := http.NewRequest(http.MethodPost, base+"/agui", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(raw, []byte(`"type":"RUN_FINISHED"`)) {
		t.Fatalf("message %d: %d\n%s", n, resp.StatusCode, raw)
	}
	var p, s strings.Builder
	for line := range strings.SplitSeq(string(raw), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type  string `json:"type"`
			Delta string `json:"delta"`
			Name  string `json:"name"`
			Value struct {
				Delta string `json:"delta"`
			} `json:"value"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil {
			continue
		}
		switch {
		case ev.Type == "TEXT_MESSAGE_CONTENT":
			p.WriteString(ev.Delta)
		case ev.Type == "CUSTOM" && ev.Name == "subagent.text.delta":
			s.WriteString(ev.Value.Delta)
		}
	}
	return p.String(), s.String()
}

// exampleConfig loads examples/configs/NAME as serve --config does (from
// this package's directory: relative paths in it must resolve against the
// config file, not the current directory).
func exampleConfig(t *testing.T, name string) *hostconfig.Config {
	t.Helper()
	cfg, err := hostconfig.Load(filepath.Join("..", "..", "examples", "configs", name))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Every example config answers every message of a chat, not only the first:
// two messages go through each one's host, each answered by its remote
// agent about its own words. What cannot run here is replaced, and only
// that: remote URLs point at loopback test agents, and the real Claude Code
// parent of networked-host.yaml is the demo's scripted parent.
// claude-parent.yaml and codex-parent.yaml are the real CLIs with only a
// remote agent: internal/e2e/realclis drives real CLIs as parents.
func TestExampleConfigsAnswerEveryMessage(t *testing.T) {
	t.Setenv("MY_AGENT_TOKEN", "my-agent-token-0123456789")
	t.Setenv("ALICE_TOKEN", "alice-token-0123456789abcdef")
	echo := func(m *a2a.Message) fakea2a.Behavior {
		var text strings.Builder
		for _, p := range m.Parts {
			if tp, ok := p.Content.(a2a.Text); ok {
				text.WriteString(string(tp))
			}
		}
		return fakea2a.Script(fakea2a.Steps(fakea2a.TextChunks("Remote answer about ", text.String()), fakea2a.Completed(""))...)
	}
	demo := serveHost(t, nil) // another agentadaptor host is an AG-UI agent
	for _, tt := range []struct {
		file   string
		adjust func(t *testing.T, c *hostconfig.Config)
		header map[string]string
	}{
		{"agui-agent.yaml", func(t *testing.T, c *hostconfig.Config) { c.Agents[0].EndpointURL = demo + "/agui" }, nil},
		{"own-a2a-agent.yaml", func(t *testing.T, c *hostconfig.Config) {
			if c.Agents[0].AuthRef != "env:MY_AGENT_TOKEN" || c.Agents[0].FetchCard != "startup" {
				t.Fatalf("agent %+v", c.Agents[0])
			}
			remote := fakea2a.New(t, fakea2a.Options{Name: "mine", Streaming: true, RequireToken: "my-agent-token-0123456789", Choose: echo})
			c.Agents[0].AgentCardURL = remote.CardURL()
		}, nil},
		{"networked-host.yaml", func(t *testing.T, c *hostconfig.Config) {
			remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Choose: echo})
			c.Agents[0].AgentCardURL = remote.CardURL()
			c.Parent = hostconfig.Parent{Adapter: "scripted", Scenario: filepath.Join("..", "..", "internal", "hostyaml", "demo", "parent.yaml")}
		}, map[string]string{"Authorization": "Bearer alice-token-0123456789abcdef"}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			cfg := exampleConfig(t, tt.file)
			tt.adjust(t, cfg)
			_, srv := newHost(t, cfg)
			var history []string
			for i, msg := range []string{"How do penguins sleep?", "And whales?"} {
				history = append(history, msg)
				parent, sub := chatTurn(t, srv.URL, "thread-"+tt.file, i, history, tt.header)
				if !strings.Contains(sub, msg) {
					t.Errorf("message %d (%q): the subagent did not answer about it: %q", i+1, msg, sub)
				}
				if !strings.Contains(parent, msg) {
					t.Errorf("message %d (%q): the parent's reply does not carry the answer: %q", i+1, msg, parent)
				}
			}
		})
	}
}

// The example scenario words a failed delegation as a failure, with the
// reason, on every turn.
func TestExampleScenarioSaysWhenTheDelegationFailed(t *testing.T) {
	cfg := exampleConfig(t, "agui-agent.yaml")
	cfg.Agents[0].EndpointURL = "http://127.0.0.1:1/agui" // nothing listens there
	_, srv := newHost(t, cfg)
	for i, msg := range []string{"first", "second"} {
		parent, _ := chatTurn(t, srv.URL, "thread-fail", i, []string{msg}, nil)
		if !strings.Contains(parent, "did not complete (failed, agent_unavailable): ") || strings.Contains(parent, "It answered") ||
			strings.HasSuffix(strings.TrimSpace(parent), ":") {
			t.Errorf("message %d: %q", i+1, parent)
		}
	}
}
