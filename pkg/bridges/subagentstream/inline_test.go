package subagentstream

import (
	"context"
	"strconv"
	"testing"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// The run's merge reads an inline bus subscription
// (delegation.InlineSubscriber): a delegation event is merged on the
// goroutine that published it, while nothing waits, and left to the merge
// goroutine otherwise (docs/design.md#how-the-mux-orders-a-run). These
// tests drive a merger without its goroutine, as the goroutine would
// leave it between two parent events.

// inlineMerger returns a merger subscribed inline to a MemoryBus's run
// "sdk-run", its parent started (RUN_STARTED translated).
func inlineMerger(t *testing.T) (*merger, *delegation.MemoryBus) {
	t.Helper()
	s := makeStream("th-1", "run-1", Options{})
	m := newMerger(s)
	bus := delegation.NewMemoryBus()
	sub := m.subscribe(context.Background(), bus, "sdk-run")
	t.Cleanup(sub.Close)
	if !m.bus.direct || m.bus.wake != m.kick {
		t.Fatal("the merge did not take the MemoryBus's inline subscription")
	}
	m.tr = agui.NewTranslator(agui.Options{ThreadID: "th-1", RunID: "run-1"})
	m.started = true
	return m, bus
}

func delegationEvent(kind delegation.DelegationEventKind, text string) delegation.DelegationEvent {
	return delegation.DelegationEvent{RunID: "sdk-run", DelegationID: "del-1", AgentKey: "research", Protocol: "a2a",
		Kind: kind, Status: "working", Text: text}
}

// frames returns how many frames the merger's stream holds.
func (m *merger) frames() uint64 {
	m.out.mu.Lock()
	defer m.out.mu.Unlock()
	return m.out.lastID
}

func kicked(m *merger) bool {
	select {
	case <-m.kick:
		return true
	default:
		return false
	}
}

// A delegation event is in the stream when Publish returns: the publisher
// merged it, and the merge goroutine was not woken.
func TestInlineMergeOnThePublisher(t *testing.T) {
	m, bus := inlineMerger(t)
	bus.Publish(delegationEvent(delegation.DelegationStarted, ""))
	if got := m.frames(); got != 1 {
		t.Fatalf("after Publish returned the stream holds %d frames, want the started frame", got)
	}
	bus.Publish(delegationEvent(delegation.DelegationStatus, "searching"))
	if got := m.frames(); got != 2 {
		t.Fatalf("after the second Publish the stream holds %d frames, want 2", got)
	}
	if kicked(m) {
		t.Fatal("the merge goroutine was woken for events its publisher merged")
	}
}

// While another goroutine holds the merge (the merge goroutine handling a
// parent event), the publisher leaves its event; the holder merges it
// before it lets go.
func TestInlineMergeLeftToTheHolder(t *testing.T) {
	m, bus := inlineMerger(t)
	m.mu.Lock()
	bus.Publish(delegationEvent(delegation.DelegationStarted, ""))
	if got := m.frames(); got != 0 {
		t.Fatalf("the publisher merged while the merge was held: %d frames", got)
	}
	m.unlock()
	if got := m.frames(); got != 1 {
		t.Fatalf("after the holder let go the stream holds %d frames, want the started frame", got)
	}
}

// Before the parent's first event, delegation events wait on the bus: the
// merge goroutine drains them after RUN_STARTED.
func TestInlineMergeWaitsForTheParent(t *testing.T) {
	m, bus := inlineMerger(t)
	m.started = false
	bus.Publish(delegationEvent(delegation.DelegationStarted, ""))
	if got := m.frames(); got != 0 {
		t.Fatalf("a delegation event was merged before the parent's first event: %d frames", got)
	}
	m.mu.Lock()
	m.started = true
	m.bus.drain(m.onDelegation)
	m.mu.Unlock()
	if got := m.frames(); got != 1 {
		t.Fatalf("the queued event was not there for the merge goroutine: %d frames", got)
	}
}

// While a parent event is held, the publisher leaves its event to the
// merge goroutine, whose loop releases what the event unblocks, and wakes
// it.
func TestInlineMergeLeavesHeldEventsToTheLoop(t *testing.T) {
	m, bus := inlineMerger(t)
	m.held = append(m.held, events.NewRunFinishedEvent("th-1", "run-1"))
	bus.Publish(delegationEvent(delegation.DelegationStarted, ""))
	if got := m.frames(); got != 0 {
		t.Fatalf("the publisher merged while a parent event was held: %d frames", got)
	}
	if !kicked(m) {
		t.Fatal("the merge goroutine was not woken for the event left to it")
	}
}

// A publisher merges at most inlineBatch events at once: the rest is the
// merge goroutine's, which it wakes.
func TestInlineMergeIsBounded(t *testing.T) {
	m, bus := inlineMerger(t)
	bus.Publish(delegationEvent(delegation.DelegationStarted, ""))
	const n = inlineBatch + 10
	m.mu.Lock()
	for i := range n {
		bus.Publish(delegationEvent(delegation.DelegationStatus, strconv.Itoa(i)))
	}
	m.unlock()
	if got := m.frames(); got != 1+inlineBatch {
		t.Fatalf("one call merged %d events, want %d", got-1, inlineBatch)
	}
	if !kicked(m) {
		t.Fatal("the merge goroutine was not woken for the rest")
	}
	m.mu.Lock()
	m.bus.drain(m.onDelegation)
	m.mu.Unlock()
	if got := m.frames(); got != 1+n {
		t.Fatalf("after the merge goroutine's drain the stream holds %d frames, want %d", got, 1+n)
	}
}
