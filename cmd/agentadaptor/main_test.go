package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scenario, []byte("- say: first\n- ask: more?\n- say: second\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		args       []string
		code       int
		out, errIn string
	}{
		{"version flag", []string{"--version"}, 0, "agentadaptor ", ""},
		{"version command", []string{"version"}, 0, "agentadaptor ", ""},
		{"group help", []string{"a2a", "--help"}, 0, "a2a serve", ""},
		{"bare group", []string{"a2a"}, 2, "", "a2a serve"},
		{"unknown command", []string{"nope"}, 2, "", "unknown command"},
		{"run needs an adapter", []string{"run", "hi"}, 2, "", "--adapter is required"},
		{"flags after the prompt", []string{"run", "hi", "--adapter", "scripted", "--scenario", scenario, "--state-dir", dir}, ExitInputRequired, `"delta":"first"`, ""},
		{"a run that asks ends input_required", []string{"run", "--adapter", "scripted", "--scenario", scenario, "hi"}, ExitInputRequired, `"name":"agent.input_required"`, `input_required: the agent asks "more?"`},
		{"unknown command of a group", []string{"a2a", "bogus"}, 2, "", `unknown command "a2a bogus"`},
		{"serve --addr without a port", []string{"serve", "--addr", "localhost"}, 2, "", `listen address "localhost" (--addr or the config's addr) must be host:port`},
		{"two prompts", []string{"run", "hi", "there", "--adapter", "scripted", "--scenario", scenario}, 2, "", "quote a prompt"},
		{"a missing CLI is a usage error", []string{"run", "--adapter", "claude", "--binary", "/nonexistent/claude", "hi"}, 2, "", "npm install -g @anthropic-ai/claude-code"},
		{"a2a serve with a missing CLI", []string{"a2a", "serve", "--adapter", "codex", "--binary", "/nonexistent/codex"}, 2, "", "npm install -g @openai/codex"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errOut, tt.errIn) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
		})
	}
}

// --session-key resumes the CLI session across invocations: the second run
// of the key continues after the first turn.
func TestRunSessionKeyResumesAcrossInvocations(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scenario, []byte("- say: first\n- ask: more?\n- say: second\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--adapter", "scripted", "--scenario", scenario, "--state-dir", dir, "--session-key", "chat-1"}
	if _, out, errOut := run(t, append(args, "hi")...); !strings.Contains(out, `"delta":"first"`) {
		t.Fatalf("first turn: %s %s", out, errOut)
	}
	if _, out, errOut := run(t, append(args, "and?")...); !strings.Contains(out, `"delta":"second"`) {
		t.Fatalf("second turn did not resume: %s %s", out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "sessions.json")); err != nil {
		t.Fatal(err)
	}
}

// serve's startup errors are one line on stderr, naming the right cause and
// line, and nothing else is printed.
func TestServeStartupErrorsAreOneClearLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("UX_KEY", "api-key-0123456789abcdef")
	write("s.yaml", "- say: hi\n")
	card := fakea2a.New(t, fakea2a.Options{Name: "mine"}) // declares no security scheme
	for _, tt := range []struct {
		name       string
		args       []string
		want       string
		mustNotSay []string
	}{
		{"indentation", []string{"serve", "--config", write("indent.yaml", "addr: 127.0.0.1:0\nparent:\n  adapter: scripted\n scenario: x.yaml\n")},
			"indent.yaml: line 4: did not find expected key", nil},
		{"addr without a port", []string{"serve", "--addr", "localhost"}, "must be host:port", []string{"reachable from other machines"}},
		{"missing parent CLI", []string{"serve", "--config", write("nocli.yaml", "parent: {adapter: claude, binary: /nonexistent/claude}\n")},
			"point parent.binary in the config at it", []string{"--binary"}},
		{"misconfigured agent", []string{"serve", "--addr", "127.0.0.1:0", "--config", write("mis.yaml", "parent: {adapter: scripted, scenario: s.yaml}\nagents:\n  - key: mine\n    agent_card_url: "+card.CardURL()+"\n    auth: {scheme: api_key, token_ref: env:UX_KEY}\n    fetch_card: startup\n")},
			"agents[0] (mine), checked at startup (fetch_card: startup), is misconfigured: ", []string{"host log", ".:", "WARN", "remote agent is misconfigured"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, tt.args...)
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if code != 2 || out != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "agentadaptor serve: ") || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stdout %q, stderr (want one line with %q):\n%s", code, out, tt.want, errOut)
			}
			for _, bad := range tt.mustNotSay {
				if strings.Contains(errOut, bad) {
					t.Errorf("stderr says %q: %s", bad, errOut)
				}
			}
		})
	}
}
