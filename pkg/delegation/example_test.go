package delegation_test

import (
	"context"
	"fmt"

	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// A run's subscriber receives the events of every delegation of the run,
// each with the run's next Seq, until the run is closed.
func ExampleMemoryBus() {
	bus := delegation.NewMemoryBus()
	sub := bus.SubscribeRun(context.Background(), "run-1")
	for _, k := range []delegation.DelegationEventKind{delegation.DelegationStarted, delegation.DelegationTextDelta, delegation.DelegationFinished} {
		bus.Publish(delegation.DelegationEvent{RunID: "run-1", DelegationID: "del-1", AgentKey: "research",
			Protocol: delegation.ProtocolA2A, Kind: k, Delta: "hi", RemoteMessageID: "m1"})
	}
	bus.CloseRun("run-1") // subscribers get what is queued, then C closes
	for ev := range sub.C {
		fmt.Println(ev.Seq, ev.Kind, ev.Kind.Critical())
	}
	// Output:
	// 1 subagent.started true
	// 2 subagent.text.delta false
	// 3 subagent.finished true
}
