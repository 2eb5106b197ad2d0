package bustest_test

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// CountingBus is a bus of its own: it counts the events it is given to
// publish and leaves the rest to the bus it wraps. Its subscriptions are
// the wrapped bus's. (It does not forward SubscribeRunDirect, so a mux
// reads it through each subscription's channel.) TestCountingBusConforms
// runs bustest.Run on it:
//
//	bustest.Run(t, func() delegation.EventBus {
//		return &CountingBus{EventBus: delegation.NewMemoryBus()}
//	})
type CountingBus struct {
	delegation.EventBus
	published atomic.Int64
}

// Publish counts ev and publishes it on the wrapped bus.
func (b *CountingBus) Publish(ev delegation.DelegationEvent) {
	b.published.Add(1)
	b.EventBus.Publish(ev)
}

// Published returns how many events were published.
func (b *CountingBus) Published() int64 { return b.published.Load() }

func Example() {
	bus := &CountingBus{EventBus: delegation.NewMemoryBus()}
	sub := bus.SubscribeRun(context.Background(), "run-1")
	for _, k := range []delegation.DelegationEventKind{delegation.DelegationStarted, delegation.DelegationFinished} {
		bus.Publish(delegation.DelegationEvent{RunID: "run-1", DelegationID: "del-1", AgentKey: "research", Protocol: delegation.ProtocolA2A, Kind: k})
	}
	bus.CloseRun("run-1")
	for ev := range sub.C {
		fmt.Println(ev.Seq, ev.Kind)
	}
	fmt.Println("published:", bus.Published())
	// Output:
	// 1 subagent.started
	// 2 subagent.finished
	// published: 2
}
