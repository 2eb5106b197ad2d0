package agentadaptor_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
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

// talker is a test adapter whose child is a /bin/sh script that the run
// talks to line by line: Converse writes say, reads lines until one is
// "done" (each other line becomes a text delta), then returns. Interrupt
// makes Converse write "stop".
type talker struct {
	script string
	say    string
	// bigWrite, when positive, makes Converse write that many bytes to a
	// child that does not read them.
	bigWrite int
	// convErr is returned by Converse after "done".
	convErr error
	// both also sets a Parser: an invalid invocation.
	both bool

	mu          sync.Mutex
	interrupted int
	seen        []string
}

func (a *talker) Name() string { return "talker" }

func (a *talker) Prepare(_ context.Context, req *agentadaptor.AdapterRequest) (*agentadaptor.Invocation, error) {
	inv := &agentadaptor.Invocation{Path: "/bin/sh", Args: []string{"-c", a.script, "talker", req.RunID}, Conversation: &talk{a: a, stop: make(chan struct{})}}
	if a.both {
		inv.Parser = nopParser{}
	}
	return inv, nil
}

type nopParser struct{}

func (nopParser) ParseLine([]byte, agentadaptor.Emitter) error { return nil }
func (nopParser) Finish(agentadaptor.ExitStatus, agentadaptor.Emitter) agentadaptor.Outcome {
	return agentadaptor.Outcome{}
}

type talk struct {
	a        *talker
	stop     chan struct{}
	stopOnce sync.Once
	text     strings.Builder
}

func (c *talk) Converse(ctx context.Context, rw agentadaptor.ConversationIO, emit agentadaptor.Emitter) error {
	if c.a.bigWrite > 0 {
		if _, err := rw.Stdin.Write(make([]byte, c.a.bigWrite)); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(rw.Stdin, c.a.say+"\n"); err != nil {
		return err
	}
	lines := make(chan string)
	over := make(chan struct{})
	defer close(over)
	// The reader ends when its reads fail: the SDK closes the line pipe
	// when Converse returns.
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(rw.Stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-over:
				return
			}
		}
	}()
	emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextStart, MessageID: "m"})
	stop := c.stop
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return errors.New("the child closed its stdout mid-conversation")
			}
			c.a.mu.Lock()
			c.a.seen = append(c.a.seen, l)
			c.a.mu.Unlock()
			if l == "done" {
				emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextEnd, MessageID: "m"})
				return c.a.convErr
			}
			c.text.WriteString(l)
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: "m", Delta: l})
		case <-stop:
			stop = nil
			if _, err := io.WriteString(rw.Stdin, "stop\n"); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *talk) Interrupt() {
	c.a.mu.Lock()
	c.a.interrupted++
	c.a.mu.Unlock()
	c.stopOnce.Do(func() { close(c.stop) })
}

func (c *talk) Finish(_ agentadaptor.ExitStatus, _ agentadaptor.Emitter) agentadaptor.Outcome {
	return agentadaptor.Outcome{Output: c.text.String(), SessionID: "talk-session"}
}

// echo answers "hello" with "hi" then "done", "stop" with "done"; it exits
// at EOF.
const echoScript = `while read -r l; do case "$l" in hello) echo hi; echo done;; stop) echo done;; esac; done`

func TestConversationCompletes(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a := &talker{script: echoScript, say: "hello"}
	ctx := testCtx(t)
	h, err := newSDK(t, a).Start(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	ps := adaptertest.Collect(ctx, t, h)
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCompleted || res.Output != "hi" || res.SessionID != "talk-session" {
		t.Fatalf("result %s %q %q %v", res.Status, res.Output, res.SessionID, res.Failure)
	}
	want := []string{"run.started", "text.start", "text.delta", "text.end", "run.finished"}
	if got := kinds(ps); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("kinds %v, want %v", got, want)
	}
	// RawStreams hold what the child wrote, never what the run wrote to it.
	if string(res.RawStreams.Stdout) != "hi\ndone\n" {
		t.Errorf("raw stdout %q", res.RawStreams.Stdout)
	}
}

// A child that does not exit when its stdin closes, and ignores SIGINT,
// with a grandchild in its group: once the conversation is over, the SDK
// ends the whole group (SIGINT after the grace, SIGKILL after another) and
// the run still completed: the work was done.
func TestConversationOverEndsStubbornGroup(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	script := `trap '' INT; sleep 1000 & echo $! > ` + pids + `; echo $$ >> ` + pids + `; read -r l; echo hi; echo done; while :; do sleep 1; done`
	a := &talker{script: script, say: "hello"}
	ctx := testCtx(t)
	res, err := newSDK(t, a).Run(ctx, "p", agentadaptor.WithCancelGrace(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentadaptor.StatusCompleted || res.Output != "hi" {
		t.Fatalf("status %s %v output %q", res.Status, res.Failure, res.Output)
	}
	for _, pid := range readPids(t, pids) {
		testenv.Poll(10*time.Second, func() bool { return !alive(pid) })
		if alive(pid) {
			t.Errorf("pid %d of the group survived the run", pid)
		}
	}
}

// Cancel asks the conversation to stop first (Interrupt), and the child,
// which ignores SIGINT, answers that politely: the run ends cancelled, and
// the SIGINT/SIGKILL sequence still ends the group afterwards.
func TestConversationInterruptThenSignals(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	marks := filepath.Join(dir, "marks")
	// The child says "ready" and waits; "stop" makes it say "done", after
	// which it stays (ignoring SIGINT) until SIGKILL.
	script := `trap 'echo INT >> ` + marks + `' INT; read -r l; echo ready; read -r l; echo "got $l" >> ` + marks + `; echo done; while :; do sleep 1; done`
	a := &talker{script: script, say: "hello"}
	ctx := testCtx(t)
	h, err := newSDK(t, a).Start(ctx, "p", agentadaptor.WithCancelGrace(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for p := range h.StreamEvents() {
		if p.Kind == agentadaptor.KindTextDelta && p.Delta == "ready" {
			break
		}
	}
	if err := h.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	rest := adaptertest.Collect(ctx, t, h)
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCancelled || rest[len(rest)-1].Kind != agentadaptor.KindRunCancelled {
		t.Fatalf("status %s, last %v", res.Status, rest[len(rest)-1].Kind)
	}
	a.mu.Lock()
	n := a.interrupted
	a.mu.Unlock()
	if n != 1 {
		t.Errorf("Interrupt called %d times, want 1", n)
	}
	data, _ := os.ReadFile(marks)
	if !strings.HasPrefix(string(data), "got stop\n") {
		t.Errorf("the child did not get the polite stop before any signal: %q", data)
	}
}

// A conversation that never answers the interrupt: the group gets SIGINT
// after the grace, the child dies, Converse sees EOF, the run is cancelled.
func TestConversationInterruptIgnored(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	script := `read -r l; echo ready; while :; do sleep 1; done`
	a := &talker{script: script, say: "hello"}
	ctx := testCtx(t)
	h, err := newSDK(t, a).Start(ctx, "p", agentadaptor.WithCancelGrace(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for p := range h.StreamEvents() {
		if p.Kind == agentadaptor.KindTextDelta {
			break
		}
	}
	if err := h.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCancelled {
		t.Fatalf("status %s %v", res.Status, res.Failure)
	}
}

// A child that never reads its stdin while the conversation writes more
// than a pipe holds: cancelling still ends the run (the blocked write fails
// when the child is gone), and nothing leaks.
func TestConversationWriterToDeafChild(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a := &talker{script: `echo ready; while :; do sleep 1; done`, say: "hello", bigWrite: 1 << 20}
	ctx := testCtx(t)
	h, err := newSDK(t, a).Start(ctx, "p", agentadaptor.WithCancelGrace(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	<-h.StreamEvents() // run.started
	if err := h.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCancelled {
		t.Fatalf("status %s", res.Status)
	}
}

// A stdout line over the run's line limit is skipped with a diagnostic and
// never reaches the conversation.
func TestConversationLineLimit(t *testing.T) {
	long := strings.Repeat("x", 5000)
	a := &talker{script: `read -r l; echo ` + long + `; echo hi; echo done; read -r l`, say: "hello"}
	ctx := testCtx(t)
	h, err := newSDK(t, a).Start(ctx, "p", agentadaptor.WithLineLimit(1000))
	if err != nil {
		t.Fatal(err)
	}
	ps := adaptertest.Collect(ctx, t, h)
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCompleted || res.Output != "hi" {
		t.Fatalf("status %s output %q", res.Status, res.Output)
	}
	diag := false
	for _, p := range ps {
		if p.Kind == agentadaptor.KindDiagnostic && p.Diagnostic.Code == agentadaptor.DiagLineTooLong {
			diag = true
		}
	}
	if !diag {
		t.Errorf("no line_too_long diagnostic: %v", kinds(ps))
	}
	for _, l := range a.seen {
		if len(l) > 1000 {
			t.Errorf("the conversation saw a %d-byte line", len(l))
		}
	}
}

func TestConversationFailures(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct {
		name string
		a    *talker
		code agentadaptor.FailureCode
	}{
		// The child dies mid-conversation: its exit decides.
		{"child exits", &talker{script: `read -r l; echo hi; echo oops >&2; exit 3`, say: "hello"}, agentadaptor.FailureExit},
		// Converse reports a protocol failure.
		{"converse error", &talker{script: echoScript, say: "hello", convErr: errors.New("bad answer")}, agentadaptor.FailureProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := newSDK(t, tc.a).Run(ctx, "p")
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != agentadaptor.StatusFailed || res.Failure.Code != tc.code {
				t.Fatalf("status %s failure %+v, want %s", res.Status, res.Failure, tc.code)
			}
		})
	}
	_, err := newSDK(t, &talker{script: echoScript, say: "hello", both: true}).Run(ctx, "p")
	var se *agentadaptor.StartError
	if !errors.As(err, &se) || se.Failure.Code != agentadaptor.FailureInvalidConfig {
		t.Errorf("parser and conversation both set: %v, want invalid_config", err)
	}
}

func readPids(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for f := range strings.FieldsSeq(string(data)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(fmt.Errorf("pid file %q: %w", data, err))
		}
		out = append(out, n)
	}
	return out
}
