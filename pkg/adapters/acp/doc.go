// Package acp is the adapter for any Agent Client Protocol agent (ACP:
// JSON-RPC 2.0 over the agent's stdio), through the Go ACP SDK
// (github.com/coder/acp-go-sdk). Checked against Gemini CLI 0.61.0
// (`gemini --experimental-acp`), codex-acp 0.16.0 and the ACP conformance
// agent internal/testkit/fakeacp. It owns the command
// line (the binary and Config.Args only), the conversation (initialize,
// session/new or session/load, one session/prompt per run, session/cancel),
// the MCP servers handed over in session/new, the permission policy and
// the mapping of session updates to the SDK's stream.
//
//	a, err := acp.New(acp.Config{Binary: "gemini", Args: []string{"--experimental-acp"},
//		Permissions: acp.Permissions{Allow: []string{"kind:read"}}})
//	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(a))
//	res, err := sdk.Run(ctx, "Summarize README.md.", agentadaptor.WithSessionKey("thread-1"))
//
// It must not import anything but the core SDK, the adapters' internal
// helpers, the ACP SDK and the standard library (no A2A, AG-UI, MCP, bridge
// or delegation package). It returns an [agentadaptor.Conversation], not a
// Parser (docs/design.md#conversations).
//
// # MCP servers and secrets
//
// ACP agents take MCP servers in session/new with literal header and env
// values, so the adapter resolves every ${VAR} reference of the run's MCP
// set (the run's environment, then the host's) and sends the values over
// the child's stdin: never on argv, never in a file. An http server goes as
// http when the agent's mcpCapabilities include it; otherwise through
// Config.StdioBridge (a stdio MCP server that forwards to the http one; its
// bearer token is set in the bridge's environment, its argv holds only the
// URL and the variable's name), and without a bridge the run fails with
// invalid_config. stdio servers go as stdio with their environment.
//
// # Mapping
//
//	agent_message_chunk     text.start/delta/end; a message ends at the next thought or tool call;
//	                        MessageID = the chunk's messageId, else acp-msg-<n>
//	agent_thought_chunk     reasoning.start/delta/end (acp-thought-<n>)
//	tool_call, tool_call_update, session/request_permission
//	                        the first sighting of a tool call id gives tool_call.start/args/end
//	                        (ToolCallID = the ACP toolCallId, args = rawInput or {}); status
//	                        completed|failed gives tool_call.result (text content joined;
//	                        failed -> ToolError)
//	plan                    custom "acp.plan" (the entries)
//	usage_update            custom "acp.usage_update" (context window, cost)
//	current_mode_update, config_option_update, session_info_update
//	                        custom "acp.mode", "acp.config_options", "acp.session_info"
//	non-text message content custom "acp.content"
//	user_message_chunk, available_commands_update   not shown
//	(setup)                 custom "acp.session" {session_id, resumed, agent, note}
//	(prompt answer)         custom "acp.stop" {stop_reason}; a usage payload from the answer's
//	                        usage (unstable field) or _meta.quota.token_count (Gemini CLI)
//
// Tool names: ACP carries a title for people, not a tool name. An MCP tool
// is named mcp__<server>__<tool>, read from _meta.claudeCode.toolName,
// codex-acp's rawInput {server, tool, arguments} for a server of the run
// (the call's args are then the arguments), the title "<tool> (<server>
// MCP Server)" (Gemini CLI and its forks), a title holding
// mcp__<server>__<tool>, or "<server>/<tool>" / "<server>.<tool>" (also
// after codex-acp's "Tool: ") for a server of the run; any other call is
// named by its title. This is
// how the delegation stream recognises delegate_to_* calls and pairs each
// with its delegation by call order when the agent's MCP request carries no
// parent tool call id in _meta (docs/design.md#correlation).
//
// Exactly one terminal comes from the prompt's answer: end_turn, max_tokens
// and max_turn_requests complete the run (Output = the last message);
// refusal is agent_error; cancelled without a cancel of ours is a failure
// with code cancelled; a JSON-RPC error whose code is an HTTP status (Gemini
// CLI relays model errors so) is model_error with Detail.status, retryable
// for 429 and 5xx; -32000 (auth_required) is agent_error. A setup that does
// not answer within Config.SetupTimeout fails with start_failed.
//
// # Order and flow control
//
// The ACP SDK maps notifications in order on one goroutine but runs each
// request on its own, and closes the connection when more than 1024
// notifications wait. The adapter's reader counts the session updates it
// hands the SDK: a permission request waits (at most 2 s) until those read
// before it are mapped, and the reader holds further updates back while
// 256 are unmapped (the agent then waits on its stdout).
//
// # Permissions
//
// session/request_permission is answered at once by Config.Permissions:
// tools of the run's own MCP servers (the host's tools) are allowed, then
// Deny, then Allow rules (path.Match on the tool name, or kind:<ACP kind>),
// default deny. The option chosen is allow_once (else allow_always) or
// reject_once (else reject_always; else the request is answered
// cancelled). Each decision is a custom "acp.permission" payload {tool_call_id,
// tool, kind, decision, rule, option_id}.
//
// # Sessions and cancel
//
// With a session key, the session id of the previous run is loaded with
// session/load when the agent advertises loadSession (the history it
// replays is not shown again, and the prompt waits until a replay that goes
// on after the answer, as Gemini CLI 0.61.0's does, is quiet for 250 ms, at
// most 2 s); otherwise, or when loading fails, a new session starts and
// acp.session's note says why. Cancel sends
// session/cancel; an agent that answers the prompt cancelled ends the run
// at once (then its group gets SIGINT), one that does not gets SIGINT after
// the run's cancel grace and SIGKILL a grace later. When a prompt completes,
// the agent's stdin is closed and it has the grace to exit before the same
// signals: nothing of its process group survives the run.
package acp
