package mcptool

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// fakeTimers is an afterFunc whose timers fire only when the test says.
type fakeTimers struct {
	mu    sync.Mutex
	armed []*fakeTimer
}

type fakeTimer struct {
	d       time.Duration
	f       func()
	stopped bool
	fired   bool
}

func (ft *fakeTimers) after(d time.Duration, f func()) func() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	t := &fakeTimer{d: d, f: f}
	ft.armed = append(ft.armed, t)
	return func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		if t.fired || t.stopped {
			return false
		}
		t.stopped = true
		return true
	}
}

// waiting returns the timers armed and neither fired nor stopped.
func (ft *fakeTimers) waiting() []*fakeTimer {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	var out []*fakeTimer
	for _, t := range ft.armed {
		if !t.fired && !t.stopped {
			out = append(out, t)
		}
	}
	return out
}

// fire runs the one waiting timer's function (on this goroutine).
func (ft *fakeTimers) fire(t *testing.T) {
	t.Helper()
	w := ft.waiting()
	if len(w) != 1 {
		t.Fatalf("%d timers waiting, want 1", len(w))
	}
	ft.mu.Lock()
	w[0].fired = true
	ft.mu.Unlock()
	w[0].f()
}

type sent struct {
	msg string
	n   float64
}

func newTestProgress(ft *fakeTimers, notify func(context.Context, string, float64)) *progress {
	return &progress{ctx: context.Background(), notify: notify, interval: 7 * time.Second, after: ft.after}
}

func ev(kind delegation.DelegationEventKind, status string) delegation.DelegationEvent {
	return delegation.DelegationEvent{Kind: kind, AgentKey: "research", AgentName: "Research Agent", Status: status}
}

// A burst of lines is one notification, the newest line, sent when the
// interval has passed; the same line is not sent twice; the terminal state
// sends nothing; stop drops a waiting line; nothing is left running.
func TestProgressCoalescesLines(t *testing.T) {
	defer goleak.VerifyNone(t)
	ft := &fakeTimers{}
	var mu sync.Mutex
	var got []sent
	p := newTestProgress(ft, func(_ context.Context, msg string, n float64) {
		mu.Lock()
		got = append(got, sent{msg, n})
		mu.Unlock()
	})
	sentSoFar := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprint(got)
	}
	p.event(ev(delegation.DelegationStarted, ""))
	p.event(ev(delegation.DelegationStatus, "submitted"))
	p.event(ev(delegation.DelegationStatus, "working"))
	p.event(ev(delegation.DelegationTextStart, ""))
	if w := ft.waiting(); len(w) != 1 || w[0].d != 7*time.Second {
		t.Fatalf("after a burst: %d timers waiting, want one of the interval", len(w))
	}
	if s := sentSoFar(); s != "[]" {
		t.Fatalf("sent %s before the interval", s)
	}
	ft.fire(t)
	if s := sentSoFar(); s != "[{Research Agent is writing 1}]" {
		t.Fatalf("sent %s, want the newest line once", s)
	}
	if w := ft.waiting(); len(w) != 0 {
		t.Fatalf("%d timers armed with nothing to send", len(w))
	}
	// The same line again is not sent again.
	p.event(ev(delegation.DelegationTextStart, ""))
	ft.fire(t)
	// A new line goes one interval later.
	p.event(ev(delegation.DelegationInputRequired, ""))
	ft.fire(t)
	if s := sentSoFar(); s != "[{Research Agent is writing 1} {Research Agent needs input from the user 2}]" {
		t.Fatalf("sent %s", s)
	}
	// Terminal states have no line; a waiting line is dropped by stop.
	p.event(ev(delegation.DelegationStatus, "working"))
	p.event(ev(delegation.DelegationFinished, ""))
	p.event(ev(delegation.DelegationFailed, ""))
	p.event(ev(delegation.DelegationCancelled, ""))
	p.stop()
	if w := ft.waiting(); len(w) != 0 {
		t.Fatalf("%d timers still armed after stop", len(w))
	}
	p.event(ev(delegation.DelegationStatus, "working"))
	if w := ft.waiting(); len(w) != 0 {
		t.Fatal("a line after stop armed a timer")
	}
	if s := sentSoFar(); s != "[{Research Agent is writing 1} {Research Agent needs input from the user 2}]" {
		t.Fatalf("sent %s after stop", s)
	}
}

// A line that comes while one is being sent waits for the next interval,
// and stop waits for the line being sent.
func TestProgressStopWaitsForTheLineBeingSent(t *testing.T) {
	defer goleak.VerifyNone(t)
	ft := &fakeTimers{}
	sending, release := make(chan struct{}), make(chan struct{})
	var n atomic.Int32
	var sendDone atomic.Bool
	p := newTestProgress(ft, func(_ context.Context, msg string, _ float64) {
		if n.Add(1) == 1 {
			close(sending)
			<-release
			sendDone.Store(true)
		}
	})
	p.event(ev(delegation.DelegationStarted, ""))
	w := ft.waiting()
	if len(w) != 1 {
		t.Fatalf("%d timers waiting", len(w))
	}
	ft.mu.Lock()
	w[0].fired = true
	ft.mu.Unlock()
	fired := make(chan struct{})
	go func() {
		defer close(fired)
		w[0].f()
	}()
	<-sending
	p.event(ev(delegation.DelegationStatus, "working")) // while the first is being sent
	stopped := make(chan bool)
	go func() {
		p.stop()
		stopped <- sendDone.Load()
	}()
	for { // stop has begun: it must now wait for the send
		p.mu.Lock()
		began := p.stopped
		p.mu.Unlock()
		if began {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	<-fired
	if !<-stopped {
		t.Error("stop returned while a notification was being sent")
	}
	if n := n.Load(); n != 1 {
		t.Errorf("%d notifications, want 1 (the line that came during the send was dropped by stop)", n)
	}
	if w := ft.waiting(); len(w) != 0 {
		t.Errorf("%d timers armed after stop", len(w))
	}
}

// The terminal states have no progress line (the tool result follows and
// says how the delegation ended): they arm no timer.
func TestProgressNoLineForTerminalStates(t *testing.T) {
	ft := &fakeTimers{}
	p := newTestProgress(ft, func(context.Context, string, float64) { t.Error("a notification was sent") })
	for _, k := range []delegation.DelegationEventKind{delegation.DelegationFinished, delegation.DelegationFailed, delegation.DelegationCancelled} {
		p.event(ev(k, ""))
	}
	if len(ft.armed) != 0 {
		t.Errorf("%d timers armed for terminal states", len(ft.armed))
	}
	p.stop()
}

// Without a progress token (or a session) there is nothing to send and no
// timer is armed.
func TestProgressWithoutTokenArmsNothing(t *testing.T) {
	ft := &fakeTimers{}
	p := &progress{ctx: context.Background(), interval: time.Second, after: ft.after}
	p.event(ev(delegation.DelegationStarted, ""))
	p.stop()
	if len(ft.armed) != 0 {
		t.Errorf("%d timers armed without a progress token", len(ft.armed))
	}
}
