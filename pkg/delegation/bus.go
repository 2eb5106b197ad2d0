package delegation

import (
	"context"
	"sync"
	"time"
)

// EventBus carries delegation events from delegators to the UI side, scoped
// by run. Publish never blocks the delegator; each subscriber has its own
// bounded queue (see [MemoryBus]).
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
)

// StatusStreamDropped is the Status of the subagent.status event a
// subscriber receives in place of text deltas it had to drop; Raw["dropped"]
// holds the count.
const StatusStreamDropped = "stream.dropped"

// MemoryBus is the in-process EventBus. Per subscriber, critical events
// (started, input_required, terminal) are never dropped, repeated identical
// statuses of a delegation are de-duplicated, and under a slow consumer
// text deltas are coalesced per (DelegationID, RemoteMessageID) with their
// order preserved; only beyond MaxVolatileBytes are deltas dropped, and
// then a StatusStreamDropped event says so. Safe for concurrent use.
type MemoryBus struct {
	// Buffer and MaxVolatileBytes override the defaults when set before use.
	Buffer           int
	MaxVolatileBytes int

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

// Publish implements EventBus.
func (b *MemoryBus) Publish(ev DelegationEvent) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.run(ev.RunID)
	if r.closed {
		return
	}
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
		// are always kept.
		if len(r.backlog) < maxBacklog || ev.Kind.Critical() {
			r.backlog = append(r.backlog, ev)
		}
		return
	}
	for s := range r.subs {
		s.push(ev)
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
	s := &Subscription{buffer: buf, maxBytes: maxBytes, wake: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{}), direct: direct}
	if !direct {
		out := make(chan DelegationEvent, 16)
		s.C, s.out = out, out
	}
	b.mu.Lock()
	r := b.run(runID)
	if !r.subscribed {
		r.subscribed = true
		for _, ev := range r.backlog {
			s.push(ev)
		}
		r.backlog = nil
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
// hand-off per event (docs/design.md#the-bus).
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
// closed when the subscription ends; its owner goroutine (started by
// SubscribeRun) is the only closer. A direct subscription
// (SubscribeRunDirect) has no C and no goroutine: it is read with TryNext
// and Ready.
type Subscription struct {
	C <-chan DelegationEvent

	out      chan DelegationEvent
	buffer   int
	maxBytes int

	mu       sync.Mutex
	queue    []DelegationEvent
	volBytes int
	dropped  int
	droppedT int
	closing  bool

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
	}
	s.mu.Unlock()
	s.unregister()
	return DelegationEvent{}, false, true
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
			s.ended, s.queue = true, nil
			s.mu.Unlock()
			s.unregister()
			s.signal()
		}
	})
	<-s.stopped
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
	s.mu.Unlock()
	s.signal()
}

func (s *Subscription) push(ev DelegationEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if ev.Kind.Volatile() {
		if len(s.queue) >= s.buffer && s.coalesce(ev) {
			s.signal()
			return
		}
		if s.volBytes+len(ev.Delta) > s.maxBytes {
			s.dropped++
			s.droppedT++
			return
		}
		s.volBytes += len(ev.Delta)
	} else if s.dropped > 0 {
		s.queue = append(s.queue, DelegationEvent{
			RunID: ev.RunID, DelegationID: ev.DelegationID, AgentKey: ev.AgentKey, Protocol: ev.Protocol,
			Kind: DelegationStatus, Status: StatusStreamDropped, Raw: map[string]any{"dropped": s.dropped},
			Time: ev.Time, Seq: ev.Seq,
		})
		s.dropped = 0
	}
	s.queue = append(s.queue, ev)
	s.signal()
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
