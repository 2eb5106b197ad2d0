// Package cluster makes several `agentadaptor serve` replicas one host over
// NATS JetStream (docs/design.md#scale-out): a run executes on the replica
// that received its POST /agui, and every replica can serve its stream
// (a journal of its frames and a mirror built from it), cancel it and
// answer its input requests (request/reply to the owner), read its audit
// records and artifacts (a KV bucket and an object store), continue its
// thread's sticky remote contexts (KV), and end it when its replica dies
// (per-run leases; exactly one survivor claims the run, ends its stream
// with RUN_ERROR host_lost and cancels its remote tasks; it refreshes its
// claim while it works, and if it dies midway another survivor takes the
// claim over and completes what is missing).
//
// Only the host uses it; without a NATS URL the host never touches it.
// Delegation events never leave the owner: the delegator and the mux both
// run where the run runs, so the delegation bus stays in-process.
//
// Goroutines: every goroutine (the publisher, the lease refresher, the
// scanner and its claim refresher, mirror feeders, control handlers, the
// audit writer) is owned by the Cluster and stopped by Close, which waits
// for them.
package cluster
