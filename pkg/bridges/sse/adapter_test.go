package sse_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/aguiverify"
	"github.com/seed0634/agentadaptor/internal/testkit/shellagent"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"

	"github.com/seed0634/agentadaptor/internal/testkit/ssetest"
)

// scenarios are shell scripts keyed by the exact prompt. Lines starting with
// '{' are StreamPayload JSON; other stdout lines are text deltas. Unknown
// prompts are echoed back as text.
var scenarios = map[string]string{
	"plain": `printf '%s\n' '{"kind":"text.end","message_id":"m1","text":"Hello from the agent."}'`,
	"streamed": `printf '%s\n' '{"kind":"text.start","message_id":"m1"}' '{"kind":"text.delta","message_id":"m1","delta":"Hello"}' \
		'{"kind":"text.delta","message_id":"m1","delta":", world"}' '{"kind":"text.end","message_id":"m1","text":"Hello, world"}'`,
	"tool": `printf '%s\n' '{"kind":"tool_call.start","tool_call_id":"call-1","tool_name":"search","message_id":"m1"}' \
		'{"kind":"tool_call.args","tool_call_id":"call-1","delta":"{\"q\":\"go\"}"}' '{"kind":"tool_call.end","tool_call_id":"call-1"}' \
		'{"kind":"tool_call.result","tool_call_id":"call-1","tool_result":"3 results"}' '{"kind":"text.end","message_id":"m2","text":"Found 3 results."}'`,
	"fail": `printf '%s\n' '{"kind":"text.delta","message_id":"m1","delta":"partial"}'; echo 'agent crashed' >&2; exit 3`,
	"custom": `printf '%s\n' '{"name":"scripted.note","raw":{"note":"hi","n":2}}' '{"name":"scripted.empty"}' \
		'{"kind":"usage","usage":{"input_tokens":10,"output_tokens":5}}' '{"kind":"text.end","message_id":"m1","text":"done"}'`,
	"reasoning": `printf '%s\n' '{"kind":"reasoning.start","message_id":"m1"}' '{"kind":"reasoning.delta","message_id":"m1","delta":"thinking"}' \
		'{"kind":"reasoning.end","message_id":"m1"}' '{"kind":"text.end","message_id":"m1","text":"answer"}'`,
	// many streams 300 deltas quickly.
	"many": `i=0; while [ $i -lt 300 ]; do printf '%s\n' '{"kind":"text.delta","message_id":"m1","delta":"x"}'; i=$((i+1)); done`,
	// slow writes its pid first, streams one delta and then sleeps until cancelled.
	"slow": `echo $$ > "$PIDFILE"; printf '%s\n' '{"kind":"text.delta","message_id":"m1","delta":"working"}'; exec sleep 30`,
}

// shAdapter is the test adapter (internal/testkit/shellagent) running the scenario
// scripts by prompt; unknown prompts are echoed back as text. Each run gets
// PIDFILE, the file in pidDir where the slow scenario writes its pid.
type shAdapter struct {
	*shellagent.Adapter
	pidDir string
}

// newAdapter returns a shAdapter; path, if not empty, replaces /bin/sh (a
// missing path makes the start fail).
func newAdapter(t *testing.T, path string) *shAdapter {
	a := &shAdapter{pidDir: t.TempDir()}
	a.Adapter = &shellagent.Adapter{
		AdapterName: "sh",
		Scripts:     scenarios,
		Script:      `printf '%s\n' "$1"`,
		PlainText:   true,
		Edit: func(req *agentadaptor.AdapterRequest, inv *agentadaptor.Invocation) {
			inv.Env = map[string]string{"PIDFILE": filepath.Join(a.pidDir, req.RunID+".pid")}
			if path != "" {
				inv.Path = path
			}
		},
	}
	return a
}

func (a *shAdapter) lastRequest(t *testing.T) agentadaptor.AdapterRequest {
	t.Helper()
	reqs := a.Requests()
	if len(reqs) == 0 {
		t.Fatal("the adapter saw no request")
	}
	return reqs[len(reqs)-1]
}

// pid returns the pid the slow scenario wrote for a run.
func (a *shAdapter) pid(t *testing.T, runID string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(a.pidDir, runID+".pid"))
	if err != nil {
		t.Fatalf("the child wrote no pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// fixture is a live handler over a real SDK with the shell adapter. It
// records every run the handler starts, by AG-UI runId.
type fixture struct {
	adapter *shAdapter
	sdk     *agentadaptor.SDK
	handler *sse.Handler
	srv     *httptest.Server

	mu   sync.Mutex
	runs map[string]*startedRun
}

// startedRun is a run the handler started, or one a test waits for:
// started is closed once h is set.
type startedRun struct {
	started chan struct{}
	h       *agentadaptor.RunHandle
}

func newFixture(t *testing.T, opts ...sse.Option) *fixture {
	t.Helper()
	return startFixture(t, newAdapter(t, ""), opts...)
}

// startFixture serves a handler over a new SDK with adapter a. opts come
// after the fixture's own WithOnRunStart: a test's hook replaces it.
func startFixture(t *testing.T, a *shAdapter, opts ...sse.Option) *fixture {
	t.Helper()
	f := &fixture{adapter: a, runs: map[string]*startedRun{}}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(f.adapter), agentadaptor.WithRunDefaults(
		agentadaptor.WithTempRoot(t.TempDir()), agentadaptor.WithWorkDir(t.TempDir()),
		agentadaptor.WithStreamLinger(200*time.Millisecond), agentadaptor.WithCancelGrace(5*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	f.sdk = sdk
	opts = append([]sse.Option{sse.WithOnRunStart(f.started)}, opts...)
	f.handler = sse.NewHandler(sdk, opts...)
	mux := http.NewServeMux()
	mux.Handle("/agui", f.handler)
	mux.Handle("POST /agui/runs/{runId}/cancel", f.handler.CancelHandler())
	mux.Handle("OPTIONS /agui/runs/{runId}/cancel", f.handler.CancelHandler())
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) url() string { return f.srv.URL + "/agui" }

// run returns the record of runID, creating it (not started) if needed.
func (f *fixture) run(runID string) *startedRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.runs[runID]
	if r == nil {
		r = &startedRun{started: make(chan struct{})}
		f.runs[runID] = r
	}
	return r
}

// started is the handler's WithOnRunStart hook.
func (f *fixture) started(runID string, h *agentadaptor.RunHandle) {
	f.mu.Lock()
	r := f.runs[runID]
	if r == nil || r.h != nil { // first sight, or a runId used again
		r = &startedRun{started: make(chan struct{})}
		f.runs[runID] = r
	}
	r.h = h
	f.mu.Unlock()
	close(r.started)
}

// handle waits until the run with the AG-UI runId has started.
func (f *fixture) handle(t *testing.T, runID string) *agentadaptor.RunHandle {
	t.Helper()
	r := f.run(runID)
	select {
	case <-r.started:
		return r.h
	case <-time.After(testenv.WaitTimeout):
		t.Fatalf("run %q never started", runID)
		return nil
	}
}

// waitAllEnded waits until every run the handler has started has ended.
func (f *fixture) waitAllEnded(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	var hs []*agentadaptor.RunHandle
	for _, r := range f.runs {
		if r.h != nil {
			hs = append(hs, r.h)
		}
	}
	f.mu.Unlock()
	for _, h := range hs {
		waitEnded(t, h)
	}
}

// waitEnded waits (generously) for the run to end and returns its result.
func waitEnded(t *testing.T, h *agentadaptor.RunHandle) *agentadaptor.RunResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.Wait(ctx)
	if err != nil {
		t.Fatalf("run %s did not end: %v", h.RunID(), err)
	}
	return res
}

// processGone reports whether no process with pid exists (it was reaped).
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// input is a RunAgentInput body with one user message.
func input(threadID, runID, text string) string {
	b, _ := json.Marshal(map[string]any{
		"threadId": threadID, "runId": runID, "state": map[string]any{}, "tools": []any{}, "context": []any{},
		"forwardedProps": map[string]any{},
		"messages":       []any{map[string]any{"id": "u1", "role": "user", "content": text}},
	})
	return string(b)
}

// runStream posts a run and returns the SSE body and its verified frames.
func runStream(t *testing.T, f *fixture, threadID, runID, prompt string) ([]byte, []aguiverify.Frame) {
	t.Helper()
	resp := ssetest.Post(t, f.url(), input(threadID, runID, prompt))
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	frames, err := aguiverify.Frames(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	if err := aguiverify.Verify(frames); err != nil {
		t.Fatalf("stream does not verify: %v\n%s", err, body)
	}
	return body, frames
}

// frameTypes returns each frame's event type.
func frameTypes(t *testing.T, frames []aguiverify.Frame) []string {
	t.Helper()
	out := make([]string, len(frames))
	for i, fr := range frames {
		out[i] = decode(t, fr)["type"].(string)
	}
	return out
}

func decode(t *testing.T, fr aguiverify.Frame) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(fr.Data, &m); err != nil {
		t.Fatalf("frame %s: %v", fr.ID, err)
	}
	return m
}

// leakCheck verifies, after every other cleanup of the test (servers
// closed), that no goroutine is left behind.
func leakCheck(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}
