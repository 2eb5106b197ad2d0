// Package a2a exposes any local adapter run as an A2A (Agent2Agent, protocol
// 1.0) server, on the official SDK github.com/a2aproject/a2a-go/v2. Importers
// alias it a2abridge.
//
// It owns the server side of A2A for the host: an a2asrv.AgentExecutor over
// an *agentadaptor.SDK ([Executor]), the mapping from StreamPayload to A2A
// task events, the exposure policy ([Exposure]), the Agent Card ([BuildCard])
// and one http.Handler serving the card, JSON-RPC and HTTP+JSON in A2A 1.0
// and 0.3 ([Server]), plus the gRPC service ([Server.RegisterGRPC]). It must
// not import concrete adapters (tests use the scripted adapter): it knows
// adapters only through the SDK. It does not authenticate or check Host and
// Origin headers: the process puts its admission layer in front and passes
// the principal as [Config].Principal (docs/design.md#secrets).
//
//	b, _ := a2abridge.NewServer(a2abridge.Config{SDK: sdk, Adapter: "codex",
//		Card: a2abridge.CardOptions{BaseURL: "http://127.0.0.1:9001"}})
//	http.ListenAndServe("127.0.0.1:9001", b.Handler())
//	// card: /.well-known/agent-card.json, JSON-RPC: /a2a/jsonrpc, HTTP+JSON: /a2a/rest
//
// # Task lifecycle
//
// Every message of a task (the first one, and each follow-up to an
// input-required task) is one turn: one run started with the message's text
// parts as the prompt (data parts as JSON), WithStreaming and a session key
// made of the principal and the contextId, so every turn of one A2A context
// continues the same CLI session, across tasks too. Turns of one context run
// one at a time.
//
//   - the Task first: a new task submitted; the follow-up turn of an
//     input-required task starts with the stored task, submitted again with
//     the answer in its history; then working when the run starts;
//   - text: each assistant message becomes one artifact named
//     [ArtifactAssistantOutput] with its own artifact id, streamed as chunks
//     (first append=false, later append=true, the last lastChunk=true; one
//     delta is held back so that the last chunk is never empty). Text lost to
//     backpressure is recovered from the message's final text when possible;
//   - an "agent.artifact" payload {name, mime_type, text} becomes one artifact
//     (a text part with that media type, lastChunk=true);
//   - at the end of the turn an [ArtifactAgentAdaptorResult] artifact (id
//     "agent-adaptor-result", replaced by each later turn of the task) holds a
//     DataPart [Result]: summary (the run's Output), status, usage,
//     session_id, the artifacts the turn published [{id,name,mime_type}],
//     run_id, adapter and, for failed or cancelled turns, error{code,message};
//   - then the final status: completed; input-required when the run completed
//     after an "agent.input_required" payload (the question is the status
//     message; a follow-up message on the task starts the next turn, which the
//     CLI resumes in the same session); failed (the failure is the status
//     message); canceled.
//
// A2A CancelTask on a running turn cancels its run (RunHandle.Cancel: SIGINT,
// then SIGKILL after the grace period); the turn publishes the result
// artifact and the canceled status, and CancelTask returns once the child has
// exited. Cancelling an input-required task cancels it directly (the server
// retries, for a few milliseconds, a cancel that a2a-go attached to the
// execution of the turn that just asked, which would otherwise fail as not
// cancelable or with a closed queue). A turn that
// ends before the cancel reaches it keeps its state, and CancelTask reports
// the task as not cancelable. [Server.Close] cancels every running turn.
//
// Reasoning, tool calls and diagnostics are hidden unless [Exposure] enables
// them; enabled, they become working status-update messages marked with
// [MetadataKind]. Other custom payloads are never exposed.
//
// A message to a finished task, and a subscription to one, is
// UnsupportedOperation. SubscribeToTask works on every other task: its first
// event is the Task, then the task's events follow, across turns (an
// input-required task is followed through the turn its answer starts),
// until a terminal state. Events of a turn the subscriber was not attached
// to are not replayed; the states it missed arrive as status updates.
//
// # Owners
//
// A task belongs to the principal that created it ([Config].Principal, or
// [LocalUser] when there is none): GetTask, ListTasks (per owner), CancelTask,
// SubscribeToTask and follow-up messages of anyone else find no such task.
// A context belongs to its principal too: another principal's message with
// the same contextId starts a fresh conversation of its own (its own CLI
// session, never waiting for the first principal's turns).
//
// # Active tasks
//
// [Config].MaxActiveTasks bounds the turns in progress (agent CLI
// processes). A message beyond it starts nothing and is refused with an
// error that is [ErrTooManyTasks]: HTTP+JSON 429 with Retry-After, JSON-RPC
// -32000, gRPC RESOURCE_EXHAUSTED, each with the ErrorInfo reason
// [ReasonTooManyTasks]; [Config].OnRefused counts refusals. Running tasks,
// reads and cancels are never refused.
//
// # Versions and bindings
//
// The card ([PathAgentCard], also at [PathLegacyAgentCard]) lists A2A 1.0
// over HTTP+JSON, JSON-RPC and, when configured, gRPC, then A2A 0.3 over
// JSON-RPC and HTTP+JSON at the same URLs; its URLs come from
// [CardOptions].BaseURL only. It is the union of the 1.0 and 0.3 card
// shapes, as the official SDKs serve it, with an ETag, Last-Modified and
// Cache-Control. A request's A2A-Version picks the layer: 1.0 (a2a-go's
// handlers) or 0.3 (a2a-go's a2av0 compatibility layer, one task store for
// both); any other version is VersionNotSupported. Without the header a
// request is 0.3 if it uses the 0.3 method names or REST paths, 1.0
// otherwise. A stream refused before its first event is a plain error
// response (JSON-RPC: the error object with HTTP 200; HTTP+JSON: the HTTP
// error), as the A2A TCK and the Python and JavaScript SDKs expect.
//
// # Interoperability
//
// Tested against @a2a-js/sdk 1.3.0 (tests/node/a2a-*.mjs, run by this
// package's and cmd/agentadaptor's tests; skipped locally without
// node_modules, failing under CI=true): its client drives this server over
// every binding and both versions (card, send, stream, get, list, cancel,
// subscribe, multi-turn, version negotiation), and pkg/clients/a2a drives an
// @a2a-js/sdk server on its 1.0 wire and on its v0.3 compatibility wire.
// a2a-go's client drives it over JSON-RPC, HTTP+JSON and gRPC in 1.0 and
// over both HTTP bindings in 0.3. Known gaps:
//
//   - a2a-go's JSON-RPC client reads a stream refused before its first event
//     (a plain JSON-RPC error, see above) as an empty stream; its HTTP+JSON
//     client reads the HTTP error. The card lists HTTP+JSON first, which
//     a2a-go-based clients (pkg/clients/a2a included) then prefer.
//   - On the v0.3 wire text parts lose their media type.
//   - An @a2a-js/sdk agent must publish a Task first in every execution; if it
//     republishes a follow-up's task snapshot still in input-required, an A2A
//     client that stops at the first interrupted state (pkg/clients/a2a's
//     Stream does) ends the follow-up stream before the answer is processed.
package a2a
