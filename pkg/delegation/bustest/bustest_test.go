package bustest_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/bustest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A wrapper bus (the package example) conforms: its subscriptions are the
// wrapped bus's.
func TestCountingBusConforms(t *testing.T) {
	bustest.Run(t, func() delegation.EventBus { return &CountingBus{EventBus: delegation.NewMemoryBus()} })
}

// A bus written outside package delegation on NewSubscription and its Feed
// alone (as a cluster's bus receiving events from elsewhere would be)
// conforms, direct and inline subscriptions included: the exported
// constructor and Feed are enough to implement EventBus, DirectSubscriber
// and InlineSubscriber.
func TestBusOnNewSubscriptionConforms(t *testing.T) {
	bustest.Run(t, func() delegation.EventBus { return &ownBus{runs: map[string]*ownRun{}} })
}

// ownBus is an EventBus of its own, built on delegation.NewSubscription.
type ownBus struct {
	mu   sync.Mutex
	runs map[string]*ownRun
}

type ownRun struct {
	seq        uint64
	feeds      []*delegation.Feed
	subscribed bool
	closed     bool
	last       map[string]string // delegation -> last status
	backlog    []delegation.DelegationEvent
	lost       map[string]delegation.DelegationEvent // delegation -> marker of what the backlog dropped
}

const ownBacklog = 100

func (b *ownBus) run(id string) *ownRun {
	r := b.runs[id]
	if r == nil {
		r = &ownRun{last: map[string]string{}, lost: map[string]delegation.DelegationEvent{}}
		b.runs[id] = r
	}
	return r
}

func (b *ownBus) Publish(ev delegation.DelegationEvent) {
	// An inline reader is called outside the bus's lock, on this
	// goroutine, once the event is queued.
	for _, f := range b.publish(ev) {
		f.Notify()
	}
}

func (b *ownBus) publish(ev delegation.DelegationEvent) []*delegation.Feed {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	b.mu.Lock()
	r := b.run(ev.RunID)
	for !r.closed && !ev.Kind.Volatile() {
		full := slices.IndexFunc(r.feeds, func(f *delegation.Feed) bool { return f.Full() != nil })
		if full < 0 {
			break
		}
		wait := r.feeds[full].Full()
		b.mu.Unlock()
		if wait != nil {
			<-wait // the run's merge is full: wait for its reader
		}
		b.mu.Lock()
	}
	defer b.mu.Unlock()
	if r.closed || ev.Kind == delegation.DelegationStatus && ev.Text == "" && r.last[ev.DelegationID] == ev.Status {
		return nil
	}
	if ev.Kind == delegation.DelegationStatus {
		r.last[ev.DelegationID] = ev.Status
	}
	r.seq++
	ev.Seq = r.seq
	if !r.subscribed {
		if len(r.backlog) >= ownBacklog && !ev.Kind.Critical() {
			m, ok := r.lost[ev.DelegationID]
			if !ok {
				m = ev
				m.Kind, m.Status, m.Text, m.Delta, m.Raw = delegation.DelegationStatus, delegation.StatusStreamDropped, "", "", map[string]any{"dropped": 0}
			}
			m.Raw["dropped"] = m.Raw["dropped"].(int) + 1
			r.lost[ev.DelegationID] = m
			return nil
		}
		if m, ok := r.lost[ev.DelegationID]; ok {
			m.Seq = ev.Seq
			r.backlog = append(r.backlog, m)
			delete(r.lost, ev.DelegationID)
		}
		r.backlog = append(r.backlog, ev)
		return nil
	}
	r.feeds = slices.DeleteFunc(r.feeds, func(f *delegation.Feed) bool { return !f.Push(ev) })
	return slices.Clone(r.feeds)
}

func (b *ownBus) SubscribeRun(ctx context.Context, runID string) *delegation.Subscription {
	return b.subscribe(ctx, runID, delegation.SubscriptionOptions{})
}

func (b *ownBus) SubscribeRunDirect(ctx context.Context, runID string) *delegation.Subscription {
	return b.subscribe(ctx, runID, delegation.SubscriptionOptions{Direct: true})
}

func (b *ownBus) SubscribeRunInline(ctx context.Context, runID string, ready func()) *delegation.Subscription {
	return b.subscribe(ctx, runID, delegation.SubscriptionOptions{Direct: true, Inline: ready})
}

func (b *ownBus) subscribe(ctx context.Context, runID string, opts delegation.SubscriptionOptions) *delegation.Subscription {
	sub, feed := delegation.NewSubscription(ctx, opts)
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.run(runID)
	if !r.subscribed {
		r.subscribed = true
		for _, m := range r.lost {
			m.Seq = r.seq
			r.backlog = append(r.backlog, m)
		}
		for _, ev := range r.backlog {
			feed.Push(ev)
		}
		r.backlog, r.lost = nil, nil
	}
	if r.closed {
		feed.End()
	} else {
		r.feeds = append(r.feeds, feed)
	}
	return sub
}

func (b *ownBus) CloseRun(runID string) {
	b.mu.Lock()
	r := b.run(runID)
	r.closed = true
	feeds := r.feeds
	for _, f := range feeds {
		f.End()
	}
	r.feeds = nil
	b.mu.Unlock()
	for _, f := range feeds {
		f.Notify()
	}
}
