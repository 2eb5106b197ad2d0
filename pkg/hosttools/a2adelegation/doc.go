// Package a2adelegation is the host-side A2A delegation tool: it lets a
// local agent CLI (Claude Code, Codex, Cursor, the scripted agent) delegate
// a bounded task to a host-curated remote A2A agent through the MCP tool
// delegate_to_agent, while the remote agent's live progress is published
// as subagent.* events on a run-scoped event bus for the UI (SPEC §4–§16).
//
// It owns:
//
//   - the remote agent registry and delegation policy ([Registry],
//     [RemoteAgentSpec], [DelegationPolicy]): host-written specs only, cards
//     fetched and fingerprinted through pkg/clients/a2a, model constraints
//     clamped to host maxima;
//   - the delegator ([Service.Delegate]): streaming and polling execution,
//     recovery of cut streams, host timeouts, cancellation cascade with a
//     cleanup watcher, input-required handling, context policies, artifact
//     storage, and the mapping of A2A events to [DelegationEvent] with
//     exactly one terminal event per delegation;
//   - the event bus ([EventBus], [MemoryBus]) with per-subscriber QoS lanes;
//   - correlation of delegations with runs (per-run bearer token) and parent
//     tool calls (_meta, or call order through [Correlator]);
//   - the audit log ([AuditStore]) and artifact store ([ArtifactStore]) with
//     their HTTP handlers, and the input-answer handler;
//   - the MCP server (official MCP Go SDK, streamable HTTP on loopback only,
//     bearer auth accepting only live per-run tokens) and the
//     [agentadaptor.RuntimeServiceManager] that injects it into runs (SPEC §7
//     Option A).
//
// It must not:
//
//   - import concrete adapters (pkg/adapters/*) or bridges (pkg/bridges/*):
//     the two bridge artifact names are mirrored as constants;
//   - accept URLs, tokens or run identities from the model: the model names
//     a registry key, the run comes from the token;
//   - put remote text into the parent's model context other than through
//     the final structured tool result, or remote wire data into RunResult;
//   - show secrets (auth-ref credentials, run tokens) in events, tool
//     results, audit records or logs;
//   - copy Agent Card text into tool descriptions or prompts (only
//     host-written DisplayName/Description are used);
//   - render AG-UI or SSE (pkg/bridges/subagentstream does).
//
// Remote AG-UI agents (Protocol "agui") are accepted by the registry but not
// delegated to yet: calls fail with capability_unsupported.
package a2adelegation
