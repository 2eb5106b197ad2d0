// Package cursor is the adapter for the Cursor CLI (`cursor-agent`, also
// installed as `agent`). The CLI is not installable on this project's CI, so
// its stream-json format is pinned in testdata fixtures built from Cursor's
// public documentation (cursor.com/docs/cli/reference/output-format);
// thinking events and the mcpToolCall shape follow community-observed output
// and are handled defensively. It owns the command line, the run's entries
// in the workspace's .cursor/mcp.json (and restoring the user's file) and the
// stream-json parser.
//
//	a, err := cursor.New(cursor.Config{})
//	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(a))
//	res, err := sdk.Run(ctx, "Fix the failing test.", agentadaptor.WithWorkDir(workspace))
//
// It must not import anything but the core SDK, the adapters' internal
// helpers and the standard library (no A2A, AG-UI, bridge or delegation
// package), must not leave the user's mcp.json changed after a run, and never
// writes a secret into it.
//
// # Command line
//
//	cursor-agent -p --output-format stream-json [--stream-partial-output]
//	             [--model M] [--resume SESSION] [--force] [--approve-mcps]
//	             [Config.ExtraArgs...] [--] PROMPT
//
// --force is the default (Config.NoForce or option force=false drop it);
// --approve-mcps is passed when the run has MCP servers (Config.NoApproveMCPs
// drops it); "--" precedes a prompt that starts with '-'.
//
// # MCP servers: <WorkDir>/.cursor/mcp.json
//
// Cursor reads MCP servers from the workspace. Prepare merges the run's
// servers into the user's file (a run server replaces a same-named user
// entry for the run; every other key is kept) and records what it did:
//
//	.cursor/mcp.json.agentadaptor-run     marker {run_id, pid, existed, created_dir}, written first
//	.cursor/mcp.json.agentadaptor-backup  byte-exact copy of the user's file (mode kept)
//
// The Invocation's Cleanup restores the user's file byte for byte (or removes
// the file and a .cursor dir the run created). If a run died without cleanup,
// the next Prepare in that workspace finds the marker of a process that is
// gone and restores the backup first ([Recover] does the same on demand).
// One workspace serves one run at a time; a second concurrent run there gets a
// *agentadaptor.ConfigError. Values keep secrets out of the file: ${VAR}
// becomes Cursor's ${env:VAR} interpolation, bearer tokens become
// "Authorization": "Bearer ${env:VAR}".
//
// # Parser mapping
//
//	system/init             custom "cursor.init" (session_id, model, cwd, api_key_source)
//	user                    ignored (the prompt echoed)
//	assistant               without partial output: one whole message -> text.start/delta/end;
//	                        with --stream-partial-output: each line (timestamp_ms) is a
//	                        delta of the open message, closed by the next tool call,
//	                        thinking, result, or a final line repeating the whole text
//	thinking delta|completed reasoning.start/delta/end
//	tool_call started       tool_call.start/args/end; ToolCallID = call_id; ToolName from the
//	                        tool_call key ("readToolCall" -> "read"), mcpToolCall args.toolName,
//	                        or function.name
//	tool_call completed     tool_call.result: result.success flattened to text (content, or
//	                        text parts); result.error|failure|rejected -> ToolError
//	result                  Output = result, session id; is_error -> FailureAgent; usage
//	                        payload when present
//	<unknown type>          custom "cursor.<type>"
//	not JSON / no type      ParseLine error (malformed_line diagnostic)
//
// Text message ids are synthesized ("cursor-msg-<n>"). On failure Cursor exits
// non-zero with the message on stderr and possibly no result line: that is the
// SDK's FailureExit (with the stderr tail); a clean exit without a result line
// is FailureProtocol.
package cursor
