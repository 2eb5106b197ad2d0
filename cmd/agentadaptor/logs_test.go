package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serveWith runs `agentadaptor serve args...` (the embedded demo unless a
// --config says otherwise) on a loopback port, runs one chat turn with
// runId, stops serve and returns everything it wrote to stderr.
func serveWith(t *testing.T, runID string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	stderr := &syncBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- dispatch(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), io.Discard, pw)
		_ = pw.Close()
	}()
	ready := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			_, _ = stderr.Write([]byte(sc.Text() + "\n"))
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				ready <- m[1]
			}
		}
	}()
	var base string
	select {
	case base = <-ready:
	case c := <-code:
		t.Fatalf("serve exited %d before listening:\n%s", c, stderr.String())
	}
	body := `{"threadId":"t-logs","runId":"` + runID + `","messages":[{"id":"u1","role":"user","content":"penguins"}]}`
	resp, err := http.Post(base+"/agui", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	stream, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(stream), "subagent.finished") {
		t.Fatalf("the demo run: %d %s", resp.StatusCode, stream)
	}
	cancel()
	if c := <-code; c != 0 {
		t.Fatalf("serve exited %d:\n%s", c, stderr.String())
	}
	<-read
	http.DefaultClient.CloseIdleConnections()
	return stderr.String()
}

// serve writes its log records as JSON lines with --log-format json or
// the config's log_format: json (the flag wins); each parses, and a run's
// delegation lines carry run_id, the runId the client sent, and the SDK's
// id as sdk_run_id. Its own status lines stay plain text.
func TestServeLogFormat(t *testing.T) {
	dir := t.TempDir()
	config := func(body string) string {
		p := filepath.Join(dir, strings.ReplaceAll(body, " ", "")+".yaml")
		if err := os.WriteFile(p, []byte(body+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		name string
		args []string
		json bool
	}{
		{"flag", []string{"--log-format", "json"}, true},
		{"config", []string{"--config", config("log_format: json")}, true},
		{"the flag wins", []string{"--config", config("log_format: json"), "--log-format", "text"}, false},
		{"default", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runID := "run-logs-" + strings.ReplaceAll(tt.name, " ", "-")
			out := serveWith(t, runID, tt.args...)
			named := false
			for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
				if strings.HasPrefix(line, "agentadaptor serve: ") {
					continue // a status line
				}
				if !tt.json {
					if strings.HasPrefix(line, "{") {
						t.Fatalf("a JSON line in text format: %s", line)
					}
					named = named || strings.Contains(line, " run_id="+runID+" sdk_run_id=run-")
					continue
				}
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("a log line is not JSON: %q", line)
				}
				if id, ok := rec["run_id"]; ok && id != runID {
					t.Errorf("run_id %v is not the client's runId: %s", id, line)
				}
				sdk, _ := rec["sdk_run_id"].(string)
				named = named || (rec["run_id"] == runID && strings.HasPrefix(sdk, "run-") && sdk != runID)
			}
			if !named {
				t.Fatalf("no log line names the run with run_id and sdk_run_id:\n%s", out)
			}
		})
	}
	t.Run("an unknown format", func(t *testing.T) {
		var stderr syncBuffer
		if code := dispatch(context.Background(), []string{"serve", "--log-format", "xml"}, io.Discard, &stderr); code != 2 ||
			!strings.Contains(stderr.String(), `--log-format "xml": must be text or json`) {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		var a2aStderr syncBuffer
		if code := dispatch(context.Background(), []string{"a2a", "serve", "--adapter", "scripted", "--scenario", "x.yaml", "--log-format", "xml"}, io.Discard, &a2aStderr); code != 2 ||
			!strings.Contains(a2aStderr.String(), `--log-format "xml"`) {
			t.Fatalf("a2a serve: exit %d: %s", code, a2aStderr.String())
		}
	})
}
