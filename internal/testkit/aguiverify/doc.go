// Package aguiverify checks AG-UI event streams against the sequence rules
// the project promises (docs/design.md#subagent-wire-shape and
// docs/design.md#testing): what @ag-ui/client
// verifies, plus what the @ag-ui/core 1.0.0 and 0.0.59 schemas both require
// of the fields our bridges emit.
//
// [Frames] parses an SSE byte stream; [Verify] applies the rules to the
// frames and returns every violation at once (an *[Error]); [VerifyEvents]
// does the same for Go SDK events without SSE framing.
//
// Rules:
//
//   - every frame's data is one JSON object with a string "type";
//   - frame ids are decimal integers, strictly increasing (unless
//     [WithoutFrameIDs]);
//   - RUN_STARTED (with threadId and runId) is the first event and occurs once;
//   - exactly one terminal event (RUN_FINISHED or RUN_ERROR), and it is last;
//   - TEXT_MESSAGE_START/CONTENT/END pair by messageId: no double start, no
//     content or end without an open start, no empty delta;
//   - TOOL_CALL_START/ARGS/END pair by toolCallId (toolCallName required),
//     TOOL_CALL_RESULT has a messageId, string content, and refers to an ended
//     tool call;
//   - REASONING_START/END (spans) and REASONING_MESSAGE_START/CONTENT/END pair
//     by messageId; REASONING_MESSAGE_START has role "reasoning";
//   - SUBAGENT_STARTED/FINISHED/ERROR pair by subagentRunId;
//   - nothing is open (text, reasoning, tool call, subagent) at the terminal
//     event;
//   - CUSTOM has a non-empty name and a value;
//   - RUN_FINISHED's outcome, when present, is success or interrupt (0.0.59
//     has no "cancelled"); RUN_ERROR has a non-empty message;
//   - no THINKING_* events (removed in @ag-ui/core 1.0.0);
//   - timestamp, when present, is an integer.
//
// Event types it does not know are valid unless a rule above applies to
// them, so streams carrying new event types (SUBAGENT_*, ACTIVITY_*) and
// CUSTOM events of any name still verify.
//
// The package is for tests and tools; it never imports production packages
// of this module.
package aguiverify
