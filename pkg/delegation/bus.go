package delegation

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// EventBus carries delegation events from delegators to the UI side, scoped
// by run (docs/design.md#the-bus). Each subscriber has its own bounded
// queue: Publish never waits for a slow subscriber, except for the run's
// merge (a lossless, direct subscription, see [DirectSubscriber]), which it
// waits for when that one is full.
//
// An implementation outside this package (a cluster's bus, a wrapper that
// counts or logs) makes its subscriptions with [NewSubscription] and
// delivers events through their [Feed], or hands out those of a bus it
// wraps; package pkg/delegation/bustest checks the guarantees below on any
// implementation.
type EventBus interface {
	// Publish adds ev to its run's stream and assigns ev.Seq, strictly
	// increasing per run in publish order. A status without text that
	// repeats its delegation's previous status is dropped; events of a
	// closed run are discarded.
	Publish(ev DelegationEvent)
	// SubscribeRun returns a subscription to runID's events published from
	// now on, in order. The first subscriber of a run also receives what
	// was published before it subscribed: a bounded backlog that keeps
	// every critical event and marks what it dropped with a
	// StatusStreamDropped status (Raw["dropped"]: the count) before the
	// delegation's next kept event or at its end. The subscription ends
	// when ctx ends, when it is closed, when it falls behind its bound
	// (Err: ErrSubscriberOverflow), or when the run is closed (after its
	// queued events are delivered).
	SubscribeRun(ctx context.Context, runID string) *Subscription
	// CloseRun ends runID's stream: subscriptions deliver what they hold and
	// then close; later publishes are discarded, and a later subscriber
	// gets nothing.
	CloseRun(runID string)
}

// Defaults of a MemoryBus and of SubscriptionOptions.
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
	seq uint64
	// subs are the run's subscriptions in subscription order (a slice:
	// a run has a few, and Publish walks them for every event).
	subs []*Feed
	// inline are the subs whose reader Publish calls after it let go of
	// the bus's lock (Feed.Notify); replaced, never changed in place, so
	// that Publish reads it under the lock and calls them after.
	inline     []*Feed
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
		r = &busRun{lastStatus: map[string]string{}}
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
		inline := r.inline
		b.mu.Unlock()
		for _, f := range inline {
			f.Notify()
		}
		return
	}
}

// fullLossless returns, when a lossless subscription of the run is full, a
// channel closed when it has room again (or has ended); nil when none is.
// Called with b.mu held.
func (r *busRun) fullLossless() <-chan struct{} {
	for _, f := range r.subs {
		if room := f.Full(); room != nil {
			return room
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
	ended := false
	for _, f := range r.subs {
		if !f.Push(ev) {
			ended = true
		}
	}
	if ended {
		r.forgetEnded()
	}
}

// forgetEnded removes the feeds of ended subscriptions from the run;
// called with b.mu held.
func (r *busRun) forgetEnded() {
	r.subs = slices.DeleteFunc(r.subs, (*Feed).ended)
	if slices.ContainsFunc(r.inline, (*Feed).ended) {
		r.inline = slices.DeleteFunc(slices.Clone(r.inline), (*Feed).ended)
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
	return b.subscribe(ctx, runID, SubscriptionOptions{})
}

// SubscribeRunDirect implements DirectSubscriber: a subscription like
// SubscribeRun's, without its goroutine.
func (b *MemoryBus) SubscribeRunDirect(ctx context.Context, runID string) *Subscription {
	return b.subscribe(ctx, runID, SubscriptionOptions{Direct: true})
}

// SubscribeRunInline implements InlineSubscriber: a direct subscription
// whose reader, ready, Publish calls on the publishing goroutine once it
// let go of the bus's lock, and CloseRun after the run's end.
func (b *MemoryBus) SubscribeRunInline(ctx context.Context, runID string, ready func()) *Subscription {
	return b.subscribe(ctx, runID, SubscriptionOptions{Direct: true, Inline: ready})
}

func (b *MemoryBus) subscribe(ctx context.Context, runID string, opts SubscriptionOptions) *Subscription {
	opts.Buffer, opts.MaxVolatileBytes, opts.MaxQueued, opts.MaxQueuedBytes = b.Buffer, b.MaxVolatileBytes, b.MaxQueued, b.MaxQueuedBytes
	s, feed := NewSubscription(ctx, opts)
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.run(runID)
	if !r.subscribed {
		r.subscribed = true
		r.markBacklogDrops("", r.seq)
		for _, ev := range r.backlog {
			feed.Push(ev)
		}
		r.backlog, r.backlogDrops = nil, nil
	}
	if r.closed {
		feed.End()
	} else {
		r.subs = append(r.subs, feed)
		if feed.Inline() {
			r.inline = append(slices.Clip(r.inline), feed)
		}
	}
	// The backlog is not announced to an inline reader: it has no
	// subscription to read before this returns, and reads what is queued
	// when it starts.
	return s
}

// DirectSubscriber is implemented by buses whose subscriptions can be read
// without a goroutine of their own (MemoryBus; another bus makes them with
// NewSubscription and SubscriptionOptions.Direct). Such a subscription has
// no C: its single reader calls TryNext until it reports nothing, and waits
// on Ready in between. A reader saves one goroutine per subscription and
// one hand-off per event (docs/design.md#the-bus). It is meant for the
// run's merge: it is lossless, so while its queue is full, publishers wait
// for its reader (a reader that stops before the run ends must Close it).
type DirectSubscriber interface {
	SubscribeRunDirect(ctx context.Context, runID string) *Subscription
}

// InlineSubscriber is implemented by buses that can call a direct
// subscription's reader where an event is published (MemoryBus; another
// bus makes such subscriptions with NewSubscription and
// SubscriptionOptions.Inline, and calls Feed.Notify after Push and End,
// outside its own locks). SubscribeRunInline returns a direct subscription
// whose reader is ready: instead of a signal on Ready that wakes the
// goroutine waiting there, the bus calls ready on the publisher's
// goroutine after each event it queued for the subscription, and after
// the run's end; ready takes what it can with TryNext and leaves the rest
// for its reader's next call. The run's merge reads the bus this way:
// no goroutine is woken per event (docs/design.md#the-bus). ready may run
// on several publishers at once, must not block, and is not called for
// what was queued before SubscribeRunInline returned.
type InlineSubscriber interface {
	DirectSubscriber
	SubscribeRunInline(ctx context.Context, runID string, ready func()) *Subscription
}

// CloseRun implements EventBus.
func (b *MemoryBus) CloseRun(runID string) {
	b.mu.Lock()
	r := b.run(runID)
	r.closed = true
	subs := r.subs
	r.subs, r.inline = nil, nil
	b.mu.Unlock()
	for _, f := range subs {
		f.End()
		f.Notify()
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
