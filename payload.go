package agentadaptor

import (
	"time"
)

// StreamKind says what a [StreamPayload] reports. The empty kind is an opaque
// custom payload identified by its Name; in JSON it is written "custom".
type StreamKind string

// customKindText is how JSON spells KindCustom.
const customKindText = "custom"

// MarshalText writes KindCustom as "custom" and every other kind as is.
func (k StreamKind) MarshalText() ([]byte, error) {
	if k == KindCustom {
		return []byte(customKindText), nil
	}
	return []byte(k), nil
}

// UnmarshalText reads "custom" (and "") as KindCustom and every other kind
// as is.
func (k *StreamKind) UnmarshalText(b []byte) error {
	if string(b) == customKindText {
		*k = KindCustom
		return nil
	}
	*k = StreamKind(b)
	return nil
}

// The payload kinds. Bridges map each kind to their protocol; a kind they do
// not know is treated like [KindCustom].
const (
	// KindCustom is an opaque payload: Name says what it is and Raw holds its
	// JSON-compatible value. The AG-UI bridge maps it to a CUSTOM event.
	KindCustom StreamKind = ""

	KindRunStarted   StreamKind = "run.started"   // first payload of every run
	KindRunFinished  StreamKind = "run.finished"  // terminal: the run completed
	KindRunFailed    StreamKind = "run.failed"    // terminal: Failure says why
	KindRunCancelled StreamKind = "run.cancelled" // terminal: the run was cancelled

	KindTextStart StreamKind = "text.start" // an assistant message opens (MessageID)
	KindTextDelta StreamKind = "text.delta" // Delta is appended to MessageID
	KindTextEnd   StreamKind = "text.end"   // the message closes; Text holds it whole when known

	KindReasoningStart StreamKind = "reasoning.start" // a reasoning block opens (MessageID)
	KindReasoningDelta StreamKind = "reasoning.delta" // Delta is appended to the reasoning block
	KindReasoningEnd   StreamKind = "reasoning.end"   // the reasoning block closes

	KindToolCallStart  StreamKind = "tool_call.start"  // ToolCallID, ToolName
	KindToolCallArgs   StreamKind = "tool_call.args"   // Delta is a fragment of the JSON arguments
	KindToolCallEnd    StreamKind = "tool_call.end"    // arguments complete; ToolArgs holds them whole when known
	KindToolCallResult StreamKind = "tool_call.result" // ToolResult (a string), ToolError

	KindUsage         StreamKind = "usage"          // Usage holds cumulative token counts
	KindStreamDropped StreamKind = "stream.dropped" // Dropped payloads were discarded before this one
	KindDiagnostic    StreamKind = "diagnostic"     // Diagnostic describes a problem with the child's output
)

// Terminal reports whether k ends a run's stream. Exactly one terminal payload
// is delivered per run, and it is the last one.
func (k StreamKind) Terminal() bool {
	return k == KindRunFinished || k == KindRunFailed || k == KindRunCancelled
}

// Droppable reports whether a payload of kind k may be discarded under
// backpressure (text, reasoning and tool-argument deltas only).
func (k StreamKind) Droppable() bool {
	return k == KindTextDelta || k == KindReasoningDelta || k == KindToolCallArgs
}

// StreamPayload is one event of a run, delivered in order on
// [RunHandle.StreamEvents]. Only the fields that belong to Kind are set.
type StreamPayload struct {
	RunID string     `json:"run_id"`
	Seq   uint64     `json:"seq"` // per-run, strictly increasing in delivery order, starting at 1
	Kind  StreamKind `json:"kind"`
	Time  time.Time  `json:"time"`

	// Name identifies a custom payload (Kind == KindCustom); adapters use
	// names such as "claude.system" for CLI lines without a mapping.
	Name string `json:"name,omitempty"`
	// Raw is the custom payload's JSON-compatible value.
	Raw map[string]any `json:"raw,omitempty"`

	MessageID string `json:"message_id,omitempty"`
	Delta     string `json:"delta,omitempty"`
	Text      string `json:"text,omitempty"`

	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	ToolArgs   string `json:"tool_args,omitempty"`   // complete JSON arguments, when known
	ToolResult string `json:"tool_result,omitempty"` // tool output as text
	ToolError  bool   `json:"tool_error,omitempty"`

	Usage      *Usage      `json:"usage,omitempty"`
	Failure    *Failure    `json:"failure,omitempty"`
	Diagnostic *Diagnostic `json:"diagnostic,omitempty"`
	Dropped    int         `json:"dropped,omitempty"`

	// SessionID is the CLI's session identifier, set on run.started when the
	// adapter knows it up front and on the terminal payload.
	SessionID string `json:"session_id,omitempty"`
	// Adapter names the adapter on run.started.
	Adapter string `json:"adapter,omitempty"`
}

// Usage counts tokens and cost as the CLI reports them.
type Usage struct {
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64   `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int64   `json:"reasoning_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd,omitempty"`
}

// Diagnostic codes carried by [KindDiagnostic] payloads.
const (
	DiagLineTooLong   = "line_too_long"  // a stdout line exceeded the per-line cap and was skipped
	DiagMalformedLine = "malformed_line" // a stdout line could not be parsed
	DiagStderr        = "stderr"         // reserved for adapters that surface stderr lines
)

// Diagnostic describes a problem with the child's output that did not stop the
// run. Excerpt is a bounded prefix of the offending input.
type Diagnostic struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"` // 1-based stdout line number
	Bytes   int    `json:"bytes,omitempty"`
	Excerpt string `json:"excerpt,omitempty"`
}
