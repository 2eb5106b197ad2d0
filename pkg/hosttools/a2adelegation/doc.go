// Package a2adelegation is the host-side A2A delegation tool: it lets a
// local agent CLI (Claude Code, Codex, Cursor, the scripted agent) delegate
// a bounded task to a host-curated remote A2A or AG-UI agent through the MCP tool
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
//     storage, and the mapping of A2A and AG-UI events to [DelegationEvent] with
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
// # Remote AG-UI agents
//
// An agent with Protocol "agui" (EndpointURL required, AuthRef sent as a
// bearer token to the endpoint's origin only) is run through
// pkg/clients/agui with the same machinery as an A2A agent: registry and
// policy (timeout clamp, concurrency limits, artifact limits and storage,
// audit level, input-required policy), host timeout, cancellation causes,
// audit record, redaction and the SPEC §11 tool result (remote_protocol
// "agui", raw_task {provider: "agui", task_id: remote run id}). One
// delegation is one RunAgentInput POST: the user message is the objective,
// input.prompt and input.context (as for A2A); input artifacts travel as
// AG-UI context entries (content of this run's text host artifacts within
// the size policy, otherwise the reference); tools is []; runId is new for
// every run; threadId is the remote context: new per delegation for
// ContextEphemeral, remembered per (parent SessionKey, agent) or per (run,
// agent) for the sticky policies, and reported as remote_context_id.
// Requests that model constraints.stream=false still stream: AG-UI has
// nothing to poll, and its text deltas are real.
//
// Mapping (SPEC §9, "Remote AG-UI to DelegationEvent"):
//
//	RUN_STARTED                  subagent.started (RemoteTaskID = runId, RemoteContextID = threadId,
//	                             Raw remote_run_started=true). Anything else first: started is
//	                             synthesized (remote_run_started=false), then the event is mapped.
//	                             A later RUN_STARTED (follow-up run) is subagent.status "working".
//	TEXT_MESSAGE_START/CONTENT/END  subagent.text.start/delta/end, message ids preserved (ids of
//	                             follow-up runs get a ":<n>" suffix: remotes number them per run).
//	TEXT_MESSAGE_CHUNK           the same; a chunk message ends at the next non-chunk event or id.
//	TOOL_CALL_START/END/CHUNK    subagent.status "tool_call" ("Calling tool X"), RESULT: "tool_result";
//	                             Raw nested_tool_call {phase, toolCallId, name, args|content}
//	                             (bounded). Never a tool call of the parent; ARGS only accumulate.
//	STEP_STARTED/FINISHED        subagent.status "step".
//	CUSTOM agent.artifact|artifact  subagent.artifact when the value carries {name, text|content|
//	                             uri|url, mime_type|mimeType|mediaType, id?}: stored by reference
//	                             under the artifact policy (what the scripted agent and any runner
//	                             behind pkg/bridges/sse emit); without content it is a plain custom.
//	CUSTOM agent.input_required  remembered as the question of the run's RUN_FINISHED (below).
//	CUSTOM agentadaptor.usage|usage  kept as Raw "usage" of the terminal event.
//	CUSTOM subagent.*            the remote's own subagents (a delegating remote host): subagent.status
//	                             "nested_subagent", Raw nested_subagent {event, type, subagentRunId,
//	                             name, ...}; their text.start/delta are dropped (text.end carries the
//	                             message). Never merged into this subagent's text.
//	other CUSTOM                 subagent.status "custom", Raw custom {name, value} (bounded).
//	SUBAGENT_* (UnknownEvent)    subagent.status "nested_subagent", Raw nested_subagent {event, type,
//	                             subagentRunId, name, message, code, result, outcome}.
//	RAW                          subagent.status "raw", Raw remote_event {event, source}.
//	other events                 not shown: state/messages snapshots, activity, reasoning, THINKING_*.
//	RUN_FINISHED                 subagent.finished; summary = RUN_FINISHED.result (a string, or an
//	                             object's "summary", or its JSON) if present, else the accumulated
//	                             assistant text of the delegation.
//	RUN_FINISHED + interrupt     (outcome.type "interrupt", or an agent.input_required in the run)
//	                             the remote paused for input: subagent.input_required when
//	                             AllowInputRequired (the answer from AnswerInput is sent as a new run
//	                             on the same thread, carrying the conversation), otherwise
//	                             input_required_unsupported; no answer before the timeout is
//	                             input_required, as for A2A.
//	RUN_ERROR                    subagent.failed remote_failed (message and code; Raw remote_code).
//	stream ends before terminal  subagent.failed stream_interrupted (AG-UI cannot resume a run).
//	malformed/oversized frame    subagent.failed remote_failed.
//	HTTP refusal                 agent_unavailable (unreachable, 401/403, 404) or remote_rejected.
//	remote silent > IdleTimeout  subagent.failed remote_timeout.
//
// AG-UI has no cancel call: cancellation (parent, run end, service close)
// and the host timeout abort the HTTP request, which the remote sees as a
// disconnect, and end in subagent.cancelled (cancelled, confirmed) or
// subagent.failed remote_timeout. Remote ids and payloads kept in Raw are
// redacted like every other field.
package a2adelegation
