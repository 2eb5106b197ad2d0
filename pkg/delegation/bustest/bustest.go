package bustest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// Wait bounds how long a check waits for a publisher to return or a
// subscription to deliver or end before it fails: generous, so that a
// slow or loaded machine never fails a conforming bus.
const Wait = time.Minute

// Flood is how many events the bound checks publish to a subscriber that
// never reads, each with FloodText bytes of text: more than a bus may hold
// for one subscriber by count (delegation.DefaultMaxQueued) and by size
// (delegation.DefaultMaxQueuedBytes). A bus whose subscribers hold more is
// not bounded as docs/design.md#the-bus requires.
const (
	Flood     = 4 * delegation.DefaultMaxQueued
	FloodText = 1 << 10
)

// Backlog is how many statuses a check publishes before a run's first
// subscriber: more than a bus keeps (MemoryBus keeps 1,024), so that its
// drop markers show.
const Backlog = 3000

// Run checks every guarantee of an EventBus on fresh buses from newBus,
// one per check, each a subtest. The direct checks run when the bus is a
// delegation.DirectSubscriber, the inline ones when it is a
// delegation.InlineSubscriber, and are skipped otherwise. The checks expect
// subscribers with the default bounds of delegation.SubscriptionOptions: a
// bus whose subscribers hold less disconnects them sooner than these
// checks allow.
func Run(t *testing.T, newBus func() delegation.EventBus) {
	t.Helper()
	checks := []struct {
		name  string
		check func(*testing.T, delegation.EventBus)
	}{
		{"OrderPerRun", orderPerRun},
		{"SeqIncreasesUnderConcurrentPublishers", concurrentPublishers},
		{"BacklogBeforeTheFirstSubscriber", backlog},
		{"StatusDeduplication", statusDeduplication},
		{"CloseRun", closeRun},
		{"SlowSubscriberText", slowSubscriberText},
		{"PublisherNeverWaitsAndSubscribersAreBounded", boundedSubscribers},
		{"ContextAndCloseEndASubscription", contextAndClose},
		{"DirectSubscriptionIsLossless", directLossless},
		{"DirectSubscriptionEnds", directEnds},
		{"InlineReaderCalledWherePublished", inlineWherePublished},
		{"InlineReaderIsLossless", inlineLossless},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) { c.check(t, newBus()) })
	}
}

func status(runID, del, text string) delegation.DelegationEvent {
	return delegation.DelegationEvent{RunID: runID, DelegationID: del, AgentKey: "agent", Protocol: delegation.ProtocolA2A,
		Kind: delegation.DelegationStatus, Status: "working", Text: text}
}

func event(runID, del string, k delegation.DelegationEventKind) delegation.DelegationEvent {
	return delegation.DelegationEvent{RunID: runID, DelegationID: del, AgentKey: "agent", Protocol: delegation.ProtocolA2A, Kind: k}
}

// collect reads s until it ends, within Wait.
func collect(t *testing.T, s *delegation.Subscription) []delegation.DelegationEvent {
	t.Helper()
	deadline := time.NewTimer(Wait)
	defer deadline.Stop()
	var out []delegation.DelegationEvent
	if s.C == nil { // a direct subscription
		for {
			ev, ok, end := s.TryNext()
			switch {
			case end:
				return out
			case ok:
				out = append(out, ev)
				continue
			}
			select {
			case <-s.Ready():
			case <-deadline.C:
				t.Fatalf("the direct subscription did not end within %s (%d events read)", Wait, len(out))
			}
		}
	}
	for {
		select {
		case ev, ok := <-s.C:
			if !ok {
				return out
			}
			out = append(out, ev)
		case <-deadline.C:
			t.Fatalf("the subscription did not end within %s (%d events read)", Wait, len(out))
		}
	}
}

// returns runs f and fails when it does not return within Wait: a
// publisher that blocks.
func returns(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(Wait):
		t.Fatalf("%s did not return within %s: a publisher waited for a subscriber", what, Wait)
	}
}

// increasing fails unless the Seq of evs strictly increases.
func increasing(t *testing.T, what string, evs []delegation.DelegationEvent) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq <= evs[i-1].Seq {
			t.Fatalf("%s: Seq %d after %d at event %d: Seq must strictly increase per run", what, evs[i].Seq, evs[i-1].Seq, i)
		}
	}
}

// dropped returns the count a stream.dropped marker carries (an int, or a
// float64 when a bus decoded it from JSON), and whether ev is one.
func dropped(ev delegation.DelegationEvent) (int, bool) {
	if ev.Kind != delegation.DelegationStatus || ev.Status != delegation.StatusStreamDropped {
		return 0, false
	}
	switch n := ev.Raw["dropped"].(type) {
	case int:
		return n, true
	case float64:
		return int(n), true
	}
	return -1, true
}

// orderPerRun: a subscriber sees its run's events only, in publish order,
// with Seq strictly increasing.
func orderPerRun(t *testing.T, bus delegation.EventBus) {
	ctx := context.Background()
	a, b := bus.SubscribeRun(ctx, "run-a"), bus.SubscribeRun(ctx, "run-b")
	const n = 300
	for i := range n {
		bus.Publish(status("run-a", "del-1", fmt.Sprint("a", i)))
		bus.Publish(status("run-b", "del-1", fmt.Sprint("b", i)))
	}
	bus.CloseRun("run-a")
	bus.CloseRun("run-b")
	for _, c := range []struct {
		run, prefix string
		sub         *delegation.Subscription
	}{{"run-a", "a", a}, {"run-b", "b", b}} {
		got := collect(t, c.sub)
		if len(got) != n {
			t.Fatalf("%s: %d events, want %d", c.run, len(got), n)
		}
		for i, ev := range got {
			if ev.RunID != c.run || ev.Text != fmt.Sprint(c.prefix, i) {
				t.Fatalf("%s: event %d is %s %q, want %q of %s: events out of order or of another run", c.run, i, ev.RunID, ev.Text, fmt.Sprint(c.prefix, i), c.run)
			}
		}
		increasing(t, c.run, got)
	}
}

// concurrentPublishers: events published at once by several goroutines
// reach a subscriber with Seq strictly increasing, each goroutine's in its
// order.
func concurrentPublishers(t *testing.T, bus delegation.EventBus) {
	sub := bus.SubscribeRun(context.Background(), "run")
	const publishers, each = 4, 250
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for i := range each {
				bus.Publish(status("run", fmt.Sprint("del-", p), strconv.Itoa(i)))
			}
		})
	}
	returns(t, "Publish from concurrent goroutines", wg.Wait)
	bus.CloseRun("run")
	got := collect(t, sub)
	if len(got) != publishers*each {
		t.Fatalf("%d events, want %d", len(got), publishers*each)
	}
	increasing(t, "concurrent publishers", got)
	next := map[string]int{}
	for _, ev := range got {
		if ev.Text != strconv.Itoa(next[ev.DelegationID]) {
			t.Fatalf("%s: %q after %d of its events: a publisher's events out of order", ev.DelegationID, ev.Text, next[ev.DelegationID])
		}
		next[ev.DelegationID]++
	}
}

// backlog: what was published before a run's first subscriber reaches it,
// every critical event in order, and what the backlog dropped is marked
// with its count.
func backlog(t *testing.T, bus delegation.EventBus) {
	bus.Publish(event("run", "del-1", delegation.DelegationStarted))
	for i := range Backlog {
		bus.Publish(status("run", "del-1", strconv.Itoa(i)))
	}
	bus.Publish(event("run", "del-1", delegation.DelegationInputRequired))
	bus.Publish(event("run", "del-2", delegation.DelegationStarted))
	bus.Publish(event("run", "del-2", delegation.DelegationFinished))
	bus.Publish(event("run", "del-1", delegation.DelegationFinished))
	sub := bus.SubscribeRun(context.Background(), "run")
	bus.CloseRun("run")
	got := collect(t, sub)
	var critical []string
	kept, marked, last := 0, 0, -1
	for i, ev := range got {
		if i > 0 && ev.Seq < got[i-1].Seq {
			t.Fatalf("Seq went down in the backlog: %d after %d", ev.Seq, got[i-1].Seq)
		}
		if n, ok := dropped(ev); ok {
			if n <= 0 || ev.DelegationID != "del-1" {
				t.Fatalf("marker %+v: want del-1's with a positive raw.dropped", ev)
			}
			if len(critical) > 1 {
				t.Fatalf("a marker of the statuses del-1's backlog dropped after %v: it goes before the delegation's next kept event", critical)
			}
			marked += n
			continue
		}
		switch {
		case ev.Kind.Critical():
			critical = append(critical, ev.DelegationID+":"+string(ev.Kind))
		case ev.Kind == delegation.DelegationStatus:
			i, err := strconv.Atoi(ev.Text)
			if err != nil || i <= last {
				t.Fatalf("status %q after status %d: the backlog reordered or duplicated", ev.Text, last)
			}
			last = i
			kept++
		}
	}
	want := "del-1:subagent.started del-1:subagent.input_required del-2:subagent.started del-2:subagent.finished del-1:subagent.finished"
	if strings.Join(critical, " ") != want {
		t.Fatalf("critical events from the backlog: %v, want %s: critical events are never dropped", critical, want)
	}
	if kept+marked != Backlog {
		t.Fatalf("the backlog delivered %d statuses and marked %d dropped, of %d published: a drop must be marked with its count", kept, marked, Backlog)
	}
}

// statusDeduplication: a status without text that repeats its
// delegation's previous status is dropped.
func statusDeduplication(t *testing.T, bus delegation.EventBus) {
	sub := bus.SubscribeRun(context.Background(), "run")
	st := func(del, s, text string) delegation.DelegationEvent {
		ev := status("run", del, text)
		ev.Status = s
		return ev
	}
	for _, ev := range []delegation.DelegationEvent{
		st("del-1", "working", ""), st("del-1", "working", ""), st("del-1", "working", "with text"), st("del-1", "working", ""),
		st("del-2", "working", ""), st("del-1", "completed", ""),
	} {
		bus.Publish(ev)
	}
	bus.CloseRun("run")
	var got []string
	for _, ev := range collect(t, sub) {
		got = append(got, ev.DelegationID+":"+ev.Status+":"+ev.Text)
	}
	want := "del-1:working: del-1:working:with text del-2:working: del-1:completed:"
	if strings.Join(got, " ") != want {
		t.Fatalf("statuses %q, want %q", strings.Join(got, " "), want)
	}
}

// closeRun: subscriptions deliver what they hold, then end; later
// publishes are discarded and a later subscriber gets nothing.
func closeRun(t *testing.T, bus delegation.EventBus) {
	bus.CloseRun("never-used") // closing an unknown run is allowed
	sub := bus.SubscribeRun(context.Background(), "run")
	bus.Publish(event("run", "del-1", delegation.DelegationStarted))
	for i := range 10 {
		bus.Publish(status("run", "del-1", strconv.Itoa(i)))
	}
	bus.Publish(event("run", "del-1", delegation.DelegationFinished))
	bus.CloseRun("run")
	returns(t, "Publish to a closed run", func() {
		bus.Publish(status("run", "del-1", "late"))
		bus.CloseRun("run") // twice
	})
	got := collect(t, sub)
	if len(got) != 12 || got[0].Kind != delegation.DelegationStarted || got[11].Kind != delegation.DelegationFinished {
		t.Fatalf("%d events after CloseRun, want the 12 published before it", len(got))
	}
	if sub.Err() != nil {
		t.Fatalf("a subscription ended by CloseRun: Err %v, want nil", sub.Err())
	}
	if late := collect(t, bus.SubscribeRun(context.Background(), "run")); len(late) != 0 {
		t.Fatalf("a subscriber of a closed run got %d events", len(late))
	}
	// A run closed before anyone subscribed: whatever a later subscriber
	// gets of it, nothing published after CloseRun is among it.
	bus.Publish(event("run-b", "del-1", delegation.DelegationStarted))
	bus.CloseRun("run-b")
	bus.Publish(status("run-b", "del-1", "late"))
	for _, ev := range collect(t, bus.SubscribeRun(context.Background(), "run-b")) {
		if ev.Text == "late" {
			t.Fatal("an event published after CloseRun reached a subscriber that came later")
		}
	}
}

// slowSubscriberText: under a subscriber that reads nothing until the run
// ends, text deltas are coalesced per message or dropped (here past the
// subscriber's bound on queued text), never reordered or duplicated, every
// drop is marked with its count, and the critical events all arrive.
func slowSubscriberText(t *testing.T, bus delegation.EventBus) {
	sub := bus.SubscribeRun(context.Background(), "run")
	// First runs of ten small deltas per message (they coalesce), then
	// large deltas alternating between the messages (they cannot), more
	// text than a subscriber holds (DefaultMaxVolatileBytes).
	const small, large, largeText = delegation.DefaultMaxQueued, 3000, 2 << 10
	message := func(i int) string {
		if i < small {
			return fmt.Sprint("m", i/10%2)
		}
		return fmt.Sprint("m", i%2)
	}
	pad := strings.Repeat(".", largeText)
	bus.Publish(event("run", "del-1", delegation.DelegationStarted))
	for i := range small + large {
		ev := event("run", "del-1", delegation.DelegationTextDelta)
		ev.RemoteMessageID = message(i)
		ev.Delta = fmt.Sprintf("<%d>", i)
		if i >= small {
			ev.Delta = fmt.Sprintf("<%d%s>", i, pad)
		}
		bus.Publish(ev)
		if i == small {
			bus.Publish(event("run", "del-1", delegation.DelegationInputRequired))
		}
	}
	bus.Publish(event("run", "del-1", delegation.DelegationFinished))
	bus.CloseRun("run")
	got := collect(t, sub)
	var critical []string
	delivered, marked := 0, 0
	last := map[string]int{"m0": -1, "m1": -1}
	for i, ev := range got {
		if i > 0 && ev.Seq < got[i-1].Seq {
			t.Fatalf("Seq went down: %d after %d", ev.Seq, got[i-1].Seq)
		}
		if c, ok := dropped(ev); ok {
			marked += c
			continue
		}
		if ev.Kind.Critical() {
			critical = append(critical, string(ev.Kind))
		}
		if ev.Kind != delegation.DelegationTextDelta {
			continue
		}
		for part := range strings.SplitSeq(strings.TrimSuffix(strings.TrimPrefix(ev.Delta, "<"), ">"), "><") {
			i, err := strconv.Atoi(strings.TrimRight(part, "."))
			if err != nil || i <= last[ev.RemoteMessageID] || message(i) != ev.RemoteMessageID {
				t.Fatalf("delta %.12q of %s after <%d>: deltas reordered, duplicated or merged across messages", part, ev.RemoteMessageID, last[ev.RemoteMessageID])
			}
			last[ev.RemoteMessageID] = i
			delivered++
		}
	}
	if err := sub.Err(); err != nil {
		t.Fatalf("a subscriber within its bound for events that may not be dropped was disconnected: %v", err)
	}
	if want := "subagent.started subagent.input_required subagent.finished"; strings.Join(critical, " ") != want {
		t.Fatalf("critical events %v, want %s", critical, want)
	}
	if delivered+marked != small+large || marked == 0 {
		t.Fatalf("%d deltas delivered and %d marked dropped, of %d (more text than a subscriber holds): every drop must be marked with its count",
			delivered, marked, small+large)
	}
}

// boundedSubscribers: a subscriber that never reads does not make Publish
// wait, and it is disconnected (ErrSubscriberOverflow) once it holds more
// than its bound, rather than holding everything.
func boundedSubscribers(t *testing.T, bus delegation.EventBus) {
	stalled := bus.SubscribeRun(context.Background(), "run")
	text := strings.Repeat("x", FloodText)
	returns(t, "Publish to a subscriber that never reads", func() {
		bus.Publish(event("run", "del-1", delegation.DelegationStarted))
		for i := range Flood {
			bus.Publish(status("run", "del-1", strconv.Itoa(i)+text))
		}
		bus.Publish(event("run", "del-1", delegation.DelegationFinished))
	})
	// The run is not closed: a bounded subscription has ended on its own.
	got := collect(t, stalled)
	if !errors.Is(stalled.Err(), delegation.ErrSubscriberOverflow) {
		t.Fatalf("a subscriber that never read %d events: Err %v, want ErrSubscriberOverflow", Flood, stalled.Err())
	}
	if len(got) >= Flood {
		t.Fatalf("the disconnected subscriber still delivered %d events: it held them all", len(got))
	}
	bus.CloseRun("run")
}

// contextAndClose: a subscription ends when its context does and when it
// is closed, without CloseRun, and publishing afterwards does not wait.
func contextAndClose(t *testing.T, bus delegation.EventBus) {
	ctx, cancel := context.WithCancel(context.Background())
	byCtx := bus.SubscribeRun(ctx, "run")
	byClose := bus.SubscribeRun(context.Background(), "run")
	bus.Publish(event("run", "del-1", delegation.DelegationStarted))
	cancel()
	collect(t, byCtx)
	byClose.Close()
	byClose.Close() // twice
	collect(t, byClose)
	if byCtx.Err() != nil || byClose.Err() != nil {
		t.Fatalf("Err after ctx %v, after Close %v: want nil", byCtx.Err(), byClose.Err())
	}
	returns(t, "Publish after every subscription ended", func() {
		for i := range Flood {
			bus.Publish(status("run", "del-1", strconv.Itoa(i)))
		}
	})
	bus.CloseRun("run")
}

// directLossless: the direct subscription (the run's merge) receives every
// event exactly once, in order, while a publisher floods the run: Publish
// waits for it when it is full instead of dropping.
func directLossless(t *testing.T, bus delegation.EventBus) {
	ds, ok := bus.(delegation.DirectSubscriber)
	if !ok {
		t.Skip("the bus is not a delegation.DirectSubscriber")
	}
	merge := ds.SubscribeRunDirect(context.Background(), "run")
	defer merge.Close()
	if merge.C != nil || merge.Ready() == nil {
		t.Fatal("a direct subscription has no C and a Ready channel")
	}
	const n = 3 * delegation.DefaultMaxQueued
	published := make(chan struct{})
	go func() {
		defer close(published)
		bus.Publish(event("run", "del-1", delegation.DelegationStarted))
		for i := range n {
			bus.Publish(status("run", "del-1", strconv.Itoa(i)))
		}
		bus.Publish(event("run", "del-1", delegation.DelegationFinished))
		bus.CloseRun("run")
	}()
	got := collect(t, merge)
	<-published
	if len(got) != n+2 || got[0].Kind != delegation.DelegationStarted || got[n+1].Kind != delegation.DelegationFinished {
		t.Fatalf("the direct subscription got %d events, want %d", len(got), n+2)
	}
	for i, ev := range got[1 : n+1] {
		if ev.Text != strconv.Itoa(i) {
			t.Fatalf("event %d is %q: lost, duplicated or reordered", i, ev.Text)
		}
	}
	increasing(t, "direct subscription", got)
	if merge.Err() != nil {
		t.Fatalf("a lossless subscription was disconnected: %v", merge.Err())
	}
}

// directEnds: a direct subscription ends by its context and by Close, and
// a publisher waiting for a full one that is closed goes on.
func directEnds(t *testing.T, bus delegation.EventBus) {
	ds, ok := bus.(delegation.DirectSubscriber)
	if !ok {
		t.Skip("the bus is not a delegation.DirectSubscriber")
	}
	ctx, cancel := context.WithCancel(context.Background())
	byCtx := ds.SubscribeRunDirect(ctx, "run")
	bus.Publish(event("run", "del-1", delegation.DelegationStarted))
	cancel()
	collect(t, byCtx) // ends once the context's end is seen

	full := ds.SubscribeRunDirect(context.Background(), "run")
	published := make(chan struct{})
	go func() {
		defer close(published)
		for i := range 3 * delegation.DefaultMaxQueued { // more than it holds: the publisher waits for it
			bus.Publish(status("run", "del-1", strconv.Itoa(i)))
		}
	}()
	full.Close()
	select {
	case <-published:
	case <-time.After(Wait):
		t.Fatalf("a publisher still waits for a direct subscription %s after it was closed", Wait)
	}
	if _, ok, end := full.TryNext(); ok || !end {
		t.Fatalf("TryNext after Close: ok=%v end=%v, want the end", ok, end)
	}
	bus.CloseRun("run")
}

// inlineWherePublished: an inline subscription's reader is called on the
// publisher's goroutine before Publish returns, with the event it published
// queued for TryNext, and once more after CloseRun, when TryNext reports
// the end; Ready is never signalled.
func inlineWherePublished(t *testing.T, bus delegation.EventBus) {
	is, ok := bus.(delegation.InlineSubscriber)
	if !ok {
		t.Skip("the bus is not a delegation.InlineSubscriber")
	}
	var (
		sub   *delegation.Subscription
		calls int
		got   []delegation.DelegationEvent
		ended bool
	)
	// ready runs on this goroutine, inside Publish and CloseRun: no lock
	// is needed, and the race detector says if it were not so.
	sub = is.SubscribeRunInline(context.Background(), "run", func() {
		calls++
		for {
			ev, ok, end := sub.TryNext()
			if end {
				ended = true
				return
			}
			if !ok {
				return
			}
			got = append(got, ev)
		}
	})
	defer sub.Close()
	if sub.C != nil {
		t.Fatal("an inline subscription has no C")
	}
	bus.Publish(event("run", "del-1", delegation.DelegationStarted))
	if calls == 0 || len(got) != 1 || got[0].Kind != delegation.DelegationStarted {
		t.Fatalf("after Publish returned: %d calls of the reader, %d events taken, want the published event taken", calls, len(got))
	}
	for i := range 10 {
		bus.Publish(status("run", "del-1", strconv.Itoa(i)))
		if len(got) != i+2 || got[i+1].Text != strconv.Itoa(i) {
			t.Fatalf("status %d was not taken by the reader before Publish returned (%d events)", i, len(got))
		}
	}
	bus.CloseRun("run")
	if !ended {
		t.Fatal("the reader was not called at the run's end, or TryNext did not report it")
	}
	select {
	case <-sub.Ready():
		t.Fatal("an inline subscription's Ready was signalled")
	default:
	}
	increasing(t, "inline subscription", got)
}

// inlineLossless: an inline reader that leaves events queued (its lock is
// taken elsewhere) and takes them later receives every event once, in
// order, while publishers on several goroutines flood the run: like a
// direct subscription, it is lossless.
func inlineLossless(t *testing.T, bus delegation.EventBus) {
	is, ok := bus.(delegation.InlineSubscriber)
	if !ok {
		t.Skip("the bus is not a delegation.InlineSubscriber")
	}
	const publishers, n = 4, delegation.DefaultMaxQueued
	var (
		mu  sync.Mutex
		sub *delegation.Subscription
		got []delegation.DelegationEvent
	)
	take := func() {
		for {
			ev, ok, end := sub.TryNext()
			if !ok || end {
				return
			}
			got = append(got, ev)
		}
	}
	sub = is.SubscribeRunInline(context.Background(), "run", func() {
		if mu.TryLock() { // else the holder takes them
			take()
			mu.Unlock()
		}
	})
	defer sub.Close()
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for i := range n {
				bus.Publish(status("run", "del-"+strconv.Itoa(p), strconv.Itoa(i)))
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	deadline := time.After(Wait)
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		case <-deadline:
			t.Fatalf("publishers still wait for an inline subscription after %s", Wait)
		default:
		}
		mu.Lock()
		take()
		mu.Unlock()
		runtime.Gosched()
	}
	mu.Lock()
	take()
	mu.Unlock()
	next := make([]int, publishers)
	for _, ev := range got {
		p, _ := strconv.Atoi(strings.TrimPrefix(ev.DelegationID, "del-"))
		if ev.Text != strconv.Itoa(next[p]) {
			t.Fatalf("%s: status %s after %d: lost, duplicated or reordered", ev.DelegationID, ev.Text, next[p])
		}
		next[p]++
	}
	if len(got) != publishers*n {
		t.Fatalf("the inline subscription got %d events, want %d", len(got), publishers*n)
	}
	increasing(t, "inline subscription", got)
	bus.CloseRun("run")
}
