package delegation

import (
	"context"
	"testing"

	"go.uber.org/goleak"
)

// CloseRun ends a run's stream for good: whatever is published to the run
// afterwards (a late status, even a critical event) is discarded, never
// kept for a subscriber. A run that ended before anyone subscribed (a fast
// run the UI attaches to late) still gives its first subscriber the backlog
// published before CloseRun, and nothing published after it; the
// subscription then ends (docs/design.md#the-bus).
func TestBusDiscardsPublishesAfterCloseRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	late := []DelegationEvent{
		{RunID: "run", DelegationID: "d1", Kind: DelegationStatus, Status: "working", Text: "late"},
		delta("d1", "m1", "late text"),
		ev("d2", DelegationStarted),
		ev("d1", DelegationFailed),
	}
	for _, tc := range []struct {
		name      string
		subscribe func(b *MemoryBus) *Subscription
	}{
		{"SubscribeRun", func(b *MemoryBus) *Subscription { return b.SubscribeRun(context.Background(), "run") }},
		{"SubscribeRunDirect", func(b *MemoryBus) *Subscription { return b.SubscribeRunDirect(context.Background(), "run") }},
	} {
		t.Run(tc.name+", first subscriber after CloseRun", func(t *testing.T) {
			b := NewMemoryBus()
			b.Publish(ev("d1", DelegationStarted))
			b.Publish(ev("d1", DelegationFinished))
			b.CloseRun("run")
			for _, e := range late {
				b.Publish(e)
			}
			got := drain(t, tc.subscribe(b))
			if len(got) != 2 || got[0].Kind != DelegationStarted || got[1].Kind != DelegationFinished || got[1].Seq != 2 {
				t.Fatalf("first subscriber of a closed run got %+v, want only the started and finished published before CloseRun", got)
			}
			if again := drain(t, tc.subscribe(b)); len(again) != 0 {
				t.Fatalf("a second subscriber of a closed run got %+v, want nothing", again)
			}
		})
		t.Run(tc.name+", subscribed before CloseRun", func(t *testing.T) {
			b := NewMemoryBus()
			s := tc.subscribe(b)
			b.Publish(ev("d1", DelegationStarted))
			b.CloseRun("run")
			for _, e := range late {
				b.Publish(e)
			}
			if got := drain(t, s); len(got) != 1 || got[0].Kind != DelegationStarted {
				t.Fatalf("subscriber got %+v, want only the started published before CloseRun", got)
			}
			if again := drain(t, tc.subscribe(b)); len(again) != 0 {
				t.Fatalf("a subscriber of a closed run got %+v, want nothing", again)
			}
		})
	}
}
