// Package sse serves one agent run per HTTP request as a server-sent event
// stream: AG-UI events by default ([ProtocolAGUI], translated by
// pkg/bridges/agui), or the run's raw [agentadaptor.StreamPayload] JSON
// ([ProtocolRaw]).
//
//	h := sse.NewHandler(sdk, sse.WithAllowedOrigins("http://localhost:3000"))
//	mux.Handle("/agui", h)
//	mux.Handle("/agui/runs/{runId}/cancel", h.CancelHandler())
//	// POST a RunAgentInput to /agui: the run streams back as AG-UI events.
//
// It owns the HTTP side of one run per request: reading the RunAgentInput,
// the SSE framing, keep-alives, the client's disconnect, CORS and the
// [Registry] of active runs by runId.
//
// # Request
//
// [NewHandler] returns an http.Handler for POST with an AG-UI RunAgentInput
// body, as @ag-ui/client's HttpAgent and CopilotKit send it (camelCase; the
// snake_case aliases thread_id, run_id, forwarded_props, ... are accepted).
// Content-Type must be application/json. The run is started with
// agentadaptor.WithStreaming(), agentadaptor.WithSessionKey(threadId) (see
// [WithSessionKeyFunc]) and then the host's [WithRunOptions].
//
//   - The prompt is the text of the last user message; content may be a
//     string or an array of content parts, of which the text parts count
//     (see [Prompt]).
//   - system and developer messages are prepended as a delimited
//     "[client instructions]" block, and context entries as a
//     "[client context]" block; [WithPromptPolicy] turns either off. They come
//     from the same client as the user's text, so they carry no more
//     authority than it.
//   - forwardedProps are ignored unless the host installs
//     [WithForwardedProps]; a client can never select the adapter, the
//     command, a URL, or anything else through them by default.
//   - tools (frontend tools), state and resume are ignored: local agent CLIs
//     cannot call browser tools.
//
// A request that is wrong is answered before any stream starts, with
// {"error":{"code","message"}}: 405 for a method other than POST (OPTIONS is
// the CORS preflight), 400 for a wrong Content-Type, a body that is not a
// RunAgentInput, no user message or no text in it, 413 for a body over
// [WithMaxRequestBytes] (default 1 MiB), 403 for a disallowed Origin, 409
// for a runId of the same principal that is still active.
//
// # Response
//
// The response has Content-Type: text/event-stream, Cache-Control: no-cache,
// Connection: keep-alive and X-Accel-Buffering: no. Each frame is
// "id: N\ndata: JSON\n\n" with N counting 1, 2, 3, ... per run. The first
// frame (RUN_STARTED) is flushed at once, later ones as soon as no further
// payload is waiting (at least every 32 payloads); ": keep-alive" comments
// are written every [WithKeepAlive] period. The runId in RUN_STARTED is the
// client's runId when it sent one, else the SDK's RunID; threadId is the client's threadId (when the client
// sent none: "thread-" + runId, and the run gets no session key). The
// handler's [Registry] keeps the run under [RunKey]: that runId in the
// namespace of the request's principal ([WithOwner]), so principals never
// see or block each other's runIds.
//
// A run that cannot start (SDK.Start fails, e.g. with a *StartError) still
// gets a complete stream: RUN_STARTED then RUN_ERROR whose code is the typed
// failure code (start_failed, invalid_config, runtime_service_failed, ...).
// A run's payload stream that ends without a terminal payload ends with
// RUN_ERROR code "stream_ended".
//
// When the client disconnects (HttpAgent.abortRun(), a closed tab), the run
// is cancelled and the handler waits (10 seconds at most) until its
// process has ended; with [WithDetachOnDisconnect] the run continues to
// completion instead. [Registry.Cancel] and [Handler.CancelHandler] cancel a
// run from another request (POST /agui/runs/{runId}/cancel); the stream then
// ends with RUN_ERROR code "cancelled".
//
// CORS: [WithAllowedOrigins] lists exact origins (no wildcard); preflight
// OPTIONS requests are answered for them. Same-origin browser requests and
// requests without Origin are always served.
//
// # Goroutines
//
// The handler streams on the request's goroutine. The only goroutine it
// starts is the [Registry]'s per-run watcher, which removes the run when it
// ends and lives exactly as long as the run.
//
// # What this package must not do
//
// It imports the root package, pkg/bridges/agui and the AG-UI Go SDK only:
// never pkg/adapters/*, A2A or MCP packages, nor the delegation packages. It
// does not replay streams after a reconnect (the host's replay log does), and
// it never writes anything but complete frames.
package sse
