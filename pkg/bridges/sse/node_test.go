package sse_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"

	"github.com/seed0634/agentadaptor/internal/testkit/ssetest"
)

// nodeEnv returns the repository root when node and the npm packages are
// installed. Locally it skips otherwise; under CI=true it fails, so CI never
// skips these checks silently.
func nodeEnv(t *testing.T) string {
	t.Helper()
	root, err := testenv.NodePackages(testenv.AGUIPackages()...)
	testenv.Require(t, "node and the @ag-ui packages", err)
	return root
}

// runNode runs a script of tests/node from the repository root.
func runNode(t *testing.T, root string, stdin io.Reader, script string, args ...string) (stdout string, err error) {
	t.Helper()
	cmd := exec.Command("node", append([]string{filepath.Join("tests", "node", script)}, args...)...)
	cmd.Dir = root
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if err != nil {
		t.Logf("node %s %v failed: %v\nstdout:\n%s\nstderr:\n%s", script, args, err, out.String(), errb.String())
	}
	return out.String(), err
}

func TestNodeValidatesGoldenTranscripts(t *testing.T) {
	root := nodeEnv(t)
	var files []string
	for _, f := range goldenFiles() {
		abs, _ := filepath.Abs(f)
		files = append(files, abs)
	}
	if _, err := runNode(t, root, nil, "validate-agui.mjs", files...); err != nil {
		t.Fatal("the golden transcripts do not validate under @ag-ui/core 1.0.0 and 0.0.59")
	}
}

func TestNodeValidatorRejectsBadStreams(t *testing.T) {
	root := nodeEnv(t)
	bad := "id: 1\ndata: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n" +
		"id: 2\ndata: {\"type\":\"CUSTOM\",\"name\":\"no-value\"}\n\n" +
		"id: 3\ndata: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\",\"outcome\":{\"type\":\"cancelled\"}}\n\n"
	if _, err := runNode(t, root, strings.NewReader(bad), "validate-agui.mjs"); err == nil {
		t.Fatal("validate-agui.mjs accepted a stream with a value-less CUSTOM and a cancelled outcome")
	}
	noTerminal := "id: 1\ndata: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n"
	if _, err := runNode(t, root, strings.NewReader(noTerminal), "validate-agui.mjs"); err == nil {
		t.Fatal("validate-agui.mjs accepted a stream without a terminal event")
	}
}

func TestNodeValidatesLiveStreams(t *testing.T) {
	root := nodeEnv(t)
	leakCheck(t)
	f := newFixture(t)
	dir := t.TempDir()
	var files []string
	for _, prompt := range []string{"plain", "streamed", "tool", "fail", "custom", "reasoning"} {
		body, _ := runStream(t, f, "th-"+prompt, "node-live-"+prompt, prompt)
		path := filepath.Join(dir, prompt+".sse")
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
		waitEnded(t, f.handle(t, "node-live-"+prompt))
	}
	// A run that cannot start.
	broken := startFixture(t, newAdapter(t, "/nonexistent/agent-cli"))
	resp := ssetest.Post(t, broken.url(), input("th", "node-live-start", "plain"))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	path := filepath.Join(dir, "start_failure.sse")
	os.WriteFile(path, body, 0o644)
	files = append(files, path)

	if _, err := runNode(t, root, nil, "validate-agui.mjs", files...); err != nil {
		t.Fatal("live streams do not validate in Node")
	}
}

type agentSummary struct {
	OK       bool     `json:"ok"`
	RunID    string   `json:"runId"`
	Types    []string `json:"types"`
	Terminal string   `json:"terminal"`
	Code     string   `json:"code"`
	Text     string   `json:"text"`
	Aborted  bool     `json:"aborted"`
	Failures []string `json:"failures"`
}

func runAgent(t *testing.T, root, url string, args ...string) agentSummary {
	t.Helper()
	out, err := runNode(t, root, nil, "httpagent-run.mjs", append([]string{url}, args...)...)
	var s agentSummary
	if jerr := json.Unmarshal([]byte(strings.TrimSpace(out)), &s); jerr != nil {
		t.Fatalf("no JSON summary (%v): %q", jerr, out)
	}
	if err != nil || !s.OK {
		t.Fatalf("HttpAgent run failed: %v", s.Failures)
	}
	return s
}

func TestNodeHttpAgent(t *testing.T) {
	root := nodeEnv(t)
	leakCheck(t)
	f := newFixture(t)
	tests := []struct {
		prompt, expect, code, text string
	}{
		{"plain", "RUN_FINISHED", "", "Hello from the agent."},
		{"streamed", "RUN_FINISHED", "", "Hello, world"},
		{"tool", "RUN_FINISHED", "", "Found 3 results."},
		{"custom", "RUN_FINISHED", "", "done"},
		{"reasoning", "RUN_FINISHED", "", "answer"},
		{"fail", "RUN_ERROR", string(agentadaptor.FailureExit), "partial"},
	}
	for _, tc := range tests {
		t.Run(tc.prompt, func(t *testing.T) {
			runID := "node-agent-" + tc.prompt
			args := []string{"--message", tc.prompt, "--run-id", runID, "--expect", tc.expect}
			if tc.code != "" {
				args = append(args, "--expect-code", tc.code)
			}
			s := runAgent(t, root, f.url(), args...)
			if s.RunID != runID || s.Text != tc.text {
				t.Errorf("summary %+v: want runId %s text %q", s, runID, tc.text)
			}
			waitEnded(t, f.handle(t, runID))
		})
	}
}

func TestNodeHttpAgentAbortCancelsRun(t *testing.T) {
	root := nodeEnv(t)
	leakCheck(t)
	f := newFixture(t)
	tests := []struct {
		name string
		args []string
	}{
		// After a content event the child has written its pid file.
		{"after content", []string{"--abort-after-event", "TEXT_MESSAGE_CONTENT"}},
		{"after first event", []string{"--abort-after-first-event"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runID := "node-abort-" + itoa(i)
			s := runAgent(t, root, f.url(), append([]string{"--message", "slow", "--run-id", runID}, tc.args...)...)
			// HttpAgent reports its own abort as a local RUN_ERROR code "abort";
			// the server cannot write anything to an aborted request.
			if !s.Aborted || (s.Terminal != "" && s.Code != "abort") {
				t.Errorf("summary %+v: want an aborted run without a server terminal", s)
			}
			h := f.handle(t, runID)
			res := waitEnded(t, h)
			if res.Status != agentadaptor.StatusCancelled {
				t.Errorf("run status %s, want cancelled", res.Status)
			}
			pidFile := filepath.Join(f.adapter.pidDir, h.RunID()+".pid")
			if _, err := os.Stat(pidFile); err != nil {
				if i == 0 {
					t.Fatalf("no pid file after a content event: %v", err)
				}
				return // aborted before the shell ran its first line: nothing to check
			}
			if pid := f.adapter.pid(t, h.RunID()); !processGone(pid) {
				t.Errorf("child %d still exists after abortRun()", pid)
			}
		})
	}
}
