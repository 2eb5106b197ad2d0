// Package agentadaptor is the core SDK of Agent Adaptor: it starts a local agent
// CLI (Claude Code, Codex, Cursor, or the scripted agent) as a supervised child
// process, streams what it does as [StreamPayload] values, and reports a
// [RunResult] when it ends.
//
// # Execution
//
// An [SDK] holds registered [Adapter] implementations and defaults. [SDK.Start]
// and [SDK.Run] are the only two execution entrypoints: Start returns a
// [RunHandle] whose [RunHandle.StreamEvents] channel carries the run's payloads
// and whose [RunHandle.Wait] returns the [RunResult]; Run is Start followed by
// Wait.
//
// Each run follows one fixed order:
//
//  1. a RunID and a per-run bearer token are allocated;
//  2. every [RuntimeServiceManager] of the run is asked to Ensure its service;
//  3. the effective MCP server set is computed: SDK defaults, then per-call
//     servers, then servers injected by runtime services (Option A, see
//     [MetaMCPEnabled]), with ${VAR} placeholders expanded (Option B, see
//     [ExpandMCPServer]);
//  4. the adapter materializes its per-run profile in a private temp dir;
//  5. the child process starts in its own process group.
//
// Whatever the outcome (success, failure, cancellation, a start error), every
// runtime service is released, the adapter's cleanup runs and the temp dir is
// removed before Wait returns.
//
// # Secrets
//
// Run tokens and runtime-service secrets reach the child only through its
// environment ([RuntimeServiceRef.SecretEnv], AGENT_ADAPTOR_RUN_TOKEN). MCP
// headers keep ${VAR} references so the per-run files and the argv never hold
// a secret; adapters translate the references into the form their CLI expands
// itself (Claude's ${VAR}, Codex's bearer_token_env_var).
//
// # Streaming and backpressure
//
// The child is never blocked by a slow consumer. Payloads are queued per run;
// when the queue is full, droppable payloads (text, reasoning and tool-argument
// deltas) are dropped and a [KindStreamDropped] marker with the count is
// delivered in their place. Lifecycle, tool-call and terminal payloads are never
// dropped while the consumer reads at all; a consumer that stops reading
// entirely is bounded by a hard cap after which only the terminal payload is
// kept. After the run ends, undelivered payloads are kept for the run's stream
// linger period and the channel is then closed.
//
// # What this package does not own
//
// It imports no protocol SDK (A2A, AG-UI, MCP) and no pkg/ package: bridges,
// clients and host tools build on it, never the reverse. It has no HTTP server.
package agentadaptor
