// Package audit keeps what the host knows about every delegation: both
// sides' identities (run, parent tool call, delegation, remote task and
// context), the agent card fingerprint, the events, the final result and
// the timings (docs/design.md#guarantees). A [Record] never holds secrets:
// no auth references, credentials or run tokens.
//
// It owns the [Store] interface and two implementations: [Memory]
// (in-process, bounded by count and age) and [File] (the same, plus an
// append-only JSONL log that is read back when the store is opened, so
// records survive a restart), and [Handler], which serves a run's records at
// GET /agui/runs/{runId}/delegations. It must not know remote protocols,
// the delegator or MCP; it stores what it is given.
//
//	store, err := audit.OpenFile("audit.jsonl", audit.Options{})
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//	store.Begin(audit.Record{DelegationID: "del-1", RunID: run, AgentKey: "research", Status: "running", StartedAt: time.Now()})
//	// ... events, then
//	store.End(audit.Record{DelegationID: "del-1", RunID: run, AgentKey: "research", Status: "completed", EndedAt: time.Now()})
//	mux.Handle("GET /agui/runs/{runId}/delegations", audit.Handler(store))
package audit
