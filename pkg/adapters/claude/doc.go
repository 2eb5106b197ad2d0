// Package claude is the adapter for Claude Code (`claude`, npm
// @anthropic-ai/claude-code, checked against 2.1.197). It owns the command
// line, the per-run MCP configuration file and the stream-json parser.
//
//	a, err := claude.New(claude.Config{Model: "sonnet", PermissionMode: "acceptEdits"})
//	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(a))
//	res, err := sdk.Run(ctx, "Summarize README.md.",
//		agentadaptor.WithAdapterOption(claude.OptionMaxTurns, "5"))
//
// It must not import anything but the core SDK, the adapters' internal
// helpers and the standard library (no A2A, AG-UI, bridge or delegation
// package), and it never puts a secret on the command line or into a file.
//
// # Command line
//
//	claude -p --output-format stream-json --verbose
//	       [--include-partial-messages]              (WithStreaming)
//	       --mcp-config=<TempDir>/claude-mcp.json [--strict-mcp-config]
//	       [--allowedTools=mcp__<key>,...,<Config.AllowedTools>,<option allowed_tools>]
//	       [--model=M] [--append-system-prompt=S] [--max-turns=N] [--permission-mode=P]
//	       [--resume=<ResumeSessionID> | --session-id=<new UUID when SessionKey is set>]
//	       [Config.ExtraArgs...] -- PROMPT
//
// --allowedTools and --mcp-config take several values, so they are given in
// the --flag=value form, and "--" ends the options so that a prompt starting
// with '-' stays the prompt. --strict-mcp-config (unless
// Config.InheritUserMCP) makes the run see exactly its own MCP set; every
// server of the run is granted with mcp__<key> (Claude denies ungranted MCP
// tools in -p mode, it never hangs).
//
// # Files and environment
//
// The only file written is <TempDir>/claude-mcp.json (mode 0600):
//
//	{"mcpServers":{"<key>":{"type":"http","url":"...","headers":{"Authorization":"Bearer ${VAR}"}},
//	               "<key>":{"type":"stdio","command":"...","args":[...],"env":{"K":"${VAR}"}}}}
//
// Header and env values keep ${VAR} references, which Claude Code expands from
// its environment, so no secret is ever in a file or on the command line. The
// child inherits the host environment (the user's HOME, CLAUDE_CONFIG_DIR,
// ANTHROPIC_* settings and credentials); the adapter adds MCP_TOOL_TIMEOUT
// (milliseconds) above the longest MCPServerSpec.ToolTimeout of the run (+10%
// +5s), at least Config.DefaultToolTimeout (10m) when some server has none, and
// never below a larger value the user set. With Config.Isolate, HOME and
// CLAUDE_CONFIG_DIR point to a throwaway profile in TempDir (or
// Config.IsolateDir, which keeps sessions resumable across runs).
//
// # Options
//
// Config fields: Binary (default "claude" on PATH), Model, AppendSystemPrompt,
// MaxTurns, PermissionMode, AllowedTools, InheritUserMCP, Isolate, IsolateDir,
// DefaultToolTimeout, ExtraArgs. Per-run overrides (WithAdapterOption):
// "append_system_prompt", "max_turns", "permission_mode", "allowed_tools"
// (comma-separated, added to the grants). WithModel overrides Config.Model.
//
// # Parser mapping
//
//	system/init             custom "claude.init" (session_id, model, cwd, tools, mcp_servers);
//	                        a "failed" server whose spec is Required -> FailureMCPServer
//	system/<other>          custom "claude.system.<subtype>" (status, thinking_tokens, ...)
//	stream_event            content_block_start text|thinking|tool_use -> text.start |
//	                        reasoning.start | tool_call.start; text_delta -> text.delta,
//	                        thinking_delta -> reasoning.delta, input_json_delta ->
//	                        tool_call.args; content_block_stop -> text.end (Text whole) |
//	                        reasoning.end | tool_call.end (ToolArgs whole)
//	assistant               text -> text.start/delta/end, thinking -> reasoning.*,
//	                        tool_use (id, name, input) -> tool_call.start/args/end; blocks
//	                        already streamed through stream_event are not repeated
//	user                    tool_result blocks -> tool_call.result (content flattened to
//	                        a string, is_error -> ToolError)
//	result                  usage payload (input, output, cache read/write tokens,
//	                        total_cost_usd) and custom "claude.result"; result -> Output;
//	                        is_error -> FailureModel when api_error_status is set
//	                        (Detail.status, Retryable for 429/5xx), else FailureAgent;
//	                        non-empty permission_denials -> FailurePermissionDenied
//	<unknown type>          custom "claude.<type>" (never an error)
//	not JSON / no type      ParseLine error (the SDK emits a malformed_line diagnostic)
//
// Text message ids are the Anthropic message id (msg_...), suffixed "#n" for
// the n-th text block of a message after the first; reasoning blocks use
// "<msg id>#thinking<n>"; tool call ids are the tool_use ids, which Claude
// also sends to the MCP server as _meta["claudecode/toolUseId"]. Blocks still
// open when the process ends are closed in Finish. A clean exit without a
// result line is FailureProtocol; a non-zero exit without one is left to the
// SDK (FailureExit with the stderr tail).
//
// The prompt travels on the command line (Linux caps one argument at 128 KiB).
package claude
