package subagentstream_test

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// slowRun is a parent with two delegating tool calls (toolu_a, toolu_b)
// blocked at the gate "go", and two clients of its stream: slow, never read
// until the end (the slowest client), and watch, read as frames come.
type slowRun struct {
	hub         *subagentstream.Hub
	parent      *shellParent
	slow, watch *subagentstream.Subscriber
	a, b        *pub
}

// slowSubscriberRun starts a slowRun with opts; it returns once both tool
// calls were emitted.
func slowSubscriberRun(t *testing.T, opts subagentstream.Options) *slowRun {
	t.Helper()
	bus := delegation.NewMemoryBus()
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{Stream: opts})
	a := &shellParent{dir: t.TempDir()}
	h := startParent(t, a, a.script(
		P{Kind: agentadaptor.KindToolCallStart, ToolCallID: "toolu_a", ToolName: "delegate_to_agent"},
		P{Kind: agentadaptor.KindToolCallStart, ToolCallID: "toolu_b", ToolName: "delegate_to_agent"},
		"wait:go",
		P{Kind: agentadaptor.KindToolCallResult, ToolCallID: "toolu_a", ToolResult: "a"},
		P{Kind: agentadaptor.KindToolCallResult, ToolCallID: "toolu_b", ToolResult: "b"},
	))
	st := hub.Start(h, "th", "run-coalesce")
	slow, err := st.Subscribe(0)
	if err != nil {
		t.Fatal(err)
	}
	watch, _ := st.Subscribe(0)
	readUntil(t, watch, func(f *subagentstream.Frame) bool { return strings.Contains(string(f.Data), "toolu_b") })
	return &slowRun{hub: hub, parent: a, slow: slow, watch: watch,
		a: newPub(bus, h.RunID(), "del-a", "toolu_a"), b: newPub(bus, h.RunID(), "del-b", "toolu_b")}
}

// end waits until the watching client saw both delegations finish — the
// merge goroutine hands every frame to all clients at once, so the slow
// client's queue then holds everything, merged as it was pushed — then
// lets the parent finish and returns what the slow client reads.
func (r *slowRun) end(t *testing.T) []*subagentstream.Frame {
	t.Helper()
	finished := 0
	readUntil(t, r.watch, func(f *subagentstream.Frame) bool {
		if label(f) == "CUSTOM(subagent.finished)" {
			finished++
		}
		return finished == 2
	})
	r.watch.Close()
	r.parent.release(t, "go")
	return readAll(t, r.slow)
}

// describe renders del-a's frames as "kind" or "kind:message:delta" or
// "kind:status".
func describe(fs []*subagentstream.Frame, delegationID string) []string {
	var out []string
	for _, f := range fs {
		v := value(f)
		if v["delegationId"] != delegationID {
			continue
		}
		s := strings.TrimPrefix(strings.TrimSuffix(label(f), ")"), "CUSTOM(subagent.")
		switch {
		case v["delta"] != nil:
			s += fmt.Sprintf(":%v:%v", v["messageId"], v["delta"])
		case v["status"] != nil && s == "status":
			s += fmt.Sprintf(":%v", v["status"])
		}
		out = append(out, s)
	}
	return out
}

// Under a slow client the mux coalesces a delegation's text deltas
// (docs/design.md#backpressure, point 3): a new delta merges into the newest
// queued delta of the same delegation and message only when no other frame
// of that delegation lies between — not a delta of its other message, not a
// status — so the delegation's events keep their order, across messages
// too; the merged frame moves to the tail with the newer id, so the cursor
// still increases (docs/design.md#guarantees 4 and 5).
func TestSlowSubscriberCoalescingKeepsDelegationOrderAndCursor(t *testing.T) {
	defer goleak.VerifyNone(t)
	// Buffer 1: the never-read subscriber coalesces every delta it can.
	r := slowSubscriberRun(t, subagentstream.Options{SubscriberBuffer: 1, SubscriberMaxBytes: 1 << 20})
	defer r.hub.Close()
	pa, pb := r.a, r.b
	pa.send(delegation.DelegationStarted)
	pb.send(delegation.DelegationStarted)
	pa.send(delegation.DelegationTextStart, msg("m1"))
	pa.send(delegation.DelegationTextStart, msg("m2"))
	pb.send(delegation.DelegationTextStart, msg("m1"))
	// Another delegation's frame between two deltas of del-a/m1: they merge,
	// and the merged frame is re-numbered after b1.
	pa.send(delegation.DelegationTextDelta, delta("m1", "a1"))
	pb.send(delegation.DelegationTextDelta, delta("m1", "b1"))
	pa.send(delegation.DelegationTextDelta, delta("m1", "a2"))
	// A delta of del-a's other message between: no merge.
	pa.send(delegation.DelegationTextDelta, delta("m2", "x1"))
	pa.send(delegation.DelegationTextDelta, delta("m1", "a3"))
	// A status of del-a between: no merge.
	pa.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status = "working" })
	pa.send(delegation.DelegationTextDelta, delta("m1", "a4"))
	pa.send(delegation.DelegationTextEnd, msg("m1"))
	pa.send(delegation.DelegationTextEnd, msg("m2"))
	pb.send(delegation.DelegationTextEnd, msg("m1"))
	pa.send(delegation.DelegationFinished)
	pb.send(delegation.DelegationFinished)
	frames := r.end(t)

	var last uint64
	for _, f := range frames {
		if f.ID == 0 {
			t.Fatalf("an id-less frame in a live stream: %s", f.Data)
		}
		if f.ID <= last {
			t.Fatalf("cursor %d after %d: a coalesced frame kept its old id (%v)", f.ID, last, labels(frames))
		}
		last = f.ID
	}
	got := strings.Join(describe(frames, "del-a"), " ")
	want := "started text.start text.start text.delta:m1:a1a2 text.delta:m2:x1 text.delta:m1:a3 status:working text.delta:m1:a4 text.end text.end finished"
	if got != want {
		t.Fatalf("del-a as the slow client saw it:\n got  %s\n want %s", got, want)
	}
	if got, want := strings.Join(describe(frames, "del-b"), " "), "started text.start text.delta:m1:b1 text.end finished"; got != want {
		t.Fatalf("del-b as the slow client saw it:\n got  %s\n want %s", got, want)
	}
	verify(t, frames)
}

// Past the byte bound a slow client's deltas are dropped, and the drop is
// always announced: a stream.dropped marker naming the delegation and the
// count comes before that delegation's next non-delta frame
// (docs/design.md#backpressure, docs/design.md#guarantees 5).
func TestSlowSubscriberAnnouncesDroppedDeltas(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := slowSubscriberRun(t, subagentstream.Options{SubscriberBuffer: 1, SubscriberMaxBytes: 8})
	defer r.hub.Close()
	pa, pb := r.a, r.b
	pa.send(delegation.DelegationStarted)
	pb.send(delegation.DelegationStarted)
	pa.send(delegation.DelegationTextStart, msg("m1"))
	pa.send(delegation.DelegationTextDelta, delta("m1", "0123456789")) // over the 8-byte bound: dropped
	pa.send(delegation.DelegationTextDelta, delta("m1", "abcdefghij")) // dropped
	pa.send(delegation.DelegationTextEnd, msg("m1"), func(e *delegation.DelegationEvent) { e.Text = "0123456789abcdefghij" })
	pa.send(delegation.DelegationFinished)
	pb.send(delegation.DelegationFinished)
	frames := r.end(t)
	i := findLabel(frames, "CUSTOM("+subagentstream.EventStreamDropped+")")
	if i < 0 {
		t.Fatalf("deltas dropped without a stream.dropped marker: %v", labels(frames))
	}
	v := value(frames[i])
	if v["delegationId"] != "del-a" || fmt.Sprint(v["dropped"]) != "2" || frames[i].ID != 0 {
		t.Errorf("marker %s, want an id-less {dropped: 2, delegationId: del-a}", frames[i].Data)
	}
	if next := frames[i+1]; label(next) != "CUSTOM(subagent.text.end)" || value(next)["delegationId"] != "del-a" {
		t.Errorf("the marker must come right before del-a's next frame, got %s", label(next))
	}
	if findLabel(frames, "CUSTOM(subagent.text.delta)") >= 0 {
		t.Errorf("a delta over the byte bound was delivered")
	}
	verify(t, frames)
}

// A client that joins late replays deltas from the log: they cost the
// client no memory of its own (they are the log's frames), so they do not
// count toward SubscriberMaxBytes — and draining them must not give the
// client credit beyond it either: a live delta over the bound is still
// dropped, with its marker.
func TestReplayedDeltasDoNotLoosenTheByteBound(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := slowSubscriberRun(t, subagentstream.Options{SubscriberMaxBytes: 8})
	defer r.hub.Close()
	pa, pb := r.a, r.b
	pa.send(delegation.DelegationStarted)
	pa.send(delegation.DelegationTextStart, msg("m1"))
	pa.send(delegation.DelegationTextDelta, delta("m1", "0123456789abcdefghij")) // in the log; over the live clients' bound
	pb.send(delegation.DelegationStarted)
	isBStarted := func(f *subagentstream.Frame) bool {
		return label(f) == "CUSTOM(subagent.started)" && value(f)["delegationId"] == "del-b"
	}
	readUntil(t, r.watch, isBStarted)
	st, ok := r.hub.Stream("run-coalesce")
	if !ok {
		t.Fatal("no stream")
	}
	late, err := st.Subscribe(0)
	if err != nil {
		t.Fatal(err)
	}
	replayed := readUntil(t, late, isBStarted)
	if !strings.Contains(strings.Join(describe(replayed, "del-a"), ","), "text.delta:m1:0123456789abcdefghij") {
		t.Fatalf("the late client did not replay the delta: %v", describe(replayed, "del-a"))
	}
	pa.send(delegation.DelegationTextDelta, delta("m1", "0123456789")) // live, over the bound while late is not read
	pa.send(delegation.DelegationTextEnd, msg("m1"), func(e *delegation.DelegationEvent) { e.Text = "0123456789abcdefghij0123456789" })
	pa.send(delegation.DelegationFinished)
	pb.send(delegation.DelegationFinished)
	r.end(t)
	rest := readAll(t, late)
	if got := describe(rest, "del-a"); strings.Contains(strings.Join(got, ","), "text.delta") {
		t.Errorf("a live delta over the byte bound reached the late client: %v", got)
	}
	if findLabel(rest, "CUSTOM("+subagentstream.EventStreamDropped+")") < 0 {
		t.Errorf("no stream.dropped marker for the late client: %v", labels(rest))
	}
	late.Close()
}
