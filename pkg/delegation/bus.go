package delegation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// EventBus carries delegation events from delegators to the UI side, scoped
// by run. Each subscriber has its own bounded queue (see [MemoryBus]):
// Publish never waits for a slow subscriber, except for the run's merge
// (a lossless, direct subscription), which it waits for when that one is
// full.
type EventBus interface {
	// Publish adds ev to its run's stream and assigns ev.Seq. Events of a
	// closed run are discarded.
	Publish(ev DelegationEvent)
	// SubscribeRun returns a subscription to runID's events published from
	// now on; the first subscriber of a run also receives what was published
	// before it subscribed. It ends when ctx ends or the run is closed (after its queued
	// events are delivered).
	SubscribeRun(ctx context.Context, runID string) *Subscription
	// CloseRun ends runID's stream: subscriptions deliver what they hold and
	// then close; later publishes are discarded.
	CloseRun(runID string)
}

// Defaults of a MemoryBus.
const (
	// DefaultSubscriberBuffer is how many queued events a subscriber holds
	// before text deltas are coalesced.
	DefaultSubscriberBuffer = 1024
	// DefaultMaxVolatileBytes bounds the queued text of one subscriber;
	// beyond it deltas are dropped and the drop is marked.
	DefaultMaxVolatileBytes = 4 << 20
	// DefaultMaxQueued bounds the events one subscriber holds, every lane
	// included (docs/design.md#backpressure).
	DefaultMaxQueued = 4096
	// DefaultMaxQueuedBytes bounds the estimated size of the events one
	// subscriber holds, every lane included.
	DefaultMaxQueuedBytes = 8 << 20
)

// ErrSubscriberOverflow is a Subscription's Err when it fell behind: its
// queue reached MaxQueued events or MaxQueuedBytes with an event that may
// not be dropped, so the bus disconnected it rather than hold more. Its
// reader resumes from another copy of the run's stream (for the UI, the
// mux's replay log).
var ErrSubscriberOverflow = errors.New("delegation: the subscriber fell behind its queue bound and was disconnected")

// StatusStreamDropped is the Status of the subagent.status event a
// subscriber receives in place of text deltas it had to drop; Raw["dropped"]
// holds the count.
const StatusStreamDropped = "stream.dropped"

// MemoryBus is the in-process EventBus. Per subscriber, critical events
// (started, input_required, terminal) are never dropped, repeated identical
// statuses of a delegation are de-duplicated, and under a slow consumer
// text deltas are coalesced per (DelegationID, RemoteMessageID) with their
// order preserved; only beyond MaxVolatileBytes (or a full queue) are
// deltas dropped, and then a StatusStreamDropped event says so.
//
// Every subscriber's queue is bounded for every lane: at most MaxQueued
// events and MaxQueuedBytes (estimated). A subscription read through C
// that reaches the bound with an event it may not drop is disconnected:
// its queue is let go, C closes and Err reports ErrSubscriberOverflow. A
// direct subscription (SubscribeRunDirect: the run's merge, whose output
// is the replay log every client resumes from) is lossless instead:
// Publish waits until its reader has made room. Safe for concurrent use.
type MemoryBus struct {
	// Buffer, MaxVolatileBytes, MaxQueued and MaxQueuedBytes override the
	// defaults when set before use.
	Buffer           int
	MaxVolatileBytes int
	MaxQueued        int
	MaxQueuedBytes   int

	mu   sync.Mutex
	runs map[string]*busRun
}

type busRun struct {
	seq        uint64
	subs       map[*Subscription]struct{}
	backlog    []DelegationEvent // events before the first subscriber
	subscribed bool
	lastStatus map[string]string
	closed     bool
	// backlogDrops are the events the backlog dropped, per delegation in
	// the order of their first drop, not yet marked by a stream.dropped
	// event.
	backlogDrops []backlogDrop
}

// backlogDrop counts the events of one delegation the backlog dropped;
// last is the newest of them (its identity fields make the marker's).
type backlogDrop struct {
	n    int
	last DelegationEvent
}

// NewMemoryBus returns an empty in-process bus.
func NewMemoryBus() *MemoryBus { return &MemoryBus{runs: map[string]*busRun{}} }

func (b *MemoryBus) run(runID string) *busRun {
	if b.runs == nil {
		b.runs = map[string]*busRun{}
	}
	r := b.runs[runID]
	if r == nil {
		r = &busRun{subs: map[*Subscription]struct{}{}, lastStatus: map[string]string{}}
		b.runs[runID] = r
	}
	return r
}

// Publish implements EventBus. It does not wait for subscribers, but for
// a direct subscription whose queue is full (the run's merge, which must
// not lose an event): then it waits until that subscription's reader has
// taken events, or the subscription or the run has ended. Text deltas
// never wait (they are coalesced or dropped with a marker).
func (b *MemoryBus) Publish(ev DelegationEvent) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	for {
		b.mu.Lock()
		r := b.run(ev.RunID)
		if r.closed {
			b.mu.Unlock()
			return
		}
		if !ev.Kind.Volatile() {
			if room := r.fullLossless(); room != nil {
				b.mu.Unlock()
				<-room
				continue
			}
		}
		b.publishLocked(r, ev)
		b.mu.Unlock()
		return
	}
}

// fullLossless returns, when a lossless subscription of the run is full, a
// channel closed when it has room again (or has ended); nil when none is.
// Called with b.mu held.
func (r *busRun) fullLossless() <-chan struct{} {
	for s := range r.subs {
		if s.lossless {
			if room := s.roomWait(); room != nil {
				return room
			}
		}
	}
	return nil
}

// publishLocked de-duplicates, numbers and hands out ev; called with b.mu
// held.
func (b *MemoryBus) publishLocked(r *busRun, ev DelegationEvent) {
	if ev.Kind == DelegationStatus && ev.Text == "" {
		if r.lastStatus[ev.DelegationID] == ev.Status {
			return
		}
	}
	if ev.Kind == DelegationStatus {
		r.lastStatus[ev.DelegationID] = ev.Status
	}
	if ev.Kind.Terminal() {
		delete(r.lastStatus, ev.DelegationID)
	}
	r.seq++
	ev.Seq = r.seq
	if !r.subscribed {
		// Nobody listens yet (the UI subscribes right after the run
		// starts, which may be after a fast first tool call): keep a
		// bounded backlog for the first subscriber. Critical events
		// are always kept; what is dropped is marked (stream.dropped,
		// raw.dropped) before the delegation's next kept event, or at
		// the end of the backlog.
		if len(r.backlog) < maxBacklog || ev.Kind.Critical() {
			r.markBacklogDrops(ev.DelegationID, ev.Seq)
			r.backlog = append(r.backlog, ev)
			return
		}
		i := slices.IndexFunc(r.backlogDrops, func(d backlogDrop) bool { return d.last.DelegationID == ev.DelegationID })
		if i < 0 {
			r.backlogDrops = append(r.backlogDrops, backlogDrop{})
			i = len(r.backlogDrops) - 1
		}
		r.backlogDrops[i].n++
		r.backlogDrops[i].last = ev
		return
	}
	for s := range r.subs {
		s.push(ev)
	}
}

// markBacklogDrops appends the stream.dropped marker of the backlog's
// dropped events of delegationID (all delegations' when "all" is set by
// passing ""), numbered seq.
func (r *busRun) markBacklogDrops(delegationID string, seq uint64) {
	kept := r.backlogDrops[:0]
	for _, d := range r.backlogDrops {
		if delegationID != "" && d.last.DelegationID != delegationID {
			kept = append(kept, d)
			continue
		}
		r.backlog = append(r.backlog, droppedMarker(d.last, d.n, seq))
	}
	clear(r.backlogDrops[len(kept):])
	r.backlogDrops = kept
}

// droppedMarker is the StatusStreamDropped status that takes the place of
// n dropped events of ev's delegation.
func droppedMarker(ev DelegationEvent, n int, seq uint64) DelegationEvent {
	return DelegationEvent{
		RunID: ev.RunID, DelegationID: ev.DelegationID, ParentToolCallID: ev.ParentToolCallID, AgentKey: ev.AgentKey,
		AgentName: ev.AgentName, Protocol: ev.Protocol, RemoteTaskID: ev.RemoteTaskID, RemoteContextID: ev.RemoteContextID,
		Kind: DelegationStatus, Status: StatusStreamDropped, Raw: map[string]any{"dropped": n}, Time: ev.Time, Seq: seq,
	}
}

// maxBacklog bounds the events a run keeps before its first subscriber.
const maxBacklog = 1024

// SubscribeRun implements EventBus.
func (b *MemoryBus) SubscribeRun(ctx context.Context, runID string) *Subscription {
	return b.subscribe(ctx, runID, false)
}

// SubscribeRunDirect implements DirectSubscriber: a subscription like
// SubscribeRun's, without its goroutine.
func (b *MemoryBus) SubscribeRunDirect(ctx context.Context, runID string) *Subscription {
	return b.subscribe(ctx, runID, true)
}

func (b *MemoryBus) subscribe(ctx context.Context, runID string, direct bool) *Subscription {
	buf, maxBytes := b.Buffer, b.MaxVolatileBytes
	if buf <= 0 {
		buf = DefaultSubscriberBuffer
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxVolatileBytes
	}
	maxQueued, maxQueuedBytes := b.MaxQueued, b.MaxQueuedBytes
	if maxQueued <= 0 {
		maxQueued = DefaultMaxQueued
	}
	if maxQueuedBytes <= 0 {
		maxQueuedBytes = DefaultMaxQueuedBytes
	}
	s := &Subscription{buffer: buf, maxBytes: maxBytes, maxQueued: maxQueued, maxQueuedBytes: maxQueuedBytes,
		wake: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{}), direct: direct, lossless: direct}
	if !direct {
		out := make(chan DelegationEvent, 16)
		s.C, s.out = out, out
	}
	b.mu.Lock()
	r := b.run(runID)
	if !r.subscribed {
		r.subscribed = true
		r.markBacklogDrops("", r.seq)
		for _, ev := range r.backlog {
			s.push(ev)
		}
		r.backlog, r.backlogDrops = nil, nil
	}
	if r.closed {
		s.closing = true
	} else {
		r.subs[s] = struct{}{}
	}
	b.mu.Unlock()
	unregister := func() {
		b.mu.Lock()
		if r := b.runs[runID]; r != nil {
			delete(r.subs, s)
		}
		b.mu.Unlock()
	}
	if direct {
		// No goroutine: the reader's TryNext observes the end; ctx ends
		// the subscription through an AfterFunc (which starts a goroutine
		// only when ctx ends, and is stopped by Close).
		s.unregister = sync.OnceFunc(unregister)
		s.stopCtx = context.AfterFunc(ctx, s.Close)
		close(s.stopped)
		return s
	}
	go s.dispatch(ctx, unregister)
	return s
}

// DirectSubscriber is implemented by buses whose subscriptions can be read
// without a goroutine of their own (MemoryBus). Such a subscription has no
// C: its single reader calls TryNext until it reports nothing, and waits on
// Ready in between. A reader saves one goroutine per subscription and one
// hand-off per event (docs/design.md#the-bus). It is meant for the run's
// merge: it is lossless, so while its queue is full, publishers wait for
// its reader (a reader that stops before the run ends must Close it).
type DirectSubscriber interface {
	SubscribeRunDirect(ctx context.Context, runID string) *Subscription
}

// CloseRun implements EventBus.
func (b *MemoryBus) CloseRun(runID string) {
	b.mu.Lock()
	r := b.run(runID)
	r.closed = true
	subs := r.subs
	r.subs = map[*Subscription]struct{}{}
	b.mu.Unlock()
	for s := range subs {
		s.closeAfterDrain()
	}
	// Forget the run after a while so late publishes are still discarded.
	time.AfterFunc(time.Minute, func() {
		b.mu.Lock()
		if b.runs[runID] == r {
			delete(b.runs, runID)
		}
		b.mu.Unlock()
	})
}

// Subscription is one subscriber's ordered view of a run's events. C is
// closed when the subscription ends (Err then says whether it was
// disconnected for falling behind); its owner goroutine (started by
// SubscribeRun) is the only closer. A direct subscription
// (SubscribeRunDirect) has no C and no goroutine: it is read with TryNext
// and Ready.
type Subscription struct {
	C <-chan DelegationEvent

	out            chan DelegationEvent
	buffer         int
	maxBytes       int
	maxQueued      int
	maxQueuedBytes int
	// lossless: never disconnected; publishers wait while it is full.
	lossless bool

	mu       sync.Mutex
	queue    []DelegationEvent
	volBytes int
	qBytes   int // estimated size of queue (eventSize)
	dropped  int
	droppedT int
	closing  bool
	err      error         // ErrSubscriberOverflow once disconnected
	room     chan struct{} // made by a publisher waiting for room; closed by the reader
	// peakLen and peakBytes are the largest queue the subscription held.
	peakLen, peakBytes int

	wake    chan struct{}
	done    chan struct{} // Close was called
	once    sync.Once
	stopped chan struct{}

	// A direct subscription's end: ended is set by Close (or its ctx) and
	// once the run was closed and everything queued was read.
	direct     bool
	ended      bool
	unregister func()
	stopCtx    func() bool
}

// Ready returns a channel that receives when a direct subscription may
// have an event (or has ended) for TryNext. Nil for a subscription read
// through C.
func (s *Subscription) Ready() <-chan struct{} {
	if !s.direct {
		return nil
	}
	return s.wake
}

// TryNext returns a direct subscription's next event without blocking: ok
// is false when none is queued, and end is true when none will come any
// more (the run was closed and everything was read, or the subscription
// was closed). A subscription read through C always reports end.
func (s *Subscription) TryNext() (ev DelegationEvent, ok, end bool) {
	if !s.direct {
		return DelegationEvent{}, false, true
	}
	s.mu.Lock()
	if !s.ended {
		if ev, ok, closing := s.popLocked(); ok {
			s.mu.Unlock()
			return ev, true, false
		} else if !closing {
			s.mu.Unlock()
			return DelegationEvent{}, false, false
		}
		s.ended = true
		s.releaseRoomLocked()
	}
	s.mu.Unlock()
	s.unregister()
	return DelegationEvent{}, false, true
}

// Err returns ErrSubscriberOverflow (wrapped) once the subscription was
// disconnected for falling behind its bound, nil otherwise.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Dropped returns how many text deltas this subscriber lost in total.
func (s *Subscription) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.droppedT
}

// Close ends the subscription now, discarding what is queued, and waits for
// its goroutine to stop.
func (s *Subscription) Close() {
	s.once.Do(func() {
		close(s.done)
		if s.direct {
			s.stopCtx()
			s.mu.Lock()
			s.ended, s.queue, s.qBytes, s.volBytes = true, nil, 0, 0
			s.releaseRoomLocked()
			s.mu.Unlock()
			s.unregister()
			s.signal()
		}
	})
	<-s.stopped
}

// roomWait returns, when the subscription is full, a channel closed once
// it has room again or has ended; nil when it has room.
func (s *Subscription) roomWait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.closing || len(s.queue) < s.maxQueued && s.qBytes < s.maxQueuedBytes {
		return nil
	}
	if s.room == nil {
		s.room = make(chan struct{})
	}
	return s.room
}

// releaseRoomLocked wakes the publishers waiting for room.
func (s *Subscription) releaseRoomLocked() {
	if s.room != nil {
		close(s.room)
		s.room = nil
	}
}

// overflowLocked disconnects a subscription that fell behind: its queue
// is let go, and its dispatcher closes C after what it holds.
func (s *Subscription) overflowLocked() {
	s.err = fmt.Errorf("%w: %d events (%d bytes) queued, the bound is %d events or %d bytes",
		ErrSubscriberOverflow, len(s.queue), s.qBytes, s.maxQueued, s.maxQueuedBytes)
	s.queue, s.qBytes, s.volBytes = nil, 0, 0
	s.once.Do(func() { close(s.done) })
}

func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Subscription) closeAfterDrain() {
	s.mu.Lock()
	s.closing = true
	s.releaseRoomLocked() // publishers of the closed run give up
	s.mu.Unlock()
	s.signal()
}

// push queues ev under the subscription's bounds: a delta is coalesced or
// dropped (and the drop marked); any other event that does not fit
// disconnects a subscription read through C. A lossless subscription's
// publisher waited for room (Publish), so it fits, but for the backlog a
// first subscriber receives at once.
func (s *Subscription) push(ev DelegationEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.err != nil {
		return
	}
	size := eventSize(&ev)
	if ev.Kind.Volatile() {
		if len(s.queue) >= s.buffer && s.coalesce(ev) {
			s.signal()
			return
		}
		if s.volBytes+len(ev.Delta) > s.maxBytes || len(s.queue) >= s.maxQueued || s.qBytes+size > s.maxQueuedBytes {
			s.dropped++
			s.droppedT++
			return
		}
		s.volBytes += len(ev.Delta)
	} else {
		if !s.lossless && (len(s.queue) >= s.maxQueued || s.qBytes+size > s.maxQueuedBytes) {
			s.overflowLocked()
			return
		}
		if s.dropped > 0 {
			m := droppedMarker(ev, s.dropped, ev.Seq)
			m.ParentToolCallID, m.AgentName, m.RemoteTaskID, m.RemoteContextID = "", "", "", ""
			s.queue = append(s.queue, m)
			s.qBytes += eventSize(&m)
			s.dropped = 0
		}
	}
	s.queue = append(s.queue, ev)
	s.qBytes += size
	s.peakLen, s.peakBytes = max(s.peakLen, len(s.queue)), max(s.peakBytes, s.qBytes)
	s.signal()
}

// eventSize estimates the memory an event holds in a queue: a fixed part
// and its strings, for the MaxQueuedBytes bound. Coalescing a delta adds
// its length, so a merged event's size is that of its parts.
func eventSize(ev *DelegationEvent) int {
	n := 256 + len(ev.RunID) + len(ev.ParentToolCallID) + len(ev.DelegationID) + len(ev.AgentKey) + len(ev.AgentName) +
		len(ev.Protocol) + len(ev.RemoteTaskID) + len(ev.RemoteContextID) + len(ev.RemoteMessageID) + len(ev.RemoteArtifactID) +
		len(ev.Kind) + len(ev.Delta) + len(ev.Text) + len(ev.Status) + 64*len(ev.Raw)
	if a := ev.Artifact; a != nil {
		n += 96 + len(a.ID) + len(a.Name) + len(a.MimeType) + len(a.URI)
		if a.Error != nil {
			n += len(a.Error.Message)
		}
	}
	if e := ev.Error; e != nil {
		n += 64 + len(e.Message) + len(e.RemoteStatus)
	}
	return n
}

// coalesce appends ev's delta to the latest queued event of the same
// delegation if that is a delta of the same message, and moves the merged
// event to the tail with ev's Seq, so that the queue's Seq never goes down;
// it reports success.
func (s *Subscription) coalesce(ev DelegationEvent) bool {
	for i := len(s.queue) - 1; i >= 0; i-- {
		q := s.queue[i]
		if q.DelegationID != ev.DelegationID {
			continue
		}
		if q.Kind == DelegationTextDelta && q.RemoteMessageID == ev.RemoteMessageID {
			q.Delta += ev.Delta
			q.Seq = ev.Seq
			copy(s.queue[i:], s.queue[i+1:])
			s.queue[len(s.queue)-1] = q
			s.volBytes += len(ev.Delta)
			s.qBytes += len(ev.Delta)
			s.peakBytes = max(s.peakBytes, s.qBytes)
			return true
		}
		return false
	}
	return false
}

func (s *Subscription) pop() (DelegationEvent, bool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.popLocked()
}

func (s *Subscription) popLocked() (DelegationEvent, bool, bool) {
	if len(s.queue) == 0 {
		return DelegationEvent{}, false, s.closing
	}
	ev := s.queue[0]
	s.queue[0] = DelegationEvent{}
	if len(s.queue) == 1 {
		s.queue = s.queue[:0] // emptied: reuse the backing array from its start
	} else {
		s.queue = s.queue[1:]
	}
	if ev.Kind.Volatile() {
		s.volBytes -= len(ev.Delta)
	}
	s.qBytes -= eventSize(&ev)
	if s.room != nil && len(s.queue) <= s.maxQueued*3/4 && s.qBytes <= s.maxQueuedBytes*3/4 {
		s.releaseRoomLocked() // publishers waiting for room go on, in a batch
	}
	return ev, true, false
}

func (s *Subscription) dispatch(ctx context.Context, unregister func()) {
	defer close(s.stopped)
	defer close(s.out)
	defer unregister()
	for {
		ev, ok, closing := s.pop()
		if !ok {
			if closing {
				return
			}
			select {
			case <-s.wake:
				continue
			case <-ctx.Done():
				return
			case <-s.done:
				return
			}
		}
		select {
		case s.out <- ev:
		case <-ctx.Done():
			return
		case <-s.done:
			return
		}
	}
}
