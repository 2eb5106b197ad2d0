// Package delegation is the vocabulary every part of a delegation shares:
// the [DelegationEvent] a remote agent's progress becomes, its ten kinds and
// their QoS lanes, the structured [DelegationError] with its [FailureCode]s,
// the [Result] the parent model receives, and the run-scoped [EventBus] that
// carries events from the delegator to the UI side ([MemoryBus] is the
// in-process implementation; another package's bus makes its subscriptions
// with [NewSubscription], and package pkg/delegation/bustest checks any
// implementation against the bus's guarantees).
//
// It is the leaf of the delegation packages: the subagent stream mux
// (pkg/bridges/subagentstream) reads events through it without depending on
// any remote protocol, MCP or the delegator. It must not import a protocol
// SDK (A2A, AG-UI, MCP) or any other package of this module; it holds data
// and the bus, no policy.
//
// A delegator publishes; a UI stream subscribes per run:
//
//	bus := delegation.NewMemoryBus()
//	sub := bus.SubscribeRun(ctx, runID)
//	defer sub.Close()
//	bus.Publish(delegation.DelegationEvent{RunID: runID, DelegationID: "del-1",
//		AgentKey: "research", Protocol: delegation.ProtocolA2A, Kind: delegation.DelegationStarted})
//	for ev := range sub.C {
//		fmt.Println(ev.Seq, ev.Kind) // 1 subagent.started ...
//		if ev.Kind.Terminal() {
//			break
//		}
//	}
//
// The event model, the mapping from A2A and AG-UI and the QoS lanes are
// described in docs/design.md#delegation-events and
// docs/design.md#backpressure.
package delegation
