// Package fakemodel provides scriptable fake model servers for end-to-end
// tests of the real agent CLIs, on 127.0.0.1 only (net/http/httptest):
//
//   - [Anthropic]: the Anthropic Messages API as Claude Code calls it
//     (POST /v1/messages with stream:true, answered as SSE; HEAD / answered 200);
//   - [OpenAI]: the OpenAI Responses API as Codex calls it
//     (POST /v1/responses, answered as SSE);
//   - [Gemini]: the Gemini API (v1beta streamGenerateContent as SSE, with
//     text, thought and functionCall parts; generateContent side tasks;
//     countTokens) as Gemini CLI and Gemini CLI's A2A server call it through
//     @google/genai, pointed at it by GOOGLE_GEMINI_BASE_URL; it counts the
//     answers a client abandoned ([Gemini.Aborted]).
//
// Each server replays a queue of [Turn] values, one per model request: plain
// text, a call of a named MCP tool, a final text that quotes the previous tool
// result ({{result}} in [Turn.Text]), an HTTP error, or a slow stream whose
// deltas are spaced by [Turn.Delay] (it stops when the client goes away). When
// the queue is empty the server answers with the text "ok". Every request
// is logged with its full body ([Server.Requests]).
//
// [WriteCodexModelCatalog] writes the model_catalog_json file that makes Codex
// accept the fake model without hiding MCP tools behind tool_search.
//
// For adapter tests it also offers [MaybeRunFakeCLI] (a test binary
// re-executed as a fake agent CLI replaying a fixture) and [MCPService] (a
// runtime-service manager serving a bearer-protected MCP server per run).
package fakemodel
