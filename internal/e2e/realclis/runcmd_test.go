package realclis_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/internal/testkit/realcli"
)

// TestRunCommandDrivesRealClaude: `agentadaptor run --adapter claude` runs
// the real claude binary (against the fake Anthropic server, through the
// user-level environment a real user would have) and prints its payloads as
// JSON lines, ending with the RunResult.
func TestRunCommandDrivesRealClaude(t *testing.T) {
	claudeBin := realcli.Require(t, realcli.Claude)
	bin := buildBinary(t)
	root := t.TempDir()
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	anthropic := fakemodel.NewAnthropic(fakemodel.Turn{Text: "Hello from the real Claude Code binary."})
	t.Cleanup(anthropic.Close)
	cmd := exec.Command(bin, "run", "--adapter", "claude", "--binary", claudeBin, "--stream", "--result", "--work-dir", root, "say hello")
	cmd.Env = append(cleanEnv("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"),
		"HOME="+home, "CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude"), "ANTHROPIC_BASE_URL="+anthropic.URL,
		"ANTHROPIC_API_KEY=test-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "CLAUDE_CODE_MAX_RETRIES=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("agentadaptor run: %v\nstderr: %s\nstdout: %s", err, stderr.String(), out)
	}
	var kinds []string
	var last map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		if k, ok := m["kind"].(string); ok {
			kinds = append(kinds, k)
		}
		last = m
	}
	if len(kinds) == 0 || kinds[0] != "run.started" {
		t.Fatalf("payload kinds %v", kinds)
	}
	seen := map[string]bool{}
	for _, k := range kinds {
		seen[k] = true
	}
	for _, want := range []string{"text.delta", "run.finished"} {
		if !seen[want] {
			t.Errorf("no %s payload in %v", want, kinds)
		}
	}
	if last["status"] != "completed" || last["output"] != "Hello from the real Claude Code binary." || last["session_id"] == "" {
		t.Errorf("final RunResult line: %v", last)
	}
}
