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
//	a, err := claude.New(claude.Config{}) // or codex, cursor, scripted (pkg/adapters/...)
//	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(a))
//	h, err := sdk.Start(ctx, "Review the change in this directory.", agentadaptor.WithStreaming())
//	for p := range h.StreamEvents() {
//		// p.Kind: run.started, text.delta, tool_call.start, ..., one terminal payload last
//	}
//	res, err := h.Wait(ctx) // res.Status, res.Output, res.Failure, res.Usage
//
// An [Adapter] is the SPI a CLI plugs in with: Prepare returns the child's
// command line and a [Parser] of its stdout (see the package examples).
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
// # What this package owns and must not do
//
// It owns the run: the Adapter SPI, the child process and its process group,
// the payload stream and its backpressure, the run's MCP set and secrets,
// runtime services, sessions and the result. It must not import a protocol
// SDK (A2A, AG-UI, MCP) or any pkg/ package: bridges, clients and host tools
// build on it, never the reverse. It knows no concrete CLI and has no HTTP
// server.
package agentadaptor
