// Package scripted is the deterministic scripted agent: an adapter whose child
// process performs a scenario of steps instead of asking a model. It is the
// embedded default of `agentadaptor serve` and the workhorse of the tests.
// It owns the scenario format, the agent (the child's side) and the adapter
// that starts it.
//
//	func main() {
//		scripted.MaybeRunAgent() // first: this binary is also the agent
//		a, err := scripted.New(scripted.Config{ScenarioData: []byte("- say: Hello!\n")})
//		sdk, err := agentadaptor.New(agentadaptor.WithAdapters(a))
//		res, err := sdk.Run(ctx, "hi")
//		...
//	}
//
// The child is a real process (the host binary re-executed with
// AGENTADAPTOR_SCRIPTED_AGENT=1; see [MaybeRunAgent]) that reads its MCP
// configuration from --mcp-config the way Claude Code does (the adapter
// passes the JSON itself, so a run writes no file),
// expands ${VAR} header references from its own environment, connects to every
// MCP server with the official MCP Go SDK client (stdio or streamable HTTP),
// and makes real tools/call requests carrying its tool call id in
// _meta["agentadaptor/toolCallId"] and a progress token.
//
// # Scenario files
//
// YAML or JSON whose top level is the list of steps (or a mapping with a
// `steps:` key holding that list, and optionally `stream_delay: 40ms` and
// `repeat: true`). Each step is a mapping with exactly one key:
//
//	say: TEXT                        assistant text (text deltas when streaming)
//	call: {tool: NAME, args: {...}}  MCP tools/call of NAME on whichever server offers it
//	                                 (bare name or mcp__<server>__<tool>)
//	say_result: TEMPLATE             text from the last tool result: {{.Text}},
//	                                 {{.JSON.field}}, {{.IsError}}, {{.Results}} and {{.Prompt}}
//	sleep: DURATION                  e.g. 500ms
//	parallel: [STEP, ...]            call and sleep steps run at once; the step ends
//	                                 when all of them have
//	artifact: {name, mime_type, text}  publish an artifact (remote side)
//	ask: TEXT                        ask the user and end the turn as input_required;
//	                                 the next turn of the session resumes after it
//	fail: MESSAGE                    end the run as failed
//
// Texts are Go text/template templates ([TemplateData]): say_result always,
// and say, ask, artifact name and text and the string values of call args
// when they contain "{{". {{.Prompt}} is this turn's prompt (the user's
// message, or the answer to an `ask`); {{.Text}}, {{.JSON.field}} and
// {{.IsError}} are the last tool result's.
//
// A parallel step makes its tools/call requests at once, as a model's
// message with several tool uses does: the tool_call lines come first, in
// the listed order, with ids "<the step's call id>.<index in the list>";
// each tool_result line comes when its call ends. After it, the last
// result is all the calls' results in the listed order, whatever order
// they ended in: {{.Text}} their texts joined by newlines, {{.JSON}} the
// list of their JSON values, {{.IsError}} true when any is an error, and
// {{.Results}} each one ({{range .Results}}{{.JSON.summary}}{{end}}).
// {{.Results}} after a single call holds that one result.
//
// Turns: a session's next turn (--resume) continues after the steps of the
// previous one: after an `ask`, or, when every step has run, nowhere (no step
// runs) unless the scenario says `repeat: true`, which starts it over so that
// every turn of a chat is answered.
//
// Scenario errors are reported with the file, the 0-based step index and the
// reason before the run starts ([ScenarioError]).
//
// # Output protocol (the child's stdout, JSON Lines)
//
//	{"type":"init","session_id":S,"model":M,"mcp_servers":[{"name","status","tools","error"}]}
//	{"type":"text","message_id":ID,"text":T}                     (not streaming)
//	{"type":"text_start","message_id":ID}
//	{"type":"text_delta","message_id":ID,"delta":D}
//	{"type":"text_end","message_id":ID,"text":T}
//	{"type":"tool_call","id":C,"name":TOOL,"server":KEY,"args":{...}}
//	{"type":"tool_result","id":C,"content":TEXT,"structured":{...},"is_error":B}
//	{"type":"artifact","name":N,"mime_type":M,"text":T}
//	{"type":"ask","text":T}
//	{"type":"result","status":"completed|failed|input_required","session_id":S,
//	 "output":T,"is_error":B,"error":E,"usage":{"input_tokens","output_tokens"}}
//
// Unknown line types become opaque custom payloads named "scripted.<type>".
// Artifacts and questions become custom payloads [PayloadArtifact] and
// [PayloadInputRequired].
//
// This package must not import anything but the core SDK, the adapters'
// internal helpers and the MCP client SDK; it knows nothing of A2A, AG-UI,
// bridges or delegation, and never asks a model.
package scripted
