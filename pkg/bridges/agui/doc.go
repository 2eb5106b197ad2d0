// Package agui translates a run's [agentadaptor.StreamPayload] values into
// AG-UI events, using the event types of the official AG-UI Go SDK
// (github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events).
//
// A [Translator] is stateful and serves exactly one run. [WrapWithContext]
// and [WrapStream] run a Translator over a run's payload channel and deliver
// the events on a channel. [NewCustomEvent] builds a CUSTOM event that always
// carries a value; other bridges (the subagent mux) use it for their own
// CUSTOM events.
//
//	for ev := range agui.WrapWithContext(ctx, h, agui.Options{ThreadID: threadID}) {
//		b, err := ev.ToJSON() // one AG-UI event; frame and send it
//		...
//	}
//
// or, driving a Translator payload by payload:
//
//	tr := agui.NewTranslator(agui.Options{ThreadID: threadID})
//	for p := range h.StreamEvents() {
//		for _, ev := range tr.Translate(p) {
//			...
//		}
//	}
//
// It owns the mapping from StreamPayload to AG-UI events and the guarantees
// below; what goes on the wire, and how, belongs to pkg/bridges/sse.
//
// # Guarantees
//
// Every stream a Translator produces is valid under the AG-UI Go SDK's
// Validate and [events.ValidateSequence], under the zod schemas of
// @ag-ui/core 1.0.0 and of @ag-ui/core 0.0.59 (what CopilotKit 1.7x pins),
// and under @ag-ui/client's event verification:
//
//   - RUN_STARTED is always the first event. Payloads that arrive before the
//     run.started payload are held back (up to [MaxHeld]) and translated right
//     after it; a terminal payload, [Translator.Close] or an overflowing hold
//     synthesize RUN_STARTED first.
//   - Exactly one terminal event, RUN_FINISHED or RUN_ERROR, and nothing after
//     it: later payloads are ignored.
//   - Open text messages, reasoning messages and tool calls are closed (in
//     that order) right before the terminal event.
//   - TEXT_MESSAGE_CONTENT, REASONING_MESSAGE_CONTENT and TOOL_CALL_ARGS are
//     never empty (empty deltas are skipped); every CUSTOM event has a name and
//     a value (an empty object when the payload has none).
//   - No THINKING_* events (1.0.0 removed them); no "cancelled" outcome on
//     RUN_FINISHED (0.0.59 only knows success and interrupt); tool results are
//     strings (0.0.59 rejects content parts).
//
// # Mapping
//
// threadId is [Options.ThreadID] (the host uses the session key, i.e. the
// client's threadId), or "thread-" + runId when empty. runId is
// [Options.RunID] (the client's runId when it sent one), else the payload's
// RunID (the SDK's run id). Timestamps are the payload's Time in Unix
// milliseconds, or [Options.Clock] for payloads without one and for events the
// Translator synthesizes on [Translator.Close]. Generated ids come from
// [Options.NewID].
//
//	StreamPayload kind     AG-UI events
//	---------------------  ----------------------------------------------------
//	run.started            RUN_STARTED{threadId, runId}; a repeated run.started is ignored
//	text.start             TEXT_MESSAGE_START{messageId, role:"assistant"} (no-op if already open)
//	text.delta             TEXT_MESSAGE_CONTENT{messageId, delta}; starts the message
//	                       implicitly when it is not open. Empty MessageID: the text
//	                       message last opened, else a generated "msg-..." id
//	text.end               TEXT_MESSAGE_END; Text is sent as one TEXT_MESSAGE_CONTENT
//	                       first when no delta was sent. For a message never started:
//	                       START + CONTENT(Text) + END, or nothing when Text is empty
//	reasoning.start        REASONING_START{messageId} + REASONING_MESSAGE_START{messageId,
//	                       role:"reasoning"}; messageId is "reasoning-" + MessageID so it
//	                       never collides with the text message of the same CLI message
//	reasoning.delta        REASONING_MESSAGE_CONTENT (starts implicitly, like text.delta)
//	reasoning.end          REASONING_MESSAGE_END + REASONING_END (Text as for text.end)
//	tool_call.start        TOOL_CALL_START{toolCallId, toolCallName, parentMessageId:
//	                       MessageID if set}; ToolName "" becomes "unknown_tool"; empty
//	                       ToolCallID gets a generated "call-..." id; no-op if already seen
//	tool_call.args         TOOL_CALL_ARGS{toolCallId, delta}; starts the call implicitly
//	                       when unknown; ignored after the call ended
//	tool_call.end          TOOL_CALL_END; ToolArgs is sent as one TOOL_CALL_ARGS first when
//	                       no args delta was sent; an unknown call gets START + ARGS + END
//	tool_call.result       TOOL_CALL_RESULT{messageId: generated "result-...", toolCallId,
//	                       content: ToolResult, role:"tool"}. An open call is ended first;
//	                       an unknown call gets START + ARGS + END first. Empty content
//	                       becomes "(no output)" ("(tool error)" when ToolError), because
//	                       the Go SDK rejects an empty result. ToolError has no AG-UI field.
//	usage                  CUSTOM "agentadaptor.usage" {inputTokens, outputTokens,
//	                       cacheReadTokens, cacheWriteTokens, reasoningTokens, costUsd}
//	diagnostic             CUSTOM "agentadaptor.diagnostic" {code, message, line, bytes, excerpt}
//	stream.dropped         CUSTOM "stream.dropped" {dropped}
//	"" (custom)            CUSTOM Name (or "agentadaptor.custom") with value Raw, or {}
//	any other kind         CUSTOM Name (or the kind) with value Raw, or {}
//	run.finished           (closes) + RUN_FINISHED{threadId, runId} (no outcome: success)
//	run.failed             (closes) + RUN_ERROR{code: Failure.Code, message: Failure.Message}
//	run.cancelled          (closes) + RUN_ERROR{code: "cancelled", message}
//	Close(code, message)   (RUN_STARTED if needed) + (closes) + RUN_ERROR{code, message}
//
// Cancellation is a RUN_ERROR with code "cancelled" rather than RUN_FINISHED
// with outcome "cancelled": @ag-ui/core 1.0.0 knows that outcome but 0.0.59
// (CopilotKit) rejects it, and a RUN_FINISHED without outcome would read as a
// success. RUN_ERROR carries no runId: it is not part of the event's schema
// in @ag-ui/core 1.0.0 and @ag-ui/client would strip it with a warning.
//
// Reasoning: both @ag-ui/core 1.0.0 and 0.0.59 define the REASONING_* events
// (checked against their zod schemas), so [ReasoningEvents] is the default.
// [ReasoningCustom] maps reasoning to CUSTOM "agentadaptor.reasoning.start",
// ".delta", ".end" {messageId, delta, text}, and [ReasoningOmit] drops it, for
// frontends that should not show it.
//
// # What this package must not do
//
// It does no I/O and owns no HTTP: framing and transport live in
// pkg/bridges/sse. It imports only the root package and the AG-UI Go SDK:
// never pkg/adapters/*, A2A or MCP packages, and never the delegation
// packages (the subagent mux builds on this package, not the reverse).
package agui
