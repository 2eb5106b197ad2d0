package subagentstream

import (
	"context"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// merger is a run's merge: it reads the parent's payloads and the run's
// bus subscription, orders and groups them
// (docs/design.md#how-the-mux-orders-a-run) and appends the resulting
// frames to its Stream. Every field is owned by the merge goroutine
// (Stream.start); the stream's replay log and subscribers are the
// stream's, behind its mutex, and reached only through Stream.append. The
// merger is let go with its goroutine: an ended stream keeps its log and
// little else.
type merger struct {
	out   *Stream
	opts  Options // out's
	runID string  // out's AG-UI runId

	dels delegations
	// held are parent events waiting for subagents' terminal events, in
	// order; holdUntil is when the head is released anyway.
	held      []events.Event
	holdUntil time.Time
	// cancelled: the parent was cancelled (RUN_ERROR cancelled), so the
	// terminals synthesized for open subagents say cancelled.
	cancelled bool
	// received is the Time of the bus event being handled, stamped on its
	// frames (Observer.Relayed).
	received time.Time
}

func newMerger(out *Stream) *merger {
	return &merger{out: out, opts: out.opts, runID: out.runID, dels: newDelegations()}
}

// run merges until the parent's stream has ended and nothing is held
// (then the stream ends, its log packed), or ctx ends (the hub closing:
// the stream ends as it is). It closes the bus subscription.
func (m *merger) run(ctx context.Context, payloads <-chan agentadaptor.StreamPayload, sub *delegation.Subscription, tr *agui.Translator) {
	defer sub.Close()
	bus := busReader{sub: sub, c: sub.C, ready: sub.Ready()}
	var hold holdTimer
	defer hold.stop()
	// The parent's RUN_STARTED opens the stream: delegation events wait on
	// the bus until the first parent event was translated.
	started := false
	for !tr.Done() || len(m.held) > 0 {
		// Delegation events published before a parent event was even
		// produced must come first: drain the bus before each parent event.
		if started {
			bus.drain(m.onDelegation)
		}
		m.release(false)
		if len(m.held) > 0 {
			hold.arm(m.holdUntil)
		}
		if tr.Done() && len(m.held) == 0 {
			break
		}
		in := payloads
		if tr.Done() {
			in = nil
		}
		busC, readyC := bus.wait(started)
		select {
		case p, ok := <-in:
			started = true
			if !m.onPayload(tr, p, ok) {
				payloads = nil
			}
		case ev, ok := <-busC:
			bus.received(ev, ok, m.onDelegation)
		case <-readyC:
			bus.drain(m.onDelegation)
		case <-hold.c:
			hold.fired()
			if !m.opts.Clock().Before(m.holdUntil) {
				m.release(true)
			}
		case <-ctx.Done():
			m.out.finish(false) // the hub is closing: nothing is kept
			return
		}
	}
	m.out.finish(true)
}

// onPayload translates one parent payload; ok false means the payloads
// ended, and the translator closes the parent's stream. It reports
// whether the payloads are still open.
func (m *merger) onPayload(tr *agui.Translator, p agentadaptor.StreamPayload, ok bool) bool {
	if !ok {
		for _, ev := range tr.Close(agui.CodeStreamEnded, "") {
			m.onParent(ev)
		}
		return false
	}
	if p.Kind == agentadaptor.KindStreamDropped && m.opts.Observer != nil {
		m.opts.Observer.Dropped(DropSDK, p.Dropped)
	}
	for _, ev := range tr.Translate(p) {
		m.onParent(ev)
	}
	return true
}

// busReader reads the run's bus subscription for the merge goroutine:
// from its queue when the bus offers that (delegation.DirectSubscriber: no
// goroutine, no hand-off per event), otherwise through its channel.
type busReader struct {
	sub   *delegation.Subscription
	c     <-chan delegation.DelegationEvent // nil for a direct subscription, or once closed
	ready <-chan struct{}                   // nil for a channel subscription, or once ended
}

// drain handles every event the subscription holds now, without waiting.
func (b *busReader) drain(handle func(delegation.DelegationEvent)) {
	for b.ready != nil {
		ev, ok, end := b.sub.TryNext()
		if end {
			b.ready = nil
			break
		}
		if !ok {
			break
		}
		handle(ev)
	}
	for b.c != nil {
		select {
		case ev, ok := <-b.c:
			if !b.received(ev, ok, handle) {
				return
			}
		default:
			return
		}
	}
}

// wait returns what the merge waits on for the next bus event: the
// channel's events, or the direct subscription's readiness (drain then);
// nothing before the parent's first event.
func (b *busReader) wait(started bool) (<-chan delegation.DelegationEvent, <-chan struct{}) {
	if !started {
		return nil, nil
	}
	return b.c, b.ready
}

// received handles an event received from the channel (ok false: it
// closed) and reports whether the channel is still open.
func (b *busReader) received(ev delegation.DelegationEvent, ok bool, handle func(delegation.DelegationEvent)) bool {
	if !ok {
		b.c = nil
		return false
	}
	handle(ev)
	return true
}

// holdTimer wakes the merge goroutine when the head of its held parent
// events is due to be released anyway (HoldTimeout).
type holdTimer struct {
	t *time.Timer
	c <-chan time.Time // nil while not armed
}

// arm sets the timer for until, unless it is set already.
func (h *holdTimer) arm(until time.Time) {
	if h.c == nil {
		h.t = time.NewTimer(max(time.Until(until), 0))
		h.c = h.t.C
	}
}

// fired disarms the timer after it fired.
func (h *holdTimer) fired() { h.t, h.c = nil, nil }

func (h *holdTimer) stop() {
	if h.t != nil {
		h.t.Stop()
	}
}

// onParent handles one parent AG-UI event: correlation bookkeeping, then
// emit it or hold it until the subagents it waits for have ended.
func (m *merger) onParent(ev events.Event) {
	if e, ok := ev.(*events.ToolCallStartEvent); ok && m.opts.IsDelegationTool(e.ToolCallName) && m.onDelegationCall(e) {
		return
	}
	if e, ok := ev.(*events.RunErrorEvent); ok && e.Code != nil && *e.Code == agui.CodeCancelled {
		m.cancelled = true
	}
	if len(m.held) == 0 && m.blocks(ev) {
		m.holdUntil = m.opts.Clock().Add(m.holdDuration(ev))
	}
	if len(m.held) > 0 || m.blocks(ev) {
		m.held = append(m.held, ev)
		return
	}
	m.emitNow(ev)
}

// onDelegationCall pairs a parent's delegating tool call with its
// delegation. It reports whether it emitted the call already: a call that
// continues a delegation already shown, or one that claims a delegation
// shown without its call (which a correlated status then announces).
func (m *merger) onDelegationCall(e *events.ToolCallStartEvent) bool {
	g, continues := m.dels.callStarted(e.ToolCallID)
	if continues {
		// It continues a delegation already shown: no new one to pair.
		m.emitNow(e)
		return true
	}
	if g == nil {
		return false
	}
	m.emitNow(e)
	st := g.last
	st.Kind, st.Status, st.ParentToolCallID = delegation.DelegationStatus, "correlated", e.ToolCallID
	st.Delta, st.Text, st.Artifact, st.Error, st.Raw = "", "", nil, nil, nil
	m.emitDelegation(g, st)
	return true
}

func (m *merger) holdDuration(ev events.Event) time.Duration {
	if e, ok := ev.(*events.ToolCallResultEvent); ok && !m.dels.hasGroupFor(e.ToolCallID) {
		// The delegation may have failed before publishing anything: wait
		// only for the bus to catch up.
		return min(m.opts.HoldTimeout, 250*time.Millisecond)
	}
	return m.opts.HoldTimeout
}

// blocks reports whether ev must wait for subagent terminal events.
func (m *merger) blocks(ev events.Event) bool {
	switch e := ev.(type) {
	case *events.ToolCallResultEvent:
		return m.dels.resultWaits(e.ToolCallID)
	case *events.RunFinishedEvent, *events.RunErrorEvent:
		return m.dels.anyOpen(m.dels.order)
	}
	return false
}

// release emits held events that no longer block. With force (the hold
// timed out) the head is released even if it still blocks; a held terminal
// event then first closes every open subagent.
func (m *merger) release(force bool) {
	for len(m.held) > 0 {
		head := m.held[0]
		if m.blocks(head) {
			if !force {
				return
			}
			if _, isResult := head.(*events.ToolCallResultEvent); !isResult {
				m.closeOpenGroups()
			}
		}
		force = false
		m.held = m.held[1:]
		m.emitNow(head)
		if len(m.held) > 0 && m.blocks(m.held[0]) {
			m.holdUntil = m.opts.Clock().Add(m.holdDuration(m.held[0]))
			return
		}
	}
}

// closeOpenGroups synthesizes a terminal event for every open delegation,
// saying why, before the parent's terminal event.
func (m *merger) closeOpenGroups() {
	for _, id := range m.dels.order {
		g := m.dels.groups[id]
		if g.terminal {
			continue
		}
		ev := g.last
		ev.Delta, ev.Text, ev.Artifact, ev.Status = "", "", nil, ""
		ev.Raw = map[string]any{"synthesized": true}
		if m.cancelled {
			ev.Kind = delegation.DelegationCancelled
			ev.Error = &delegation.DelegationError{Code: delegation.CodeCancelled, Message: "the parent run was cancelled before the remote agent reported a terminal state"}
		} else {
			ev.Kind = delegation.DelegationFailed
			ev.Error = &delegation.DelegationError{Code: delegation.CodeParentRunEnded, Message: "the parent run ended before the remote agent reported a terminal state"}
		}
		m.emitDelegation(g, ev)
	}
}

// onDelegation handles one bus event: grouping, correlation, lifecycle
// guarantees (started first, one terminal), de-duplication.
func (m *merger) onDelegation(ev delegation.DelegationEvent) {
	if ev.DelegationID == "" {
		return
	}
	if m.opts.Observer != nil && ev.Kind == delegation.DelegationStatus && ev.Status == delegation.StatusStreamDropped {
		if n, ok := ev.Raw["dropped"].(int); ok { // the bus's own marker (a remote's Raw is decoded JSON)
			m.opts.Observer.Dropped(DropBus, n)
		}
	}
	m.received = ev.Time
	defer func() { m.received = time.Time{} }()
	if !ev.Kind.Known() && m.opts.Unknown == IgnoreUnknown {
		return
	}
	g := m.dels.groupOf(ev)
	if g.terminal {
		return // nothing after a delegation's terminal event
	}
	m.dels.noteContinuation(g, ev)
	g.noteParked(ev)
	if g.repeats(ev) {
		return
	}
	if ev.ParentToolCallID == "" {
		ev.ParentToolCallID = g.parent
	}
	if !g.started && ev.Kind != delegation.DelegationStarted {
		st := ev
		st.Kind, st.Delta, st.Text, st.Artifact, st.Error, st.Status = delegation.DelegationStarted, "", "", nil, nil, ""
		st.Raw = map[string]any{"synthesized": true}
		m.emitDelegation(g, st)
	}
	m.emitDelegation(g, ev)
}

// append stamps f with the receipt time of the bus event being handled
// and appends it to the stream.
func (m *merger) append(f *Frame) {
	f.received = m.received
	m.out.append(f)
}
