package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{"flags after the prompt", []string{"run", "hi", "--adapter", "scripted", "--scenario", scenario, "--state-dir", dir}, 0, `"delta":"first"`, ""},
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
