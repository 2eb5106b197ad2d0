// Package codex is the adapter for the OpenAI Codex CLI (`codex`, npm
// @openai/codex, checked against 0.171.0). It owns the command line (MCP
// servers and provider settings as -c overrides) and the parser of
// `codex exec --json` events.
//
//	a, err := codex.New(codex.Config{Sandbox: "read-only"})
//	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(a))
//	h, err := sdk.Start(ctx, "Review the diff in this directory.",
//		agentadaptor.WithWorkDir(repo), agentadaptor.WithSessionKey("review-42"))
//
// It must not import anything but the core SDK, the adapters' internal
// helpers and the standard library (no A2A, AG-UI, bridge or delegation
// package), and it never puts a secret on the command line (argv is
// world-readable).
//
// # Command line
//
//	codex exec [--profile P] --json --skip-git-repo-check [--ephemeral]
//	      [--model M] [--sandbox S] [-c model_provider="X"] [-c <Config.ExtraConfig>...]
//	      [-c mcp_servers.<key>={...}...] [Config.ExtraArgs...] -- PROMPT
//	codex exec [--profile P] resume --json --skip-git-repo-check [...same...] THREAD_ID -- PROMPT
//
// (resume takes no --sandbox: the thread keeps its own.) Codex has no MCP
// config file flag, so each server is a TOML inline table; keys are limited to
// letters, digits, '-' and '_', which TOML accepts bare, so
// mcp_servers.a2a-delegation needs no quoting:
//
//	http:  {url="...", bearer_token_env_var="VAR", http_headers={"X-Literal"="v"},
//	        env_http_headers={"X-Key"="VAR"}, default_tools_approval_mode="approve",
//	        tool_timeout_sec=N, required=true}
//	stdio: {command="...", args=[...], env={"LITERAL"="v"}, env_vars=["VAR"], ...same tail}
//
// A header that is exactly ${VAR} becomes env_http_headers; "Authorization:
// Bearer ${VAR}" and MCPServerSpec.BearerTokenEnvVar become
// bearer_token_env_var; literal headers go to http_headers; any other template
// is a *agentadaptor.ConfigError (codex cannot template header values). Stdio
// env values that are exactly ${SAME_NAME} are forwarded by name (env_vars);
// renamed or templated values (K="x-${SECRET}") run the server through a
// /bin/sh wrapper that assigns them from forwarded variables, so argv only
// ever holds variable names. tool_timeout_sec is above the spec's ToolTimeout
// (+10% +5s), or Config.DefaultToolTimeout (10m) when it has none; Required
// servers get required=true (codex then refuses to start and the parser
// reports FailureMCPServer from its stderr). Codex does not report per-server
// status in exec --json output.
//
// Argv is world-readable: never put a secret in Config.ExtraConfig; name
// environment variables instead (env_key for providers, bearer_token_env_var).
//
// # Environment and options
//
// The child inherits the host environment, so the user's CODEX_HOME and its
// config.toml, credentials and API keys apply. Config.Isolate points HOME and
// CODEX_HOME at a throwaway profile in TempDir (or Config.IsolateDir, which
// keeps threads resumable). Config fields: Binary (default "codex" on PATH),
// Model, Profile, Provider, Sandbox, ExtraConfig (self-hosted endpoints:
// model_providers.<id>={base_url=..., wire_api="responses", env_key=...}),
// Ephemeral, Isolate, IsolateDir, DefaultToolTimeout, ExtraArgs. Per-run
// options: "profile", "sandbox", "provider".
//
// # Parser mapping
//
//	thread.started          session id = thread_id; custom "codex.thread"
//	turn.started            custom "codex.turn.started"
//	turn.completed          usage payload (input_tokens, cached_input_tokens -> cache read,
//	                        cache_write_input_tokens, output_tokens, reasoning_output_tokens)
//	turn.failed             typed failure: HTTP statuses, overload ("high demand", which is
//	                        how codex reports a 5xx), disconnects, rate/usage limits ->
//	                        FailureModel (Detail.status when the message names one);
//	                        otherwise FailureAgent
//	error                   custom "codex.error" (message); remembered for turn.failed
//	item agent_message      text.start/delta/end, MessageID = item id (exec mode sends only
//	                        item.completed, so one delta; started/updated grow deltas)
//	item reasoning          reasoning.start/delta/end
//	item mcp_tool_call      custom "codex.mcp_tool_call" (item_id, server, tool, status) and
//	                        tool_call.start/args/end (ToolName = the tool, ToolCallID = item
//	                        id) on the first event; tool_call.result on item.completed
//	                        (text content joined; error -> ToolError)
//	item error              custom "codex.error"
//	item command_execution, file_change, web_search, todo_list, <new types>
//	                        custom "codex.<item type>" with the item and its "phase"
//	<unknown type>          custom "codex.<type>"
//	not JSON / no type      ParseLine error (malformed_line diagnostic)
//
// Output is the last completed agent_message. Codex sends the model's call
// id to the MCP server as _meta.callId (and the thread as _meta.threadId). A
// clean exit without turn.completed is FailureProtocol.
package codex
