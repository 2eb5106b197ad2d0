package agentadaptor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"

	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
)

func TestRunCompletesWithOrderedStream(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	sdk := newSDK(t, shell(textScript("hello world")))
	h, err := sdk.Start(ctx, "hi", agentadaptor.WithStreaming(), agentadaptor.WithSessionKey("thread-1"))
	if err != nil {
		t.Fatal(err)
	}
	ps := adaptertest.Collect(ctx, t, h)
	want := []string{"run.started", "text.start", "text.delta", "text.end", "run.finished"}
	if got := kinds(ps); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("kinds = %v, want %v", got, want)
	}
	for i, p := range ps {
		if p.Seq != uint64(i+1) || p.RunID != h.RunID() {
			t.Errorf("payload %d: seq %d run %q", i, p.Seq, p.RunID)
		}
	}
	res, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentadaptor.StatusCompleted || res.Output != "hello world" || res.SessionID != "shell-session" || res.ExitCode != 0 {
		t.Fatalf("result = %+v", res)
	}
	if !strings.Contains(string(res.RawStreams.Stdout), "hello world") {
		t.Errorf("RawStreams.Stdout misses the child's output: %q", res.RawStreams.Stdout)
	}
	if res.Timings.Started.IsZero() || res.Timings.Ended.Before(res.Timings.Exited) {
		t.Errorf("timings = %+v", res.Timings)
	}
}

func TestRunStatuses(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		opts     []agentadaptor.RunOption
		cancel   bool
		status   agentadaptor.RunStatus
		code     agentadaptor.FailureCode
		terminal agentadaptor.StreamKind
	}{
		{"exit zero", "true", nil, false, agentadaptor.StatusCompleted, "", agentadaptor.KindRunFinished},
		{"exit non-zero", "echo boom >&2; exit 3", nil, false, agentadaptor.StatusFailed, agentadaptor.FailureExit, agentadaptor.KindRunFailed},
		{"timeout", "sleep 30", []agentadaptor.RunOption{agentadaptor.WithTimeout(200 * time.Millisecond)}, false, agentadaptor.StatusFailed, agentadaptor.FailureTimeout, agentadaptor.KindRunFailed},
		{"cancel", "sleep 30", nil, true, agentadaptor.StatusCancelled, agentadaptor.FailureCancelled, agentadaptor.KindRunCancelled},
		{"sigint ignored until kill", "trap '' INT; sleep 30", []agentadaptor.RunOption{agentadaptor.WithCancelGrace(100 * time.Millisecond)}, true, agentadaptor.StatusCancelled, agentadaptor.FailureCancelled, agentadaptor.KindRunCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			ctx := testCtx(t)
			sdk := newSDK(t, shell(tt.script))
			h, err := sdk.Start(ctx, "x", tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if tt.cancel {
				if err := h.Cancel(ctx); err != nil {
					t.Fatal(err)
				}
			}
			ps := adaptertest.Collect(ctx, t, h)
			res, _ := h.Wait(ctx)
			if res.Status != tt.status {
				t.Fatalf("status %s (%v), want %s", res.Status, res.Failure, tt.status)
			}
			if tt.code != "" && (res.Failure == nil || res.Failure.Code != tt.code) {
				t.Fatalf("failure %v, want code %s", res.Failure, tt.code)
			}
			if last := ps[len(ps)-1]; last.Kind != tt.terminal {
				t.Fatalf("terminal %s, want %s", last.Kind, tt.terminal)
			}
			if tt.code == agentadaptor.FailureExit && !strings.Contains(res.Failure.Message, "boom") {
				t.Errorf("exit failure should quote stderr: %q", res.Failure.Message)
			}
			if tt.code != "" && !errors.Is(res.Err(), &agentadaptor.Failure{Code: tt.code}) {
				t.Errorf("errors.Is(res.Err(), code %s) = false", tt.code)
			}
		})
	}
}

func TestParentContextCancelsRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	sdk := newSDK(t, shell("sleep 30"))
	ctx, cancel := context.WithCancel(context.Background())
	h, err := sdk.Start(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	res, err := h.Wait(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentadaptor.StatusCancelled {
		t.Fatalf("status %s", res.Status)
	}
}

func TestCancelKillsWholeProcessGroup(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	// The child starts a grandchild that ignores SIGINT and then waits.
	script := fmt.Sprintf(`(trap '' INT; sleep 300) & echo $! > %s; echo '{"kind":"text.start","message_id":"m"}'; wait`, pidFile)
	sdk := newSDK(t, shell(script))
	h, err := sdk.Start(ctx, "x", agentadaptor.WithCancelGrace(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for p := range h.StreamEvents() {
		if p.Kind == agentadaptor.KindTextStart {
			break
		}
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if !alive(pid) {
		t.Fatalf("grandchild %d not running before cancel", pid)
	}
	if err := h.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.WaitUntil(t, "grandchild to be gone", func() bool { return !alive(pid) })
	adaptertest.Collect(ctx, t, h)
}

func TestLingeringGrandchildIsReapedAfterNormalExit(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The grandchild keeps stdout open; the leader exits at once.
	script := fmt.Sprintf(`sleep 300 & echo $! > %s; exit 0`, pidFile)
	sdk := newSDK(t, shell(script))
	res, err := sdk.Run(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("status %s: %v", res.Status, res.Failure)
	}
	data, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	testenv.WaitUntil(t, "grandchild to be gone", func() bool { return pid > 0 && !alive(pid) })
}

func TestOutputLineHandling(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	long := strings.Repeat("x", 5000)
	script := strings.Join([]string{
		"echo 'this is not json'",
		"printf '%s\\n' " + long,
		textScript("after"),
		"printf 'no newline at the end'",
	}, "; ")
	sdk := newSDK(t, shell(script))
	h, err := sdk.Start(ctx, "x", agentadaptor.WithLineLimit(1000))
	if err != nil {
		t.Fatal(err)
	}
	ps := adaptertest.Collect(ctx, t, h)
	var diags []string
	sawText := false
	for _, p := range ps {
		if p.Kind == agentadaptor.KindDiagnostic {
			diags = append(diags, p.Diagnostic.Code)
		}
		if p.Kind == agentadaptor.KindTextEnd && p.Text == "after" {
			sawText = true
		}
	}
	want := []string{agentadaptor.DiagMalformedLine, agentadaptor.DiagLineTooLong, agentadaptor.DiagMalformedLine}
	if strings.Join(diags, ",") != strings.Join(want, ",") {
		t.Fatalf("diagnostics = %v, want %v", diags, want)
	}
	if !sawText {
		t.Fatalf("the valid line after the oversized one was lost: %v", kinds(ps))
	}
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("status %s", res.Status)
	}
}

func TestRawStreamsAreCapped(t *testing.T) {
	ctx := testCtx(t)
	sdk := newSDK(t, shell(`i=0; while [ $i -lt 200 ]; do echo '{"kind":"usage"}'; echo errerrerrerr >&2; i=$((i+1)); done`))
	res, err := sdk.Run(ctx, "x", agentadaptor.WithRawStreamLimit(100))
	if err != nil {
		t.Fatal(err)
	}
	rs := res.RawStreams
	if len(rs.Stdout) != 100 || !rs.StdoutTruncated || len(rs.Stderr) != 100 || !rs.StderrTruncated {
		t.Fatalf("raw streams: %d/%v %d/%v", len(rs.Stdout), rs.StdoutTruncated, len(rs.Stderr), rs.StderrTruncated)
	}
}

func TestSlowConsumerDropsOnlyDeltas(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	script := `echo '{"kind":"text.start","message_id":"m"}'; i=0; while [ $i -lt 3000 ]; do echo '{"kind":"text.delta","message_id":"m","delta":"x"}'; i=$((i+1)); done; echo '{"kind":"tool_call.start","tool_call_id":"t1","tool_name":"x"}'; echo '{"kind":"text.end","message_id":"m"}'`
	sdk := newSDK(t, shell(script))
	h, err := sdk.Start(ctx, "x", agentadaptor.WithStreamBuffer(50))
	if err != nil {
		t.Fatal(err)
	}
	// Do not read until the run is over: the child must not block.
	if _, err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	ps := adaptertest.Collect(ctx, t, h)
	dropped, deltas := 0, 0
	seen := map[agentadaptor.StreamKind]bool{}
	for _, p := range ps {
		seen[p.Kind] = true
		switch p.Kind {
		case agentadaptor.KindStreamDropped:
			dropped += p.Dropped
		case agentadaptor.KindTextDelta:
			deltas++
		}
	}
	if dropped == 0 || dropped+deltas != 3000 {
		t.Fatalf("dropped %d + delivered %d deltas, want 3000 with some dropped", dropped, deltas)
	}
	for _, k := range []agentadaptor.StreamKind{agentadaptor.KindRunStarted, agentadaptor.KindTextStart, agentadaptor.KindToolCallStart, agentadaptor.KindTextEnd, agentadaptor.KindRunFinished} {
		if !seen[k] {
			t.Errorf("%s was dropped; only deltas may be", k)
		}
	}
}

func TestAbandonedConsumerDoesNotLeak(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	// More payloads than the stream's channel holds (none droppable), so
	// the stream's dispatcher blocks on a reader that never comes.
	script := `i=0; while [ $i -lt 200 ]; do echo '{"kind":"tool_call.start","tool_call_id":"t","tool_name":"x"}'; i=$((i+1)); done`
	sdk := newSDK(t, shell(script))
	h, err := sdk.Start(ctx, "x", agentadaptor.WithStreamLinger(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// Nobody reads: after the linger the stream gives up on the rest,
	// closes the channel and its goroutine ends.
	testenv.WaitUntil(t, "the abandoned stream's goroutine to end", func() bool { return goleak.Find() == nil })
	ps := adaptertest.Collect(ctx, t, h)
	if len(ps) >= 202 || len(ps) > 0 && ps[len(ps)-1].Kind.Terminal() {
		t.Fatalf("got %d payloads ending with %s; want the channel closed early, without the terminal", len(ps), ps[len(ps)-1].Kind)
	}
}

func TestHardCapKeepsTerminal(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	script := `i=0; while [ $i -lt 500 ]; do echo '{"kind":"tool_call.start","tool_call_id":"t","tool_name":"x"}'; i=$((i+1)); done`
	sdk := newSDK(t, shell(script))
	h, err := sdk.Start(ctx, "x", agentadaptor.WithStreamBuffer(10), agentadaptor.WithStreamHardCap(100))
	if err != nil {
		t.Fatal(err)
	}
	h.Wait(ctx)
	ps := adaptertest.Collect(ctx, t, h)
	// Bound: the hard cap, the channel's buffer (64) and one payload in
	// hand, a drop marker and the terminal.
	if len(ps) > 100+64+1+2 {
		t.Fatalf("%d payloads queued, want at most hard cap + channel buffer + marker + terminal", len(ps))
	}
	if ps[len(ps)-1].Kind != agentadaptor.KindRunFinished || ps[len(ps)-2].Kind != agentadaptor.KindStreamDropped {
		t.Fatalf("tail = %v", kinds(ps[len(ps)-2:]))
	}
}

func TestConcurrentRuns(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	sdk := newSDK(t, shell(textScript("concurrent")))
	var wg sync.WaitGroup
	ids := sync.Map{}
	for range 50 {
		wg.Go(func() {
			h, err := sdk.Start(ctx, "x", agentadaptor.WithStreaming())
			if err != nil {
				t.Error(err)
				return
			}
			if _, dup := ids.LoadOrStore(h.RunID(), true); dup {
				t.Errorf("duplicate run id %s", h.RunID())
			}
			ps := adaptertest.Collect(ctx, t, h)
			for _, p := range ps {
				if p.RunID != h.RunID() {
					t.Errorf("cross-talk: %s in %s", p.RunID, h.RunID())
				}
			}
			res, _ := h.Wait(ctx)
			if res.Status != agentadaptor.StatusCompleted {
				t.Errorf("run %s: %s", h.RunID(), res.Status)
			}
		})
	}
	wg.Wait()
}
