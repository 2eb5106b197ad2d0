// Package bustest is the conformance test of [delegation.EventBus]: [Run]
// checks, on any implementation, the guarantees docs/design.md#the-bus
// documents — order and strictly increasing Seq per run, the backlog kept
// for a run's first subscriber with its stream.dropped markers, CloseRun,
// status de-duplication, text deltas coalesced or dropped with a marker
// under a slow subscriber, a publisher never waiting for a subscriber
// (except a full direct one, the run's merge), bounded subscribers that
// are disconnected when they fall behind, and the end of a subscription
// by its context or Close.
//
// A bus of your own (a cluster's bus, a wrapper that counts or logs) runs
// it from a test:
//
//	func TestMyBusConforms(t *testing.T) {
//		bustest.Run(t, func() delegation.EventBus { return mybus.New() })
//	}
//
// It owns the checks only: it imports nothing of the module but
// pkg/delegation, starts no server and keeps nothing between checks. It is
// meant for tests: it imports package testing.
package bustest
