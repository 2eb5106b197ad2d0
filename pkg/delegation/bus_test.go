package delegation

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func drain(t *testing.T, s *Subscription) []DelegationEvent {
	t.Helper()
	var out []DelegationEvent
	if s.C == nil { // a direct subscription
		for {
			ev, ok, end := s.TryNext()
			switch {
			case end:
				return out
			case ok:
				out = append(out, ev)
			default:
				<-s.Ready()
			}
		}
	}
	for ev := range s.C {
		out = append(out, ev)
	}
	return out
}

func ev(del string, k DelegationEventKind) DelegationEvent {
	return DelegationEvent{RunID: "run", DelegationID: del, Kind: k}
}

func delta(del, msg, d string) DelegationEvent {
	e := ev(del, DelegationTextDelta)
	e.RemoteMessageID, e.Delta = msg, d
	return e
}

func TestBusCriticalNeverDroppedUnderSlowSubscriber(t *testing.T) {
	b := &MemoryBus{Buffer: 4, MaxVolatileBytes: 64}
	s := b.SubscribeRun(context.Background(), "run") // never read until the end: the slowest consumer
	b.Publish(ev("d1", DelegationStarted))
	for i := range 500 {
		b.Publish(delta("d1", fmt.Sprintf("m%d", i%3), "0123456789"))
		if i == 250 {
			b.Publish(ev("d1", DelegationInputRequired))
		}
	}
	b.Publish(ev("d1", DelegationArtifactCreated))
	b.Publish(ev("d1", DelegationFinished))
	b.CloseRun("run")
	got := drain(t, s)
	count := map[DelegationEventKind]int{}
	marker := false
	var last uint64
	for _, e := range got {
		count[e.Kind]++
		marker = marker || e.Status == StatusStreamDropped
		if e.Seq < last {
			t.Errorf("seq went backwards: %d after %d", e.Seq, last)
		}
		last = e.Seq
	}
	if count[DelegationStarted] != 1 || count[DelegationInputRequired] != 1 || count[DelegationFinished] != 1 || count[DelegationArtifactCreated] != 1 {
		t.Errorf("critical/important events lost: %v", count)
	}
	if s.Dropped() == 0 || !marker {
		t.Errorf("dropped %d, marker %v: drops must be counted and marked", s.Dropped(), marker)
	}
	if got[len(got)-1].Kind != DelegationFinished {
		t.Errorf("terminal not last: %s", got[len(got)-1].Kind)
	}
}

func TestBusCoalescingPreservesPerMessageOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	b := &MemoryBus{Buffer: 3, MaxVolatileBytes: 1 << 20}
	s := b.SubscribeRun(context.Background(), "run")
	want := map[string]string{}
	keys := [][2]string{{"d1", "m1"}, {"d1", "m2"}, {"d2", "m1"}, {"d2", "m2"}}
	for i := range 2000 {
		k := keys[rng.Intn(len(keys))]
		d := fmt.Sprintf("<%s%s:%d>", k[0], k[1], i)
		want[k[0]+"/"+k[1]] += d
		b.Publish(delta(k[0], k[1], d))
		if rng.Intn(50) == 0 {
			b.Publish(DelegationEvent{RunID: "run", DelegationID: k[0], Kind: DelegationStatus, Status: fmt.Sprint("s", i)})
		}
	}
	b.CloseRun("run")
	got := map[string]string{}
	coalesced := false
	for _, e := range drain(t, s) {
		if e.Kind == DelegationTextDelta {
			got[e.DelegationID+"/"+e.RemoteMessageID] += e.Delta
			coalesced = coalesced || len(e.Delta) > 16
		}
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: text differs after coalescing (len %d vs %d)", k, len(got[k]), len(w))
		}
	}
	if !coalesced || s.Dropped() != 0 {
		t.Errorf("coalesced=%v dropped=%d", coalesced, s.Dropped())
	}
}

func TestBusStatusDeduplication(t *testing.T) {
	b := NewMemoryBus()
	s := b.SubscribeRun(context.Background(), "run")
	st := func(status, text string) DelegationEvent {
		return DelegationEvent{RunID: "run", DelegationID: "d1", Kind: DelegationStatus, Status: status, Text: text}
	}
	b.Publish(st("working", ""))
	b.Publish(st("working", ""))
	b.Publish(st("working", "with text"))
	b.Publish(st("working", ""))
	b.Publish(DelegationEvent{RunID: "run", DelegationID: "d2", Kind: DelegationStatus, Status: "working"})
	b.Publish(st("completed", ""))
	b.CloseRun("run")
	var got []string
	for _, e := range drain(t, s) {
		got = append(got, e.DelegationID+":"+e.Status+":"+e.Text)
	}
	want := []string{"d1:working:", "d1:working:with text", "d2:working:", "d1:completed:"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestBusCloseRunDrainsThenCloses(t *testing.T) {
	b := NewMemoryBus()
	// Events before the first subscriber are kept for it.
	b.Publish(ev("d1", DelegationStarted))
	s := b.SubscribeRun(context.Background(), "run")
	for i := range 100 {
		b.Publish(delta("d1", "m", fmt.Sprint(i, ",")))
	}
	b.Publish(ev("d1", DelegationFinished))
	b.CloseRun("run")
	b.Publish(ev("d1", DelegationStatus)) // discarded
	got := drain(t, s)
	if len(got) != 102 || got[0].Kind != DelegationStarted || got[101].Kind != DelegationFinished {
		t.Fatalf("%d events: %s", len(got), kindsOf(got[:min(5, len(got))]))
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq <= got[i-1].Seq {
			t.Fatalf("seq not increasing at %d", i)
		}
	}
	late := b.SubscribeRun(context.Background(), "run")
	if n := len(drain(t, late)); n != 0 {
		t.Errorf("late subscriber of a closed run got %d events", n)
	}
}

func TestBusSubscriptionEndsWithContextAndClose(t *testing.T) {
	b := NewMemoryBus()
	ctx, cancel := context.WithCancel(context.Background())
	s1 := b.SubscribeRun(ctx, "run")
	s2 := b.SubscribeRun(context.Background(), "run")
	cancel()
	drain(t, s1)
	s2.Close()
	drain(t, s2)
	b.Publish(ev("d1", DelegationStarted)) // no subscriber left: must not block
	b.CloseRun("run")
}

func kindsOf(evs []DelegationEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(string(ev.Kind))
		if ev.Status != "" {
			b.WriteString("(" + ev.Status + ")")
		}
		b.WriteString(" ")
	}
	return b.String()
}

// Events published before anyone subscribed are kept for the first
// subscriber in a bounded backlog; when it overflows, non-critical events
// are lost but critical ones (started, input_required, terminal) never are.
func TestBusBacklogBeforeFirstSubscriberKeepsCriticalEvents(t *testing.T) {
	b := NewMemoryBus()
	b.Publish(ev("d1", DelegationStarted))
	for i := range maxBacklog + 10 {
		b.Publish(DelegationEvent{RunID: "run", DelegationID: "d1", Kind: DelegationTextDelta, Delta: fmt.Sprint(i % 10), RemoteMessageID: "m"})
	}
	b.Publish(ev("d1", DelegationInputRequired))
	b.Publish(ev("d1", DelegationFinished))
	b.Publish(ev("d2", DelegationStarted))
	b.Publish(ev("d2", DelegationFailed))
	sub := b.SubscribeRun(context.Background(), "run")
	b.CloseRun("run")
	got := drain(t, sub)
	var critical []string
	for _, e := range got {
		if e.Kind.Critical() {
			critical = append(critical, e.DelegationID+":"+string(e.Kind))
		}
	}
	want := []string{"d1:subagent.started", "d1:subagent.input_required", "d1:subagent.finished", "d2:subagent.started", "d2:subagent.failed"}
	if strings.Join(critical, " ") != strings.Join(want, " ") {
		t.Fatalf("critical events after a backlog overflow = %v, want %v", critical, want)
	}
	if len(got) > maxBacklog+len(want)+1 {
		t.Fatalf("backlog kept %d events, bound is %d plus critical ones and their drop markers", len(got), maxBacklog)
	}
	// What the backlog dropped is marked, before the delegation's next kept
	// event, with the count: 1 started + 1,023 deltas fit, 11 did not.
	marked := 0
	for i, e := range got {
		if e.Status != StatusStreamDropped {
			continue
		}
		marked += e.Raw["dropped"].(int)
		if e.DelegationID != "d1" || i+1 >= len(got) || got[i+1].Kind != DelegationInputRequired {
			t.Errorf("marker %+v is not right before d1's next kept event", e)
		}
	}
	if marked != 11 {
		t.Errorf("the backlog dropped 11 deltas, its markers say %d", marked)
	}
}

// A delegation whose dropped backlog events are followed by none of its
// own kept events gets its marker at the end of the backlog, and the
// subscriber never sees Seq go down.
func TestBusBacklogMarksDropsAtItsEnd(t *testing.T) {
	b := NewMemoryBus()
	b.Publish(ev("d1", DelegationStarted))
	for i := range maxBacklog + 5 {
		b.Publish(DelegationEvent{RunID: "run", DelegationID: "d1", Kind: DelegationStatus, Status: "working", Text: fmt.Sprint("step ", i)})
	}
	b.Publish(ev("d2", DelegationStarted))
	sub := b.SubscribeRun(context.Background(), "run")
	b.Publish(ev("d2", DelegationFinished))
	b.CloseRun("run")
	got := drain(t, sub)
	var last uint64
	marker := -1
	for i, e := range got {
		if e.Seq < last {
			t.Errorf("seq went down: %d after %d", e.Seq, last)
		}
		last = e.Seq
		if e.Status == StatusStreamDropped {
			marker = i
		}
	}
	if marker < 0 || got[marker].DelegationID != "d1" || got[marker].Raw["dropped"] != 6 {
		t.Fatalf("no marker for d1's 6 dropped statuses: %s", kindsOf(got[max(0, len(got)-4):]))
	}
	if got[marker-1].DelegationID != "d2" || got[marker+1].Kind != DelegationFinished {
		t.Errorf("the marker should close the backlog: %s", kindsOf(got[marker-1:]))
	}
}

// Every subscriber's queue is bounded in every lane (docs/design.md#backpressure):
// a remote sending 100,000 status updates while one subscriber reads
// nothing never grows the host. That subscriber is disconnected (its
// channel closes, Err says why) and its queue never exceeded the bound;
// the run's merge (a direct, lossless subscription) instead makes the
// publisher wait while it is full, so it receives every event exactly once,
// in order, and never held more than its bound either.
func TestBusBoundsEverySubscriberAndTheMergeLosesNothing(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n, bound = 100_000, 256
	b := &MemoryBus{MaxQueued: bound}
	stalled := b.SubscribeRun(context.Background(), "run") // never read
	merge := b.SubscribeRunDirect(context.Background(), "run")
	published := make(chan struct{})
	go func() {
		defer close(published)
		b.Publish(ev("d1", DelegationStarted))
		for i := range n {
			b.Publish(DelegationEvent{RunID: "run", DelegationID: "d1", Kind: DelegationStatus, Status: "working", Text: fmt.Sprint("update ", i)})
		}
		b.Publish(ev("d1", DelegationFinished))
		b.CloseRun("run")
	}()
	// The merge does not read until the publisher waits for it.
	waitFull := time.Now().Add(time.Minute)
	for {
		merge.mu.Lock()
		waiting := merge.room != nil
		merge.mu.Unlock()
		if waiting {
			break
		}
		if time.Now().After(waitFull) {
			t.Fatal("the publisher never waited for the full merge subscription")
		}
		time.Sleep(time.Millisecond)
	}
	got := drain(t, merge)
	<-published
	if len(got) != n+2 || got[0].Kind != DelegationStarted || got[n+1].Kind != DelegationFinished {
		t.Fatalf("the merge got %d events, want %d", len(got), n+2)
	}
	for i, e := range got[1 : n+1] {
		if e.Text != fmt.Sprint("update ", i) || e.Seq != uint64(i+2) {
			t.Fatalf("event %d is %q (seq %d): lost, duplicated or reordered", i, e.Text, e.Seq)
		}
	}
	if merge.peakLen > bound || merge.Err() != nil {
		t.Errorf("the merge held %d events (bound %d), err %v", merge.peakLen, bound, merge.Err())
	}
	// The stalled subscriber was cut once it reached the bound.
	if !errors.Is(stalled.Err(), ErrSubscriberOverflow) {
		t.Errorf("the stalled subscriber: err %v, want ErrSubscriberOverflow", stalled.Err())
	}
	if stalled.peakLen > bound {
		t.Errorf("the stalled subscriber held %d events, bound %d", stalled.peakLen, bound)
	}
	stalled.Close()
	merge.Close()
}

// MaxQueuedBytes bounds a subscriber by size as MaxQueued does by count:
// large events reach the byte bound first.
func TestBusByteBoundDisconnects(t *testing.T) {
	defer goleak.VerifyNone(t)
	b := &MemoryBus{MaxQueuedBytes: 64 << 10}
	s := b.SubscribeRun(context.Background(), "run")
	big := strings.Repeat("x", 8<<10)
	for i := range 100 {
		b.Publish(DelegationEvent{RunID: "run", DelegationID: "d1", Kind: DelegationStatus, Status: "working", Text: fmt.Sprint(i, big)})
	}
	if !errors.Is(s.Err(), ErrSubscriberOverflow) || s.peakBytes > 64<<10 {
		t.Errorf("err %v, peak %d bytes (bound %d)", s.Err(), s.peakBytes, 64<<10)
	}
	s.Close()
	b.CloseRun("run")
}

// fillSubscriber publishes n filler events of another delegation and waits
// until the subscriber's channel is full, so that what is published next
// stays in its queue, where coalescing applies (docs/design.md#backpressure).
func fillSubscriber(t *testing.T, b *MemoryBus, s *Subscription, n int) {
	t.Helper()
	for i := range n {
		b.Publish(DelegationEvent{RunID: "run", DelegationID: "filler", Kind: DelegationStatus, Status: fmt.Sprint("s", i)})
	}
	deadline := time.Now().Add(time.Minute)
	for len(s.C) < cap(s.C) {
		if time.Now().After(deadline) {
			t.Fatalf("the subscriber's channel never filled (%d of %d)", len(s.C), cap(s.C))
		}
		time.Sleep(time.Millisecond)
	}
}

// Coalescing merges a delta into the newest queued event of its delegation
// only when that is a delta of the same message: it never crosses another
// event of the same delegation (docs/design.md#backpressure). The order of
// a delegation's events is therefore kept under pressure — across its
// messages too (a delta of one message never moves past a delta of the
// other), which is more than per-message order (guarantee 5) and what a
// client rebuilding interleaved messages relies on.
func TestBusCoalescingNeverCrossesEventsOfTheDelegation(t *testing.T) {
	b := &MemoryBus{Buffer: 4, MaxVolatileBytes: 1 << 20}
	s := b.SubscribeRun(context.Background(), "run")
	fillSubscriber(t, b, s, 64)
	b.Publish(delta("A", "m1", "a1"))
	b.Publish(delta("B", "m1", "b1"))
	b.Publish(delta("A", "m1", "a2")) // merges into a1: only B lies between
	b.Publish(delta("A", "m2", "x1"))
	b.Publish(delta("A", "m1", "a3")) // A's other message lies between
	b.Publish(DelegationEvent{RunID: "run", DelegationID: "A", Kind: DelegationStatus, Status: "working"})
	b.Publish(delta("A", "m1", "a4")) // A's status lies between
	end := ev("A", DelegationTextEnd) // important: never coalesced into a4
	end.RemoteMessageID = "m1"
	b.Publish(end)
	b.Publish(ev("A", DelegationFinished))
	b.CloseRun("run")
	var got []string
	var last uint64
	for _, e := range drain(t, s) {
		if e.DelegationID != "A" {
			continue
		}
		if e.Seq <= last {
			t.Errorf("A's seq went backwards: %d after %d", e.Seq, last)
		}
		last = e.Seq
		switch e.Kind {
		case DelegationTextDelta:
			got = append(got, e.RemoteMessageID+":"+e.Delta)
		case DelegationStatus:
			got = append(got, e.Status)
		default:
			got = append(got, string(e.Kind))
		}
	}
	want := "m1:a1a2 m2:x1 m1:a3 working m1:a4 subagent.text.end subagent.finished"
	if strings.Join(got, " ") != want {
		t.Fatalf("A's events under coalescing = %q, want %q", strings.Join(got, " "), want)
	}
	if s.Dropped() != 0 {
		t.Errorf("dropped %d deltas within the byte bound", s.Dropped())
	}
}

// A direct subscription (SubscribeRunDirect) delivers what SubscribeRun's
// channel does, in order and under the same lanes (a channel subscription's
// goroutine may move events out of the queue before they coalesce, so the
// two are compared by what they must both keep), and ends the same ways
// (the run closed and drained, its context, Close), without a goroutine of
// its own.
func TestBusDirectSubscriptionMatchesChannel(t *testing.T) {
	defer goleak.VerifyNone(t)
	run := func(direct bool) (nonDelta string, deltaChunks int) {
		b := &MemoryBus{Buffer: 8, MaxVolatileBytes: 256}
		b.Publish(ev("d0", DelegationStarted)) // before any subscriber: the backlog
		var s *Subscription
		if direct {
			s = b.SubscribeRunDirect(context.Background(), "run")
		} else {
			s = b.SubscribeRun(context.Background(), "run")
		}
		b.Publish(ev("d1", DelegationStarted))
		for i := range 300 {
			b.Publish(delta("d1", "m", "0123456789"))
			if i == 100 {
				b.Publish(ev("d1", DelegationInputRequired))
			}
		}
		b.Publish(DelegationEvent{RunID: "run", DelegationID: "d1", Kind: DelegationStatus, Status: "working"})
		b.Publish(DelegationEvent{RunID: "run", DelegationID: "d1", Kind: DelegationStatus, Status: "working"})
		b.Publish(ev("d1", DelegationFinished))
		b.CloseRun("run")
		var out strings.Builder
		for _, e := range drain(t, s) {
			switch {
			case e.Kind == DelegationTextDelta:
				deltaChunks += len(e.Delta) / 10
			case e.Status == StatusStreamDropped:
				deltaChunks += e.Raw["dropped"].(int)
			default:
				fmt.Fprintf(&out, "%s:%s:%s ", e.DelegationID, e.Kind, e.Status)
			}
		}
		s.Close()
		return out.String(), deltaChunks
	}
	dEvents, dChunks := run(true)
	cEvents, cChunks := run(false)
	want := "d0:subagent.started: d1:subagent.started: d1:subagent.input_required: d1:subagent.status:working d1:subagent.finished: "
	if dEvents != want || cEvents != want {
		t.Errorf("events besides deltas:\ndirect  %s\nchannel %s\nwant    %s", dEvents, cEvents, want)
	}
	if dChunks != 300 || cChunks != 300 {
		t.Errorf("deltas delivered or reported dropped: direct %d, channel %d, want 300", dChunks, cChunks)
	}

	b := NewMemoryBus()
	ctx, cancel := context.WithCancel(context.Background())
	s1 := b.SubscribeRunDirect(ctx, "run")
	s2 := b.SubscribeRunDirect(context.Background(), "run")
	b.Publish(ev("d1", DelegationStarted))
	cancel()
	drain(t, s1) // ends once its context's end is seen
	s2.Close()
	if _, ok, end := s2.TryNext(); ok || !end {
		t.Errorf("after Close: ok=%v end=%v", ok, end)
	}
	b.Publish(ev("d1", DelegationFinished)) // no subscriber left
	b.mu.Lock()
	n := len(b.runs["run"].subs)
	b.mu.Unlock()
	if n != 0 {
		t.Errorf("%d subscriptions still registered after their end", n)
	}
	b.CloseRun("run")
}

// A subscriber never sees Seq go down, even when deltas of two
// delegations interleave and coalesce while it is slow: a merged delta
// moves to the tail of its queue with the Seq of its newest part.
func TestBusSeqNeverGoesDownAcrossDelegations(t *testing.T) {
	for _, direct := range []bool{false, true} {
		b := &MemoryBus{Buffer: 4, MaxVolatileBytes: 1 << 20}
		var s *Subscription
		if direct {
			s = b.SubscribeRunDirect(context.Background(), "run")
		} else {
			s = b.SubscribeRun(context.Background(), "run")
			fillSubscriber(t, b, s, 64)
		}
		for i := range 20 {
			b.Publish(delta("A", "m", fmt.Sprint("a", i)))
			b.Publish(delta("B", "m", fmt.Sprint("b", i)))
		}
		b.Publish(delta("A", "m", "a20")) // merged into A's delta, queued before B's
		b.Publish(ev("A", DelegationFinished))
		b.Publish(ev("B", DelegationFinished))
		b.CloseRun("run")
		var last uint64
		text := map[string]string{}
		for _, e := range drain(t, s) {
			if e.Seq < last {
				t.Errorf("direct=%v: seq went down: %d after %d", direct, e.Seq, last)
			}
			last = e.Seq
			text[e.DelegationID] += e.Delta
		}
		var wantA, wantB strings.Builder
		for i := range 20 {
			fmt.Fprint(&wantA, "a", i)
			fmt.Fprint(&wantB, "b", i)
		}
		wantA.WriteString("a20")
		if text["A"] != wantA.String() || text["B"] != wantB.String() {
			t.Errorf("direct=%v: text A %q B %q", direct, text["A"], text["B"])
		}
	}
}
