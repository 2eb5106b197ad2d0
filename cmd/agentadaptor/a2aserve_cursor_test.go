package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
)

// fakeCursor writes an executable that stands in for the Cursor CLI (not
// installable here): it replays the adapter's pinned stream-json fixtures
// (pkg/adapters/cursor/testdata) — stream.jsonl when asked for partial
// output, error.jsonl for a prompt containing "fail", else text.jsonl —
// and records its argv, one argument a line, in the returned file.
func fakeCursor(t *testing.T) (bin, argvFile string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	fixtures := filepath.Join(root, "pkg", "adapters", "cursor", "testdata")
	dir := t.TempDir()
	bin, argvFile = filepath.Join(dir, "cursor-agent"), filepath.Join(dir, "argv")
	script := `#!/bin/sh
printf '%s\n' "$@" > '` + argvFile + `'
f=text.jsonl
for a; do
  last=$a
  [ "$a" = --stream-partial-output ] && f=stream.jsonl
done
case "$last" in *fail*) f=error.jsonl ;; esac
exec cat '` + fixtures + `'/"$f"
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, argvFile
}

// startA2AServeArgs runs `agentadaptor a2a serve` with args on a loopback port
// until the test ends, and returns it once it listens.
func startA2AServeArgs(t *testing.T, args ...string) *a2aServe {
	t.Helper()
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &a2aServe{stderr: &syncBuffer{}}
	code := make(chan int, 1)
	go func() {
		code <- dispatch(ctx, append([]string{"a2a", "serve", "--addr", "127.0.0.1:0"}, args...), io.Discard, pw)
		_ = pw.Close()
	}()
	ready, read := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		signalled := false
		for sc.Scan() {
			_, _ = s.stderr.Write([]byte(sc.Text() + "\n"))
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil && !signalled {
				s.cardURL, s.listen, signalled = m[1], m[2], true
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	var once sync.Once
	exit := -1
	s.stop = func() int {
		once.Do(func() { cancel(); exit = <-code; <-read })
		return exit
	}
	t.Cleanup(func() { s.stop() })
	select {
	case <-ready:
	case c := <-code:
		code <- c
		<-read
		t.Fatalf("a2a serve exited %d before listening:\n%s", c, s.stderr.String())
	}
	return s
}

// `agentadaptor a2a serve --adapter cursor` exposes the Cursor CLI as an A2A
// agent: the card names it, a message runs the CLI with the prompt as its
// last argument (partial output when streamed), and the CLI's answer or
// failure is the task's outcome (README, "a2a serve").
func TestA2AServeCursorAdapter(t *testing.T) {
	bin, argvFile := fakeCursor(t)
	s := startA2AServeArgs(t, "--adapter", "cursor", "--binary", bin, "--work-dir", t.TempDir())
	client := &http.Client{}
	defer client.CloseIdleConnections()
	hdr := map[string]string{"A2A-Version": "1.0"}

	_, _, card := s.do(t, client, httpCall{method: "GET", path: "/.well-known/agent-card.json"})
	var c struct{ Name string }
	if err := json.Unmarshal(card, &c); err != nil || c.Name != "agentadaptor-cursor" {
		t.Errorf("card name %q (%v): %s", c.Name, err, card)
	}
	send := func(method, text string) string {
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"message":{"messageId":"m-` + strings.ReplaceAll(text, " ", "-") +
			`","role":"ROLE_USER","parts":[{"text":"` + text + `"}]}}}`
		status, _, b := s.do(t, client, httpCall{method: "POST", path: "/a2a/jsonrpc", ct: "application/json", body: body, header: hdr})
		if status != 200 {
			t.Fatalf("%s: %d %s", method, status, b)
		}
		return string(b)
	}
	argv := func() []string {
		b, err := os.ReadFile(argvFile)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}

	// The answer the replayed fixture holds: its partial-output form when
	// the bridge asked the CLI for partial output.
	answer := func(a []string) string {
		if slices.Contains(a, "--stream-partial-output") {
			return "The tool said echo:ping."
		}
		return "I wrote a summary to summary.txt."
	}
	for _, method := range []string{"SendMessage", "SendStreamingMessage"} {
		out := send(method, "Summarize the README")
		a := argv()
		if a[len(a)-1] != "Summarize the README" || !slices.Contains(a, "--output-format") {
			t.Errorf("%s: cursor argv %q", method, a)
		}
		if !strings.Contains(out, "TASK_STATE_COMPLETED") || !strings.Contains(out, answer(a)) {
			t.Errorf("%s: %s", method, out)
		}
	}

	out := send("SendMessage", "please fail")
	if !strings.Contains(out, "TASK_STATE_FAILED") {
		t.Errorf("the CLI's failure is not the task's: %s", out)
	}
	if code := s.stop(); code != 0 {
		t.Errorf("exit %d:\n%s", code, s.stderr.String())
	}
}
