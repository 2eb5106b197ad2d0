package agentadaptor

import (
	"testing"
	"time"
)

// drain starts q and returns what it delivers until it closes its channel.
func drain(t *testing.T, q *payloadQueue) []StreamPayload {
	t.Helper()
	q.start()
	var out []StreamPayload
	for {
		select {
		case p, ok := <-q.out:
			if !ok {
				return out
			}
			out = append(out, p)
		case <-time.After(time.Minute):
			t.Fatalf("the stream never closed; delivered %d payloads", len(out))
		}
	}
}

func kindsOf(ps []StreamPayload) []StreamKind {
	ks := make([]StreamKind, len(ps))
	for i, p := range ps {
		ks[i] = p.Kind
	}
	return ks
}

func sameKinds(a, b []StreamKind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The terminal payload is the last one a run's stream delivers: whatever
// is pushed after it (a late parser line, a second terminal) is refused,
// and the stream closes after the terminal (docs/design.md#backpressure;
// RunHandle.StreamEvents).
func TestQueueAcceptsNothingAfterTheTerminal(t *testing.T) {
	q := newPayloadQueue("run-1", 8, 64, time.Minute)
	q.push(StreamPayload{Kind: KindTextDelta, MessageID: "m", Delta: "a"})
	q.push(StreamPayload{Kind: KindRunFinished})
	q.push(StreamPayload{Kind: KindTextDelta, MessageID: "m", Delta: "late"})
	q.push(StreamPayload{Kind: KindToolCallStart, ToolCallID: "t", ToolName: "x"})
	q.push(StreamPayload{Kind: KindRunFailed})
	got := drain(t, q)
	if want := []StreamKind{KindTextDelta, KindRunFinished}; !sameKinds(kindsOf(got), want) {
		t.Fatalf("delivered %v, want %v", kindsOf(got), want)
	}
	for i, p := range got {
		if p.Seq != uint64(i+1) || p.RunID != "run-1" {
			t.Errorf("payload %d: seq %d run %q", i, p.Seq, p.RunID)
		}
	}
	<-q.stopped
}

// A single dropped delta is announced: the next payload kept is preceded
// by one stream.dropped payload with count 1 (docs/design.md#backpressure,
// point 1), so a consumer never loses text without knowing it.
func TestQueueAnnouncesASingleDroppedDelta(t *testing.T) {
	q := newPayloadQueue("run-1", 2, 64, time.Minute)
	q.push(StreamPayload{Kind: KindTextStart, MessageID: "m"})
	q.push(StreamPayload{Kind: KindTextDelta, MessageID: "m", Delta: "kept"}) // the queue is full now
	q.push(StreamPayload{Kind: KindTextDelta, MessageID: "m", Delta: "lost"}) // dropped
	q.push(StreamPayload{Kind: KindTextEnd, MessageID: "m", Text: "kept lost"})
	q.push(StreamPayload{Kind: KindRunFinished})
	got := drain(t, q)
	want := []StreamKind{KindTextStart, KindTextDelta, KindStreamDropped, KindTextEnd, KindRunFinished}
	if !sameKinds(kindsOf(got), want) {
		t.Fatalf("delivered %v, want %v", kindsOf(got), want)
	}
	if got[1].Delta != "kept" || got[2].Dropped != 1 {
		t.Fatalf("delta %q, dropped %d; want the first delta kept and 1 dropped", got[1].Delta, got[2].Dropped)
	}
	<-q.stopped
}
