package subagentstream

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// merger is a run's merge: it reads the parent's payloads and the run's
// bus subscription, orders and groups them
// (docs/design.md#how-the-mux-orders-a-run) and appends the resulting
// frames to its Stream. Its fields below mu are guarded by mu and
// changed by whoever holds it: the merge goroutine (Stream.start), which
// takes the parent's payloads and the hold's timer, or, on an inline bus
// subscription (delegation.InlineSubscriber), a delegation's publisher,
// which merges the events it published right there (busReady) while
// nothing is held, so that no goroutine is woken per delegation event.
// The stream's replay log and subscribers are the stream's, behind its
// own mutex, and reached only through Stream.append. The merger is let go
// with its goroutine: an ended stream keeps its log and little else.
type merger struct {
	out   *Stream
	opts  Options // out's
	runID string  // out's AG-UI runId

	// pending is set by busReady when the bus queued events that the
	// holder of mu has still to take; kick (one slot) wakes the merge
	// goroutine when an inline reader leaves events to it.
	pending atomic.Bool
	kick    chan struct{}

	mu  sync.Mutex
	bus busReader
	tr  *agui.Translator
	// started: the parent's first event was translated (delegation
	// events wait on the bus until then); finished: the stream has
	// ended, and nothing is merged any more.
	started, finished bool

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
	// unwritten are the direct subscribers that have frames appended
	// since mu was taken and not yet written, packDue whether the log's
	// tail is to be packed: writeOut does both before mu is let go, so
	// that what one payload or bus batch makes goes out in one write.
	unwritten []*Subscriber
	packDue   bool
}

// inlineBatch bounds the events one busReady call merges before it leaves
// the rest to the merge goroutine: a publisher does the run's merging
// while nobody else does, not everyone's for ever.
const inlineBatch = 256

func newMerger(out *Stream) *merger {
	return &merger{out: out, opts: out.opts, runID: out.runID, dels: newDelegations(), kick: make(chan struct{}, 1)}
}

// subscribe subscribes m to the run's bus events: inline where the bus
// offers it, else directly, else through a channel.
func (m *merger) subscribe(ctx context.Context, bus delegation.EventBus, runID string) *delegation.Subscription {
	var sub *delegation.Subscription
	switch b := bus.(type) {
	case delegation.InlineSubscriber:
		sub = b.SubscribeRunInline(ctx, runID, m.busReady)
		m.bus = busReader{sub: sub, direct: true, wake: m.kick}
	case delegation.DirectSubscriber:
		sub = b.SubscribeRunDirect(ctx, runID)
		m.bus = busReader{sub: sub, direct: true, wake: sub.Ready()}
	default:
		sub = bus.SubscribeRun(ctx, runID)
		m.bus = busReader{sub: sub, c: sub.C}
	}
	return sub
}

// run merges until the parent's stream has ended and nothing is held
// (then the stream ends, its log packed), or ctx ends (the hub closing:
// the stream ends as it is). It closes the bus subscription.
func (m *merger) run(ctx context.Context, payloads <-chan agentadaptor.StreamPayload, tr *agui.Translator) {
	m.mu.Lock()
	m.tr = tr
	sub := m.bus.sub
	m.mu.Unlock()
	defer sub.Close()
	var hold holdTimer
	defer hold.stop()
	for {
		m.mu.Lock()
		// Delegation events published before a parent event was even
		// produced must come first: drain the bus before each parent
		// event.
		if m.started {
			m.bus.drain(m.onDelegation)
		}
		m.release(false)
		if len(m.held) > 0 {
			hold.arm(m.holdUntil)
		}
		if m.tr.Done() && len(m.held) == 0 {
			break // with mu held
		}
		in := payloads
		if m.tr.Done() {
			in = nil
		}
		// The parent's RUN_STARTED opens the stream: nothing waits for
		// the bus before it.
		busC, wake := m.bus.wait(m.started)
		m.unlock()
		select {
		case p, ok := <-in:
			m.mu.Lock()
			m.started = true
			if !m.onPayload(p, ok) {
				payloads = nil
			}
			m.unlock()
		case ev, ok := <-busC:
			m.mu.Lock()
			m.bus.received(ev, ok, m.onDelegation)
			m.unlock()
		case <-wake:
			// drained at the top
		case <-hold.c:
			hold.fired()
			m.mu.Lock()
			if !m.opts.Clock().Before(m.holdUntil) {
				m.release(true)
			}
			m.unlock()
		case <-ctx.Done():
			m.mu.Lock()
			m.finished = true
			m.out.finish(false) // the hub is closing: nothing is kept
			m.mu.Unlock()
			return
		}
	}
	m.finished = true
	m.out.finish(true) // what writeOut has not written is left to each subscriber's owner
	m.mu.Unlock()
}

// busReady is the inline bus subscription's reader
// (delegation.InlineSubscriber): on the publisher's goroutine, it merges
// what the bus queued, unless another goroutine holds the merge, which
// then does it before letting go (unlock).
func (m *merger) busReady() {
	m.pending.Store(true)
	if m.mu.TryLock() {
		m.unlock()
	}
}

// unlock lets go of mu, first merging what an inline bus subscription
// queued meanwhile (pending); it tries again for what is queued while it
// lets go, unless another goroutine took mu, which then does the same.
func (m *merger) unlock() {
	for {
		if m.pending.Swap(false) {
			m.mergeQueued()
		}
		m.writeOut()
		m.mu.Unlock()
		if !m.pending.Load() || !m.mu.TryLock() {
			return
		}
	}
}

// mergeQueued merges, with mu held, the bus events queued for an inline
// subscription. It leaves them to the merge goroutine before the parent's
// first event (which the goroutine drains the bus for) and once the parent
// has ended; while parent events are held (releasing them is the merge
// goroutine's, with its timer) and past inlineBatch events it leaves them
// too, and kicks the goroutine.
func (m *merger) mergeQueued() {
	if m.finished || !m.started || m.tr.Done() && len(m.held) == 0 {
		return
	}
	if len(m.held) > 0 {
		m.kickLoop()
		return
	}
	for range inlineBatch {
		ev, ok, end := m.bus.sub.TryNext()
		if end {
			m.bus.direct = false
			m.kickLoop()
			return
		}
		if !ok {
			return
		}
		m.onDelegation(ev) // never holds anything: only parent events are held
	}
	m.kickLoop()
}

// kickLoop wakes the merge goroutine (for what mergeQueued left to it).
func (m *merger) kickLoop() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// onPayload translates one parent payload; ok false means the payloads
// ended, and the translator closes the parent's stream. It reports
// whether the payloads are still open.
func (m *merger) onPayload(p agentadaptor.StreamPayload, ok bool) bool {
	tr := m.tr
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

// busReader reads the run's bus subscription for the merge: from its
// queue when the bus offers that (delegation.DirectSubscriber: no
// goroutine, no hand-off per event; delegation.InlineSubscriber: not
// even a wake-up), otherwise through its channel.
type busReader struct {
	sub *delegation.Subscription
	c   <-chan delegation.DelegationEvent // nil for a direct subscription, or once closed
	// direct: read with TryNext, until it reported the end; wake is what
	// the merge goroutine waits on for it (the subscription's Ready, or,
	// inline, the merger's kick).
	direct bool
	wake   <-chan struct{}
}

// drain handles every event the subscription holds now, without waiting.
func (b *busReader) drain(handle func(delegation.DelegationEvent)) {
	for b.direct {
		ev, ok, end := b.sub.TryNext()
		if end {
			b.direct = false
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

// wait returns what the merge goroutine waits on for the next bus event:
// the channel's events, or the direct subscription's wake-up (drain
// then); nothing before the parent's first event.
func (b *busReader) wait(started bool) (<-chan delegation.DelegationEvent, <-chan struct{}) {
	if !started {
		return nil, nil
	}
	if !b.direct {
		return b.c, nil
	}
	return b.c, b.wake
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
// and appends it to the stream; its direct subscribers get it when mu is
// let go (writeOut). Called with mu held.
func (m *merger) append(f *Frame) {
	f.received = m.received
	var pack bool
	m.unwritten, pack = m.out.queue(f, m.unwritten)
	m.packDue = m.packDue || pack
}

// writeOut writes what append left to the direct subscribers and packs
// the tail if it is due. Called with mu held, before it is let go.
func (m *merger) writeOut() {
	if len(m.unwritten) == 0 && !m.packDue {
		return
	}
	m.out.written(m.unwritten, m.packDue)
	clear(m.unwritten)
	m.unwritten, m.packDue = m.unwritten[:0], false
}
