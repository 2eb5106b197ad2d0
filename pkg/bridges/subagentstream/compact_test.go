package subagentstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// The packed log of an ended stream (packed.go) must answer every
// Subscribe exactly as the log did before it was packed.

var testEpoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// mergedStream is a stream and its merge state without a goroutine: the
// test feeds it with onParent and onDelegation itself, deterministically.
type mergedStream struct {
	*Stream
	*merger
}

func merged(s *Stream) *mergedStream { return &mergedStream{s, newMerger(s)} }

// testStream returns a stream with merge state and no goroutine.
func testStream(opts Options) *mergedStream {
	if opts.Clock == nil {
		opts.Clock = func() time.Time { return testEpoch }
	}
	s := makeStream("th-1", "run-1", opts)
	s.sdkRunID = "sdk-run-1"
	return merged(s)
}

// feedRun feeds s a parent run that delegates twice: del-1 streams deltas
// of size bytes (enough of them to span several packed blocks) and
// finishes; del-2 starts and is left to the parent's end, which closes it.
// When open is set the run is left open (no RUN_FINISHED).
func feedRun(s *mergedStream, deltas, size int, open bool) {
	feedRunText(s, deltas, open, func(rng *rand.Rand) string { return prose(rng, size) })
}

// feedRunText is feedRun with each delta's text from text.
func feedRunText(s *mergedStream, deltas int, open bool, text func(*rand.Rand) string) {
	at := func(i int) time.Time { return testEpoch.Add(time.Duration(i) * time.Millisecond) }
	s.onParent(events.NewRunStartedEvent("th-1", "run-1"))
	s.onParent(events.NewTextMessageStartEvent("m1", events.WithRole("assistant")))
	s.onParent(events.NewTextMessageContentEvent("m1", "Let me ask. "))
	s.onParent(events.NewToolCallStartEvent("toolu_1", "delegate_to_agent", events.WithParentMessageID("m1")))
	s.onParent(events.NewToolCallArgsEvent("toolu_1", `{"agent":"research"}`))
	s.onParent(events.NewToolCallEndEvent("toolu_1"))
	id := func(del string) delegation.DelegationEvent {
		return delegation.DelegationEvent{RunID: "sdk-run-1", DelegationID: del, ParentToolCallID: "toolu_1", AgentKey: "research",
			AgentName: "Research Agent", Protocol: "a2a", RemoteTaskID: "task-" + del, RemoteContextID: "ctx-1"}
	}
	ev := id("del-1")
	send := func(i int, kind delegation.DelegationEventKind, mod func(*delegation.DelegationEvent)) {
		e := ev
		e.Kind, e.Time = kind, at(i)
		if mod != nil {
			mod(&e)
		}
		s.onDelegation(e)
	}
	send(1, delegation.DelegationStarted, nil)
	send(2, delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status = "working" })
	send(3, delegation.DelegationTextStart, func(e *delegation.DelegationEvent) { e.RemoteMessageID = "rm" })
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range deltas {
		send(4+i, delegation.DelegationTextDelta, func(e *delegation.DelegationEvent) {
			e.RemoteMessageID, e.Delta = "rm", text(rng)+fmt.Sprintf(" <%d>", i)
		})
		if i == deltas/2 {
			// A second delegation in the middle, never finished by its remote.
			e := id("del-2")
			e.Kind, e.Time = delegation.DelegationStarted, at(4+i)
			s.onDelegation(e)
		}
	}
	send(4+deltas, delegation.DelegationTextEnd, func(e *delegation.DelegationEvent) { e.RemoteMessageID, e.Text = "rm", "the whole text" })
	send(5+deltas, delegation.DelegationFinished, func(e *delegation.DelegationEvent) { e.Text = "done" })
	if open {
		return
	}
	s.onParent(events.NewToolCallResultEvent("result-1", "toolu_1", "done"))
	s.onParent(events.NewTextMessageContentEvent("m1", "Done."))
	s.onParent(events.NewTextMessageEndEvent("m1"))
	s.onParent(events.NewRunFinishedEvent("th-1", "run-1"))
	releaseHeld(s)
}

// releaseHeld releases what the parent holds as if every hold timed out
// (del-2 never ends by itself).
func releaseHeld(s *mergedStream) {
	for len(s.held) > 0 {
		s.release(true)
	}
}

var words = strings.Fields("the of agent remote delegation stream frame text a an is was research result tool call message replay and to in it that")

// prose returns about n bytes of words.
// noise returns n bytes of random letters and digits: text no block
// compresses, so the packed log keeps it as it is.
func noise(rng *rand.Rand, n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

func prose(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}

// answer is what Subscribe(cursor) gives: an error, or the frames read to
// the end.
type answer struct {
	err    error
	frames []Frame
}

func readSub(t testing.TB, sub *Subscriber) []Frame {
	t.Helper()
	var out []Frame
	for {
		f, err := sub.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Frame{ID: f.ID, Type: f.Type, Data: f.Data})
	}
}

func answerAt(t testing.TB, s *Stream, cursor uint64) answer {
	sub, err := s.Subscribe(cursor)
	if err != nil {
		return answer{err: err}
	}
	return answer{frames: readSub(t, sub)}
}

func sameAnswer(t *testing.T, cursor uint64, got, want answer) {
	t.Helper()
	if (got.err == nil) != (want.err == nil) || got.err != nil && got.err.Error() != want.err.Error() {
		t.Fatalf("cursor %d: error %v, want %v", cursor, got.err, want.err)
	}
	if len(got.frames) != len(want.frames) {
		t.Fatalf("cursor %d: %d frames, want %d", cursor, len(got.frames), len(want.frames))
	}
	for i, f := range got.frames {
		w := want.frames[i]
		if f.ID != w.ID || f.Type != w.Type || !bytes.Equal(f.Data, w.Data) {
			t.Fatalf("cursor %d, frame %d:\n got %d %s %s\nwant %d %s %s", cursor, i, f.ID, f.Type, f.Data, w.ID, w.Type, w.Data)
		}
	}
}

func TestPackedLogAnswersLikeTheLog(t *testing.T) {
	for _, tc := range []struct {
		name         string
		mode         Mode
		replayFrames int
		deltas, size int
		// noise: the deltas are random text, each larger than a block, so
		// each is a block of its own that does not compress: kept as it
		// is (stored), and read the same.
		noise bool
	}{
		{"custom", ModeCustom, 0, 60, 2000, false},
		{"custom trimmed", ModeCustom, 45, 60, 2000, false},
		{"custom one block", ModeCustom, 0, 20, 48, false},
		{"custom incompressible", ModeCustom, 0, 3, packBlockBytes + 4000, true},
		{"standard", ModeStandard, 0, 60, 2000, false},
		{"standard trimmed", ModeStandard, 45, 60, 2000, false},
		{"tool nested trimmed", ModeToolNested, 40, 60, 2000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testStream(Options{Mode: tc.mode, ReplayFrames: tc.replayFrames})
			s.packAt = -1 // the log as it was, packed only when the stream ends
			text := func(rng *rand.Rand) string { return prose(rng, tc.size) }
			if tc.noise {
				text = func(rng *rand.Rand) string { return noise(rng, tc.size) }
			}
			feedRunText(s, tc.deltas, false, text)
			s.finish(false)
			if s.packed.len() != 0 {
				t.Fatal("finish(false) packed the log")
			}
			last, first := s.lastID, s.firstID
			if tc.replayFrames > 0 && first == 1 {
				t.Fatalf("the log was not trimmed (last %d)", last)
			}
			// Every cursor: 0, the trimmed part, the boundary, inside, the
			// last, beyond.
			want := make([]answer, last+2)
			for c := range last + 2 {
				want[c] = answerAt(t, s.Stream, c)
			}
			s.compact()
			if s.packed.len() == 0 || s.log != nil {
				t.Fatal("the ended stream's log was not packed")
			}
			if tc.size > 1000 && len(s.packed.blocks) < 2 {
				t.Fatalf("%d packed blocks: the test must span several", len(s.packed.blocks))
			}
			stored := 0
			for _, b := range s.packed.blocks {
				if b.stored {
					stored++
				}
			}
			if tc.noise && stored < tc.deltas || !tc.noise && stored > 0 {
				t.Fatalf("%d of %d blocks stored as they are, random text %v", stored, len(s.packed.blocks), tc.noise)
			}
			for c := range last + 2 {
				sameAnswer(t, c, answerAt(t, s.Stream, c), want[c])
			}
			if !errors.Is(want[last].err, ErrComplete) || !errors.Is(want[last+1].err, ErrUnknownCursor) {
				t.Fatalf("cursors %d, %d: %v, %v", last, last+1, want[last].err, want[last+1].err)
			}
			gap := false
			for _, f := range want[0].frames {
				gap = gap || f.ID == 0 && bytes.Contains(f.Data, []byte(EventReplayGap))
			}
			if gap != (first > 1) {
				t.Fatalf("cursor 0, log from %d: replay gap marker %v", first, gap)
			}
		})
	}
}

// TestPackingKeepsSubscribersGoing: subscribers that were reading when the
// stream ended, or joined before its log was packed, read on unchanged.
func TestPackingKeepsSubscribersGoing(t *testing.T) {
	s := testStream(Options{Mode: ModeStandard})
	s.packAt = -1 // packed only when the stream ends
	live, _ := s.Subscribe(0)
	feedRun(s, 60, 2000, true)
	all := make([]Frame, 0, len(s.log))
	for _, f := range s.log {
		all = append(all, Frame{ID: f.ID, Type: f.Type, Data: f.Data})
	}
	var half []Frame
	for range len(all) / 2 {
		f, err := live.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		half = append(half, Frame{ID: f.ID, Type: f.Type, Data: f.Data})
	}
	s.onParent(events.NewRunFinishedEvent("th-1", "run-1"))
	releaseHeld(s)
	for _, f := range s.log[len(all):] {
		all = append(all, Frame{ID: f.ID, Type: f.Type, Data: f.Data})
	}
	s.finish(false)
	joined, _ := s.Subscribe(0) // joined after the end, before packing
	s.compact()
	if s.packed.len() == 0 || len(s.log) != 0 {
		t.Fatal("not packed")
	}
	sameAnswer(t, 0, answer{frames: append(half, readSub(t, live)...)}, answer{frames: all})
	sameAnswer(t, 0, answer{frames: readSub(t, joined)}, answer{frames: all})
	packed, _ := s.Subscribe(0)
	if n := packed.Pending(); n != len(all) {
		t.Fatalf("Pending = %d, want %d", n, len(all))
	}
	if f, _ := packed.Next(context.Background()); f.ID != 1 {
		t.Fatalf("first frame %d", f.ID)
	}
	packed.Close()
	if _, err := packed.Next(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("a closed subscriber of a packed stream: %v, want io.EOF", err)
	}
}

// TestMirrorPacksWhenTheRunEnds: a Mirror ended by End or Abort packs its
// log and answers as before; Stop does not pack (what a live mirror packed
// as it went stays packed).
func TestMirrorPacksWhenTheRunEnds(t *testing.T) {
	src := testStream(Options{})
	src.packAt = -1
	feedRun(src, 60, 2000, false)
	frames := src.log
	last := src.lastID
	mirror := func(packAt int) *Mirror {
		m := NewMirror("th-1", "run-1", Options{Clock: src.Stream.opts.Clock})
		m.s.packAt = packAt
		for _, f := range frames {
			if err := m.Append(f.ID, f.Type, f.Data); err != nil {
				t.Fatal(err)
			}
		}
		return m
	}
	stopped := mirror(-1)
	stopped.Stop()
	if stopped.s.packed.len() != 0 {
		t.Fatal("Stop packed the log")
	}
	ended := mirror(0)
	ended.End(last)
	if ended.s.packed.len() == 0 || len(ended.s.log) != 0 {
		t.Fatal("End did not pack the log")
	}
	for c := range last + 2 {
		sameAnswer(t, c, answerAt(t, ended.s, c), answerAt(t, stopped.s, c))
	}

	// Abort: compare with a stopped mirror of the same frames.
	cut := NewMirror("th-1", "run-1", Options{Clock: src.Stream.opts.Clock})
	for _, f := range frames[:len(frames)/2] {
		_ = cut.Append(f.ID, f.Type, f.Data)
	}
	abort := cut.Abort("host_lost", "the host was lost")
	if cut.s.packed.len() == 0 || len(cut.s.log) != 0 {
		t.Fatal("Abort did not pack the log")
	}
	ref := NewMirror("th-1", "run-1", Options{Clock: src.Stream.opts.Clock})
	ref.s.packAt = -1
	for _, f := range append(frames[:len(frames)/2:len(frames)/2], abort...) {
		_ = ref.Append(f.ID, f.Type, f.Data)
	}
	ref.Stop()
	for c := range cut.LastID() + 2 {
		sameAnswer(t, c, answerAt(t, cut.s, c), answerAt(t, ref.s, c))
	}
}

// retained measures the heap that n ended streams made by build hold,
// before and after packing their logs, per stream.
func retained(n int, build func() *mergedStream) (before, after float64) {
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := heap()
	streams := make([]*Stream, n)
	for i := range streams {
		s := build()
		s.finish(false)
		streams[i] = s.Stream // its merge state goes with its goroutine
	}
	withLogs := heap()
	for _, s := range streams {
		s.compact()
	}
	packed := heap()
	runtime.KeepAlive(streams)
	return float64(int64(withLogs)-int64(base)) / float64(n), float64(int64(packed)-int64(base)) / float64(n)
}

// benchRun builds the ended stream of one delegation of the end-to-end
// benchmark (bench/e2e): the parent's run and tool call around a
// delegation of chunks text deltas of 48 bytes, with the identity a real
// A2A delegation carries; chunk text is the benchmark's (padding and a
// marker) or prose. packAt is the stream's (-1: its log is packed only
// when it ends); open leaves the delegation and the run open after the
// chunks, as they are while the delegation streams.
func benchRun(chunks int, benchText bool, packAt int, open bool) func() *mergedStream {
	seq := 0
	return func() *mergedStream {
		seq++
		rng := rand.New(rand.NewPCG(uint64(seq), 7))
		uuid := func() string {
			return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff)
		}
		runID := uuid()
		s := merged(makeStream("thread-"+uuid(), runID, Options{}))
		s.packAt = packAt
		call := "toolu_" + uuid()
		s.onParent(events.NewRunStartedEvent(s.threadID, runID))
		s.onParent(events.NewToolCallStartEvent(call, "mcp__agentadaptor__delegate_to_agent"))
		s.onParent(events.NewToolCallArgsEvent(call, `{"agent":"bench","objective":"chunks=50 interval_ms=20 size=48"}`))
		s.onParent(events.NewToolCallEndEvent(call))
		ev := delegation.DelegationEvent{RunID: runID, DelegationID: "del_" + uuid(), ParentToolCallID: call, AgentKey: "bench",
			AgentName: "Bench", Protocol: "a2a", RemoteTaskID: uuid(), RemoteContextID: uuid()}
		t0 := time.Now()
		send := func(i int, kind delegation.DelegationEventKind, mod func(*delegation.DelegationEvent)) {
			e := ev
			e.Kind, e.Time = kind, t0.Add(time.Duration(i)*20*time.Millisecond)
			if mod != nil {
				mod(&e)
			}
			s.onDelegation(e)
		}
		send(0, delegation.DelegationStarted, nil)
		send(1, delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status = "working" })
		send(2, delegation.DelegationTextStart, func(e *delegation.DelegationEvent) { e.RemoteMessageID = "assistant-output" })
		for i := range chunks {
			marker := fmt.Sprintf("~c%d:%d~", i, 1_000_000_000_000+rng.Int64N(1_000_000_000))
			text := strings.Repeat("x", 48-len(marker)-1) + " " + marker
			if !benchText {
				text = prose(rng, 48-len(marker)-1) + " " + marker
			}
			send(3+i, delegation.DelegationTextDelta, func(e *delegation.DelegationEvent) { e.RemoteMessageID, e.Delta = "assistant-output", text })
		}
		if open {
			return s
		}
		send(3+chunks, delegation.DelegationTextEnd, func(e *delegation.DelegationEvent) { e.RemoteMessageID = "assistant-output" })
		send(4+chunks, delegation.DelegationFinished, nil)
		s.onParent(events.NewToolCallResultEvent("result-"+call, call, `{"status":"completed"}`))
		s.onParent(events.NewRunFinishedEvent(s.threadID, runID))
		return s
	}
}

// BenchmarkRetainedEndedRun reports the heap an ended run holds for its
// retention, with its replay log as it was (B/run-log) and packed
// (B/run-packed), for a delegation of 50 chunks (the end-to-end
// benchmark's) and of 20,000.
func BenchmarkRetainedEndedRun(b *testing.B) {
	for _, tc := range []struct {
		chunks, runs int
		benchText    bool
	}{
		{50, 200, true}, {50, 200, false}, {20000, 3, true}, {20000, 3, false},
	} {
		text := "prose"
		if tc.benchText {
			text = "xpadded"
		}
		b.Run(fmt.Sprintf("chunks=%d/text=%s", tc.chunks, text), func(b *testing.B) {
			var before, after float64
			for b.Loop() {
				before, after = retained(tc.runs, benchRun(tc.chunks, tc.benchText, -1, false))
			}
			b.ReportMetric(before, "B/run-log")
			b.ReportMetric(after, "B/run-packed")
			b.ReportMetric(before/after, "x-smaller")
		})
	}
}

// BenchmarkPackLog: the cost of packing an ended run's log (once per run,
// on its merge goroutine), per frame.
func BenchmarkPackLog(b *testing.B) {
	for _, chunks := range []int{50, 20000} {
		b.Run(fmt.Sprintf("chunks=%d", chunks), func(b *testing.B) {
			s := benchRun(chunks, false, -1, false)()
			b.SetBytes(int64(s.logBytes))
			for b.Loop() {
				packFrames(s.log, newOpenState(), nil, packBlockBytes)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(s.log)), "ns/frame")
		})
	}
}

// BenchmarkReplayEnded: a reconnect from cursor 0 read to the end, from
// the log as it was and packed.
func BenchmarkReplayEnded(b *testing.B) {
	for _, packed := range []bool{false, true} {
		b.Run(fmt.Sprintf("packed=%v", packed), func(b *testing.B) {
			s := benchRun(20000, false, -1, false)()
			s.finish(packed)
			b.SetBytes(int64(s.logBytes))
			for b.Loop() {
				sub, _ := s.Subscribe(0)
				for {
					f, eof := sub.take()
					if f == nil && eof {
						break
					}
				}
			}
		})
	}
}
