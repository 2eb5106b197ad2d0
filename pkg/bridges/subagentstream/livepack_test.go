package subagentstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// A live stream packs its replay log as it goes (packed.go): every
// subscriber, whenever it joins and from whatever cursor, must read exactly
// what it reads from the same stream kept unpacked.

// liveRun feeds a stream a run of two delegations that stream deltas text
// deltas between them (del-1 then del-2, interleaved with parent text and
// a status now and then), in two halves: first feeds the first half, the
// returned func the rest and the run's end. Every frame is timestamped by
// the test's clock, so two streams fed alike hold the same bytes.
func liveRun(s *mergedStream, deltas int) (rest func()) {
	at := func(i int) time.Time { return testEpoch.Add(time.Duration(i) * time.Millisecond) }
	onParent := func(ev events.Event) { stamped(s, ev) }
	onParent(events.NewRunStartedEvent("th-1", "run-1"))
	onParent(events.NewTextMessageStartEvent("m1", events.WithRole("assistant")))
	onParent(events.NewTextMessageContentEvent("m1", "Let me ask two agents. "))
	for _, c := range []string{"toolu_1", "toolu_2"} {
		onParent(events.NewToolCallStartEvent(c, "delegate_to_agent", events.WithParentMessageID("m1")))
		onParent(events.NewToolCallArgsEvent(c, `{"agent":"research"}`))
		onParent(events.NewToolCallEndEvent(c))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	send := func(i int, del, call string, kind delegation.DelegationEventKind, mod func(*delegation.DelegationEvent)) {
		e := delegation.DelegationEvent{RunID: "sdk-run-1", DelegationID: del, ParentToolCallID: call, AgentKey: "research",
			AgentName: "Research Agent", Protocol: "a2a", RemoteTaskID: "task-" + del, RemoteContextID: "ctx-1", Kind: kind, Time: at(i)}
		if mod != nil {
			mod(&e)
		}
		s.onDelegation(e)
		s.writeOut()
	}
	for _, d := range [][2]string{{"del-1", "toolu_1"}, {"del-2", "toolu_2"}} {
		send(0, d[0], d[1], delegation.DelegationStarted, nil)
		send(1, d[0], d[1], delegation.DelegationTextStart, func(e *delegation.DelegationEvent) { e.RemoteMessageID = "rm-" + d[0] })
	}
	feed := func(from, to int) {
		for i := from; i < to; i++ {
			d := [2]string{"del-1", "toolu_1"}
			if i%3 == 2 {
				d = [2]string{"del-2", "toolu_2"}
			}
			send(2+i, d[0], d[1], delegation.DelegationTextDelta, func(e *delegation.DelegationEvent) {
				e.RemoteMessageID, e.Delta = "rm-"+d[0], prose(rng, 40)+fmt.Sprintf(" <%d>", i)
			})
			if i%500 == 250 {
				send(2+i, d[0], d[1], delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status = fmt.Sprintf("step %d", i) })
			}
		}
	}
	feed(0, deltas/2)
	return func() {
		feed(deltas/2, deltas)
		for _, d := range [][2]string{{"del-1", "toolu_1"}, {"del-2", "toolu_2"}} {
			send(deltas+2, d[0], d[1], delegation.DelegationTextEnd, func(e *delegation.DelegationEvent) { e.RemoteMessageID = "rm-" + d[0] })
			send(deltas+3, d[0], d[1], delegation.DelegationFinished, func(e *delegation.DelegationEvent) { e.Text = "done" })
			onParent(events.NewToolCallResultEvent("result-"+d[1], d[1], "done"))
		}
		onParent(events.NewTextMessageEndEvent("m1"))
		onParent(events.NewRunFinishedEvent("th-1", "run-1"))
		releaseHeld(s)
	}
}

// stamped hands s a parent event timestamped by the test's clock.
func stamped(s *mergedStream, ev events.Event) {
	ev.SetTimestamp(testEpoch.UnixMilli())
	s.onParent(ev)
	s.writeOut() // as the merge does before it lets go of the stream
}

// unbounded are options under which no subscriber coalesces, drops or is
// cut: what it reads depends only on the log.
func unbounded(mode Mode, replayFrames, replayBytes int) Options {
	return Options{Mode: mode, ReplayFrames: replayFrames, ReplayBytes: replayBytes, SubscriberBuffer: 1 << 30,
		SubscriberMaxBytes: 1 << 30, SubscriberMaxQueued: 1 << 30, SubscriberMaxQueuedBytes: 1 << 30}
}

// probeCursors returns the cursors worth asking a stream: 0, every step-th,
// and around the log's first frame, every packed block's first frame and
// the tail's first frame.
func probeCursors(s *Stream, step uint64) []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	marks := []uint64{0, s.firstID, s.lastID + 1 - uint64(len(s.log)), s.lastID}
	for _, b := range s.packed.blocks {
		marks = append(marks, b.first)
	}
	seen := map[uint64]bool{}
	var out []uint64
	add := func(c uint64) {
		if c <= s.lastID && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	for _, m := range marks {
		for _, c := range []uint64{m - 2, m - 1, m, m + 1} {
			if c <= m+1 { // not wrapped below 0
				add(c)
			}
		}
	}
	for c := uint64(0); c <= s.lastID; c += step {
		add(c)
	}
	return out
}

// answerNow is what Subscribe(cursor) gives of a stream that may be live:
// the frames it has for the subscriber now.
func answerNow(t testing.TB, s *Stream, cursor uint64) answer {
	t.Helper()
	sub, err := s.Subscribe(cursor)
	if err != nil {
		return answer{err: err}
	}
	defer sub.Close()
	var out []Frame
	for {
		f, _ := sub.take()
		if f == nil {
			return answer{frames: out}
		}
		out = append(out, Frame{ID: f.ID, Type: f.Type, Data: f.Data})
	}
}

// livePacked reports whether s holds a packed prefix and a tail shorter
// than a block's worth of frames, as a live stream does.
func livePacked(t *testing.T, s *Stream, minBlocks int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.packed.blocks) < minBlocks || len(s.log) >= livePackFrames || s.tailBytes >= livePackBytes {
		t.Fatalf("live log: %d packed blocks (want %d or more), tail of %d frames, %d bytes", len(s.packed.blocks), minBlocks, len(s.log), s.tailBytes)
	}
}

func TestLivePackedLogAnswersLikeTheLog(t *testing.T) {
	for _, mode := range []Mode{ModeCustom, ModeStandard} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			opts := unbounded(mode, 0, 0)
			s, ref := testStream(opts), testStream(opts)
			ref.packAt = -1
			restS, restRef := liveRun(s, 3000), liveRun(ref, 3000)
			livePacked(t, s.Stream, 5)
			if ref.packed.len() != 0 {
				t.Fatal("the reference packed its log")
			}
			// Subscribers that join the live stream now: from the start
			// (attaching late), inside the packed prefix, inside the tail.
			cursors := probeCursors(s.Stream, 97)
			type pair struct{ got, want *Subscriber }
			subs := make([]pair, len(cursors))
			for i, c := range cursors {
				g, err := s.Subscribe(c)
				w, werr := ref.Subscribe(c)
				if err != nil || werr != nil {
					t.Fatalf("cursor %d: %v, %v", c, err, werr)
				}
				subs[i] = pair{g, w}
			}
			// One reads half its replay now, concurrently with the rest of
			// the run (its frames packed meanwhile).
			var wg sync.WaitGroup
			var early []Frame
			wg.Go(func() {
				for range subs[0].got.Pending() / 2 {
					f, eof := subs[0].got.take()
					if f == nil || eof {
						break
					}
					early = append(early, Frame{ID: f.ID, Type: f.Type, Data: f.Data})
				}
			})
			restS()
			restRef()
			wg.Wait()
			s.finish(false)
			ref.finish(false)
			for i, p := range subs {
				got := readSub(t, p.got)
				if i == 0 {
					got = append(early, got...)
				}
				sameAnswer(t, cursors[i], answer{frames: got}, answer{frames: readSub(t, p.want)})
			}
			// Subscribers that join the ended stream, before and after its
			// tail is packed too.
			for _, c := range probeCursors(s.Stream, 89) {
				sameAnswer(t, c, answerAt(t, s.Stream, c), answerAt(t, ref.Stream, c))
			}
			s.compact()
			if len(s.log) != 0 {
				t.Fatal("the ended stream's tail was not packed")
			}
			for _, c := range probeCursors(s.Stream, 89) {
				sameAnswer(t, c, answerAt(t, s.Stream, c), answerAt(t, ref.Stream, c))
			}
		})
	}
}

// TestLivePackedLogTrims: a live stream trimmed to its bounds drops whole
// packed blocks from its front, and a block partly trimmed still answers
// from its first kept frame, re-opening what was open there.
func TestLivePackedLogTrims(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		mode                      Mode
		replayFrames, replayBytes int
	}{
		{"frames", ModeStandard, 1000, 0},
		{"bytes", ModeCustom, 0, 150 << 10},
		{"tail only", ModeStandard, 40, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := unbounded(tc.mode, tc.replayFrames, tc.replayBytes)
			s, ref := testStream(opts), testStream(opts)
			ref.packAt = -1
			restS, restRef := liveRun(s, 4000), liveRun(ref, 4000)
			check := func(step uint64) {
				t.Helper()
				if s.firstID != ref.firstID || s.logBytes != ref.logBytes || s.lastID != ref.lastID {
					t.Fatalf("log %d..%d (%d bytes), want %d..%d (%d bytes)", s.firstID, s.lastID, s.logBytes, ref.firstID, ref.lastID, ref.logBytes)
				}
				if s.firstID == 1 {
					t.Fatal("the log was not trimmed")
				}
				if p := &s.packed; p.len() > 0 {
					// Only the block holding the first frame is kept of
					// the trimmed ones.
					if b := p.block(s.firstID); b != 0 || p.first != p.blocks[0].first {
						t.Fatalf("log from %d: block %d of %d holds it (packed from %d)", s.firstID, b, len(p.blocks), p.first)
					}
				}
				for _, c := range probeCursors(s.Stream, step) {
					sameAnswer(t, c, answerNow(t, s.Stream, c), answerNow(t, ref.Stream, c))
				}
			}
			check(131)
			if tc.replayFrames != 40 {
				livePacked(t, s.Stream, 3)
				if s.packed.first <= 1 {
					t.Fatal("no packed block was dropped")
				}
				if s.packed.first == s.firstID {
					// The probe must cover a block kept partly trimmed.
					t.Logf("the log starts at a block boundary (%d)", s.firstID)
				}
			}
			restS()
			restRef()
			s.finish(true)
			ref.finish(false)
			check(173)
		})
	}
}

// TestLivePackedLogTrimsInsideABlock: a log whose first block is partly
// trimmed re-opens, for a cursor older than the log, what was open at its
// first kept frame, which only that block's frames tell.
func TestLivePackedLogTrimsInsideABlock(t *testing.T) {
	opts := unbounded(ModeStandard, 0, 0)
	s, ref := testStream(opts), testStream(opts)
	ref.packAt = -1
	for _, m := range []*mergedStream{s, ref} {
		stamped(m, events.NewRunStartedEvent("th-1", "run-1"))
		for i := range 200 {
			id := fmt.Sprintf("m%d", i)
			stamped(m, events.NewTextMessageStartEvent(id, events.WithRole("assistant")))
			stamped(m, events.NewTextMessageContentEvent(id, prose(rand.New(rand.NewPCG(uint64(i), 1)), 300)))
			if i%2 == 0 {
				stamped(m, events.NewTextMessageEndEvent(id)) // odd messages stay open
			}
		}
	}
	livePacked(t, s.Stream, 2)
	// Trim both to a first frame inside the packed prefix's second block.
	target := s.packed.blocks[1].first + 5
	for _, m := range []*mergedStream{s, ref} {
		m.Stream.mu.Lock()
		for m.firstID < target {
			m.trimFirst()
		}
		m.Stream.mu.Unlock()
	}
	if s.packed.first != s.packed.blocks[0].first || s.packed.blocks[0].first >= s.firstID {
		t.Fatalf("log from %d, packed from %d", s.firstID, s.packed.first)
	}
	for _, c := range []uint64{0, 1, target - 2, target - 1, target, target + 1, s.lastID - 1} {
		sameAnswer(t, c, answerNow(t, s.Stream, c), answerNow(t, ref.Stream, c))
	}
}

// TestLivePackedLogConcurrentReaders: subscribers join and read while the
// run appends and packs (a race detector test); each reads what a
// subscriber at its cursor reads from the unpacked log.
func TestLivePackedLogConcurrentReaders(t *testing.T) {
	opts := unbounded(ModeCustom, 0, 0)
	s, ref := testStream(opts), testStream(opts)
	ref.packAt = -1
	restS, restRef := liveRun(s, 1200), liveRun(ref, 1200)
	restRef()
	ref.finish(false)
	half := s.lastID
	var wg sync.WaitGroup
	got := make([][]Frame, 8)
	errs := make([]error, len(got))
	for i := range got {
		wg.Go(func() {
			sub, err := s.Subscribe(uint64(i) * half / uint64(len(got)))
			for err == nil {
				var f *Frame
				if f, err = sub.Next(context.Background()); err == nil {
					got[i] = append(got[i], Frame{ID: f.ID, Type: f.Type, Data: f.Data})
				}
			}
			if !errors.Is(err, io.EOF) {
				errs[i] = err
			}
		})
	}
	restS()
	s.finish(true)
	wg.Wait()
	for i := range got {
		c := uint64(i) * half / uint64(len(got))
		if errs[i] != nil {
			t.Fatalf("cursor %d: %v", c, errs[i])
		}
		sameAnswer(t, c, answer{frames: got[i]}, answerAt(t, ref.Stream, c))
	}
	if sub, err := s.Subscribe(s.lastID); !errors.Is(err, ErrComplete) {
		t.Fatalf("cursor at the end: %v, %v", sub, err)
	}
}

// BenchmarkLiveRunHeap reports the heap a live run holds (its stream and
// merge state) after 500 text deltas of 48 bytes of one delegation, the
// end-to-end benchmark's shape, with its replay log unpacked until the
// run ends (B/run-unpacked) and packed as it goes (B/run-packed).
func BenchmarkLiveRunHeap(b *testing.B) {
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	measure := func(n, packAt int) float64 {
		build := benchRun(500, true, packAt, true)
		base := heap()
		runs := make([]*mergedStream, n)
		for i := range runs {
			runs[i] = build()
		}
		held := heap()
		runtime.KeepAlive(runs)
		return float64(int64(held)-int64(base)) / float64(n)
	}
	var unpacked, packed float64
	for b.Loop() {
		unpacked, packed = measure(100, -1), measure(100, 0)
	}
	b.ReportMetric(unpacked, "B/run-unpacked")
	b.ReportMetric(packed, "B/run-packed")
}

// While nothing opens or closes, a live stream's packed blocks share the
// open state at their start instead of holding a copy each (a state with
// many open subagents is kilobytes of maps); a block after a change has
// its own. TestLivePackedLogAnswersLikeTheLog shows replay unchanged.
func TestLiveBlocksShareTheirOpenState(t *testing.T) {
	s := testStream(unbounded(ModeCustom, 0, 0))
	rest := liveRun(s, 3000)
	livePacked(t, s.Stream, 5)
	check := func(wantDistinct int) {
		t.Helper()
		s.Stream.mu.Lock()
		defer s.Stream.mu.Unlock()
		p := &s.packed
		distinct := map[*openState]bool{}
		for i, b := range p.blocks {
			distinct[b.state] = true
			if i == 0 {
				continue
			}
			changes := false
			for id := p.blocks[i-1].first; id < b.first; id++ {
				changes = changes || stateEvent(p.frameType(int(id-p.first))) != nil
			}
			if shared := b.state == p.blocks[i-1].state; shared == changes {
				t.Errorf("block %d: shares its state with the block before: %v; frames that open or close between them: %v", i, shared, changes)
			}
		}
		if wantDistinct > 0 && len(distinct) != wantDistinct {
			t.Errorf("%d blocks hold %d distinct states, want %d", len(p.blocks), len(distinct), wantDistinct)
		}
	}
	// The first block holds the openings (run, message, tool calls,
	// subagents); every later one starts with the same things open.
	check(2)
	rest()
	check(0)
}

// A Mirror's log (a run followed from another replica's journal) is packed
// as it grows, as the run's own stream is.
func TestLiveMirrorLogIsPacked(t *testing.T) {
	opts := unbounded(ModeStandard, 0, 0)
	opts.Clock = func() time.Time { return testEpoch }
	mr := NewMirror("th-1", "run-1", opts)
	s := makeStream("th-1", "run-1", opts)
	evs := []events.Event{events.NewRunStartedEvent("th-1", "run-1")}
	for i := range 200 {
		id := fmt.Sprintf("m%d", i)
		evs = append(evs, events.NewTextMessageStartEvent(id, events.WithRole("assistant")),
			events.NewTextMessageContentEvent(id, prose(rand.New(rand.NewPCG(uint64(i), 1)), 300)),
			events.NewTextMessageEndEvent(id))
	}
	for i, ev := range evs {
		ev.SetTimestamp(testEpoch.UnixMilli())
		f := s.frame(ev)
		if f == nil {
			t.Fatalf("event %d: no frame", i)
		}
		if err := mr.Append(uint64(i+1), f.Type, f.Data); err != nil {
			t.Fatal(err)
		}
	}
	livePacked(t, mr.Stream(), 2)
}
