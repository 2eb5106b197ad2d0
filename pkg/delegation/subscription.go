package delegation

import (
	"context"
	"fmt"
	"sync"
)

// SubscriptionOptions configure a subscription made with NewSubscription.
// A zero bound takes its default (DefaultSubscriberBuffer,
// DefaultMaxVolatileBytes, DefaultMaxQueued, DefaultMaxQueuedBytes).
type SubscriptionOptions struct {
	// Buffer is how many queued events the subscription holds before text
	// deltas are coalesced.
	Buffer int
	// MaxVolatileBytes bounds its queued delta text; beyond it deltas are
	// dropped and the drop is marked.
	MaxVolatileBytes int
	// MaxQueued and MaxQueuedBytes bound the events it holds, every lane
	// included (docs/design.md#backpressure).
	MaxQueued      int
	MaxQueuedBytes int
	// Direct makes a subscription without C and without a goroutine, read
	// with TryNext and Ready (what a DirectSubscriber returns). It is
	// lossless: never disconnected; its Feed's Full tells the bus when to
	// wait for its reader.
	Direct bool
	// Inline, with Direct, makes the reader's wake-up a call instead of a
	// signal on Ready (what an InlineSubscriber returns): the bus calls it
	// through Feed.Notify on the goroutine that published, outside its
	// own locks, after it queued an event for the subscription or ended
	// it; Close calls it too. The reader takes what it can right there
	// with TryNext, so no goroutine is woken per event. It may be called
	// from several goroutines at once, and must not block or publish to
	// the same run while it holds a lock that its other callers wait for.
	// Ready is never signalled then.
	Inline func()
}

// NewSubscription returns a subscription to hand to the caller of
// SubscribeRun (or SubscribeRunDirect) and the Feed through which the bus
// delivers the run's events to it. It is how an EventBus outside this
// package makes its subscriptions: their queue, lanes, bounds, coalescing
// and drop markers are those of MemoryBus's subscribers. The subscription
// ends when ctx ends, when it is closed or disconnected, or after the
// Feed's End once what it holds was read. A subscription read through C
// has a goroutine of its own, started here and stopped by its end; a
// direct one has none.
func NewSubscription(ctx context.Context, opts SubscriptionOptions) (*Subscription, *Feed) {
	opts.defaults()
	s := &Subscription{buffer: opts.Buffer, maxBytes: opts.MaxVolatileBytes, maxQueued: opts.MaxQueued, maxQueuedBytes: opts.MaxQueuedBytes,
		wake: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{}), direct: opts.Direct, lossless: opts.Direct}
	if opts.Direct {
		s.inline = opts.Inline
	}
	s.feed.s = s
	if opts.Direct {
		// No goroutine: the reader's TryNext observes the end; ctx ends
		// the subscription through an AfterFunc (which starts a goroutine
		// only when ctx ends, and is stopped by Close).
		s.stopCtx = context.AfterFunc(ctx, s.Close)
		close(s.stopped)
		return s, &s.feed
	}
	out := make(chan DelegationEvent, 16)
	s.C, s.out = out, out
	go s.dispatch(ctx)
	return s, &s.feed
}

func (o *SubscriptionOptions) defaults() {
	if o.Buffer <= 0 {
		o.Buffer = DefaultSubscriberBuffer
	}
	if o.MaxVolatileBytes <= 0 {
		o.MaxVolatileBytes = DefaultMaxVolatileBytes
	}
	if o.MaxQueued <= 0 {
		o.MaxQueued = DefaultMaxQueued
	}
	if o.MaxQueuedBytes <= 0 {
		o.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
}

// Subscription is one subscriber's ordered view of a run's events. C is
// closed when the subscription ends (Err then says whether it was
// disconnected for falling behind); its owner goroutine (started by
// NewSubscription) is the only closer. A direct subscription
// (SubscribeRunDirect) has no C and no goroutine: it is read with TryNext
// and Ready. A bus delivers to it through its Feed.
type Subscription struct {
	C <-chan DelegationEvent

	feed           Feed
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
	// ended: no event will be delivered any more (closed, its context
	// ended, disconnected, or everything was read after the run's end).
	ended bool

	wake    chan struct{}
	done    chan struct{} // Close was called
	once    sync.Once
	stopped chan struct{}

	direct  bool
	inline  func() // SubscriptionOptions.Inline of a direct subscription
	stopCtx func() bool
}

// Feed is a bus's end of one Subscription (NewSubscription): the bus pushes
// the run's events into it in Seq order, one at a time, and ends it when
// the run is closed. Its methods never block and are safe to call under
// the bus's own lock, but Notify.
type Feed struct{ s *Subscription }

// Ready returns a channel that receives when a direct subscription may
// have an event (or has ended) for TryNext. Nil for a subscription read
// through C; never signalled for an inline one (SubscriptionOptions.Inline).
func (s *Subscription) Ready() <-chan struct{} {
	if !s.direct {
		return nil
	}
	return s.wake
}

// Inline reports whether the subscription's reader is called by the bus
// (SubscriptionOptions.Inline) rather than woken through Ready.
func (f *Feed) Inline() bool { return f.s.inline != nil }

// Notify calls an inline subscription's reader (SubscriptionOptions.Inline)
// on this goroutine: a bus calls it after Push or End, outside its own
// locks, so that the reader takes the events where they were published.
// It does nothing for other subscriptions, which Push and End signal.
func (f *Feed) Notify() {
	if f.s.inline != nil {
		f.s.inline()
	}
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
	defer s.mu.Unlock()
	if !s.ended {
		if ev, ok, closing := s.popLocked(); ok {
			return ev, true, false
		} else if !closing {
			return DelegationEvent{}, false, false
		}
		s.ended = true
		s.releaseRoomLocked()
	}
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
			s.signal()
			if s.inline != nil {
				s.inline()
			}
		}
	})
	<-s.stopped
}

// Full returns, when a lossless (direct) subscription's queue is at its
// bound, a channel closed once it has room again or has ended; nil when it
// has room, and always nil for a subscription read through C. A bus waits
// on it, outside its own locks, before it publishes an event that may not
// be dropped, so that the run's merge loses nothing (MemoryBus.Publish);
// text deltas never wait.
func (f *Feed) Full() <-chan struct{} {
	s := f.s
	if !s.lossless {
		return nil
	}
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

// signal wakes the reader waiting on Ready (or C's dispatcher); an inline
// reader is called by Notify instead.
func (s *Subscription) signal() {
	if s.inline != nil {
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// ended reports what Push reports false for: the subscription ended, was
// disconnected, or was ended by End.
func (f *Feed) ended() bool {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended || s.err != nil || s.closing
}

// End tells the subscription that its run was closed: it delivers what it
// holds, then ends (C closes; TryNext reports the end), and publishers
// waiting on Full go on. Later pushes are ignored.
func (f *Feed) End() {
	s := f.s
	s.mu.Lock()
	s.closing = true
	s.releaseRoomLocked() // publishers of the closed run give up
	s.mu.Unlock()
	s.signal()
}

// Push queues ev (numbered by the bus) under the subscription's bounds: a
// delta is coalesced or dropped (and the drop marked before the next event
// that is kept); any other event that does not fit disconnects a
// subscription read through C (ErrSubscriberOverflow). A lossless
// subscription's publisher waited for room (Full), so it fits, but for
// the backlog a first subscriber receives at once. Push never blocks. It
// reports false once the subscription has ended (closed, its context
// ended, disconnected) or was ended by End: the bus forgets it then.
func (f *Feed) Push(ev DelegationEvent) bool {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.err != nil || s.closing {
		return false
	}
	size := eventSize(&ev)
	if ev.Kind.Volatile() {
		if len(s.queue) >= s.buffer && s.coalesce(ev) {
			s.signal()
			return true
		}
		if s.volBytes+len(ev.Delta) > s.maxBytes || len(s.queue) >= s.maxQueued || s.qBytes+size > s.maxQueuedBytes {
			s.dropped++
			s.droppedT++
			return true
		}
		s.volBytes += len(ev.Delta)
	} else {
		if !s.lossless && (len(s.queue) >= s.maxQueued || s.qBytes+size > s.maxQueuedBytes) {
			s.overflowLocked()
			return false
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
	return true
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

// dispatch is the goroutine of a subscription read through C: it moves
// queued events to C until the subscription ends, then lets its queue go
// and closes C.
func (s *Subscription) dispatch(ctx context.Context) {
	defer close(s.stopped)
	defer close(s.out)
	defer func() {
		s.mu.Lock()
		s.ended, s.queue, s.qBytes, s.volBytes = true, nil, 0, 0
		s.mu.Unlock()
	}()
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
