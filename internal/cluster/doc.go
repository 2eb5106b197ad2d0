// Package cluster makes several `agentadaptor serve` replicas one host over
// NATS JetStream (docs/design.md#scale-out): a run executes on the replica
// that received its POST /agui, after its runId was reserved cluster-wide
// (Reserve: one admission per runId); every replica can serve its stream (a
// journal of its frames, each append conditional on the run's last
// sequence so that the journal is one history, and mirrors built from it —
// the run's own replica serves its clients the committed frames too), cancel
// it and answer its input requests (request/reply to the owner), read its
// audit records and artifacts (a KV bucket and an object store), continue
// its thread's sticky remote contexts (KV), and end it when its replica
// dies or stalls (per-run leases renewed on a connection of their own;
// exactly one survivor claims the run, ends its stream with RUN_ERROR
// host_lost; the stalled replica, fenced, stops the run and serves the
// journal's end; each remote task is cancelled by one replica only).
//
// Only the host uses it; without a NATS URL the host never touches it.
// Delegation events never leave the owner: the delegator and the mux both
// run where the run runs, so the delegation bus stays in-process. Its
// health reaches the metrics through Observer (no metrics library here).
//
// Goroutines: every goroutine (each run's publisher while it has work, the
// lease refresher, the claims watcher, the scanner and its claim
// refresher, mirror feeders, control handlers, the audit writer) is owned
// by the Cluster and stopped by Close, which waits for them.
package cluster
