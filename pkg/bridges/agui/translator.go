package agui

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"

	"github.com/seed0634/agentadaptor"
)

// MaxHeld bounds the payloads a Translator holds back while it waits for the
// run.started payload. When more arrive, RUN_STARTED is synthesized and the
// held payloads are translated.
const MaxHeld = 1024

// Codes of the RUN_ERROR events the Translator produces itself.
const (
	// CodeCancelled is the RUN_ERROR code of a cancelled run.
	CodeCancelled = string(agentadaptor.FailureCancelled)
	// CodeStreamEnded is the RUN_ERROR code used by [Translator.Close] callers
	// when a run's payload stream ended without a terminal payload.
	CodeStreamEnded = "stream_ended"
	// CodeRunFailed is the RUN_ERROR code of a run.failed payload that has no
	// Failure.
	CodeRunFailed = "run_failed"
)

// Names of the CUSTOM events the Translator produces.
const (
	EventUsage          = "agentadaptor.usage"
	EventDiagnostic     = "agentadaptor.diagnostic"
	EventStreamDropped  = "stream.dropped"
	EventCustomFallback = "agentadaptor.custom" // a custom payload without a Name
	EventReasoningStart = "agentadaptor.reasoning.start"
	EventReasoningDelta = "agentadaptor.reasoning.delta"
	EventReasoningEnd   = "agentadaptor.reasoning.end"
)

// Placeholders for values the AG-UI Go SDK does not accept empty.
const (
	UnknownToolName   = "unknown_tool"
	EmptyToolResult   = "(no output)"
	EmptyToolError    = "(tool error)"
	defaultRunErrText = "the run failed"
)

// ReasoningMode selects how reasoning payloads are emitted.
type ReasoningMode int

const (
	// ReasoningEvents maps reasoning to REASONING_* events (the default; both
	// @ag-ui/core 1.0.0 and 0.0.59 define them).
	ReasoningEvents ReasoningMode = iota
	// ReasoningCustom maps reasoning to CUSTOM "agentadaptor.reasoning.*" events.
	ReasoningCustom
	// ReasoningOmit drops reasoning payloads.
	ReasoningOmit
)

// Options configure a [Translator]. The zero value is usable.
type Options struct {
	// ThreadID is the AG-UI threadId (the client's threadId / session key).
	// Default: "thread-" + the runId.
	ThreadID string
	// RunID is the AG-UI runId (the client's runId when it sent one).
	// Default: the RunID of the first payload, else a generated "run-..." id.
	RunID string
	// Clock stamps events whose payload has no Time and the events synthesized
	// by Close. Default time.Now.
	Clock func() time.Time
	// NewID generates ids for messages, tool results and tool calls that have
	// none; prefix is "msg-", "result-", "call-", "reasoning-", "run-" or
	// "thread-". Default: prefix + 16 random hex digits. Tests pass a
	// deterministic generator.
	NewID func(prefix string) string
	// Reasoning selects how reasoning payloads are emitted.
	Reasoning ReasoningMode
}

type toolState struct {
	open    bool // started, not ended
	argsOut bool // an args delta was sent
}

type openMsg struct {
	id      string
	content bool // a content delta was sent
}

// Translator turns one run's payloads into AG-UI events. It is not safe for
// concurrent use; one goroutine feeds it in payload order.
type Translator struct {
	opts     Options
	threadID string
	runID    string

	started bool
	ended   bool
	held    []agentadaptor.StreamPayload

	texts      []openMsg // open text messages, in opening order
	lastText   string
	reasonings []openMsg // open reasoning messages (AG-UI ids)
	lastReason string
	tools      map[string]*toolState
	toolOrder  []string // open tool calls, in opening order
	lastTool   string
}

// NewTranslator returns a Translator for one run.
func NewTranslator(opts Options) *Translator {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.NewID == nil {
		opts.NewID = RandomID
	}
	return &Translator{opts: opts, threadID: opts.ThreadID, runID: opts.RunID, tools: map[string]*toolState{}}
}

// RandomID returns prefix followed by 16 random hex digits.
func RandomID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail on supported platforms
	return prefix + hex.EncodeToString(b[:])
}

// ThreadID returns the AG-UI threadId, known once RUN_STARTED was produced.
func (t *Translator) ThreadID() string { return t.threadID }

// RunID returns the AG-UI runId, known once RUN_STARTED was produced.
func (t *Translator) RunID() string { return t.runID }

// Started reports whether RUN_STARTED has been produced.
func (t *Translator) Started() bool { return t.started }

// Done reports whether the terminal event has been produced; the Translator
// then ignores everything else.
func (t *Translator) Done() bool { return t.ended }

// Translate returns the events for p (possibly none).
func (t *Translator) Translate(p agentadaptor.StreamPayload) []events.Event {
	return t.AppendTranslate(nil, p)
}

// AppendTranslate appends the events for p to dst and returns the extended
// slice, so a caller can reuse one buffer across payloads.
func (t *Translator) AppendTranslate(dst []events.Event, p agentadaptor.StreamPayload) []events.Event {
	if t.ended {
		return dst
	}
	if !t.started {
		switch {
		case p.Kind == agentadaptor.KindRunStarted:
			dst = t.start(dst, p.RunID, t.stamp(p.Time))
			return t.flushHeld(dst)
		case p.Kind.Terminal(), len(t.held) >= MaxHeld:
			dst = t.start(dst, p.RunID, t.stamp(p.Time))
			dst = t.flushHeld(dst)
		default:
			t.held = append(t.held, p)
			return dst
		}
	}
	return t.apply(dst, p)
}

// Close ends a stream that stopped without a terminal payload: it returns
// RUN_STARTED if none was produced yet, the held payloads' events, the
// closing events of everything open, and RUN_ERROR{code, message}. It returns
// nothing when the terminal event was already produced. An empty code
// becomes [CodeStreamEnded].
func (t *Translator) Close(code, message string) []events.Event {
	if t.ended {
		return nil
	}
	var dst []events.Event
	now := t.opts.Clock().UnixMilli()
	if !t.started {
		runID := ""
		if len(t.held) > 0 {
			runID = t.held[0].RunID
		}
		dst = t.start(dst, runID, now)
		dst = t.flushHeld(dst)
	}
	if code == "" {
		code = CodeStreamEnded
	}
	if message == "" {
		message = "the run's event stream ended without a terminal event"
	}
	dst = t.closeAll(dst, now)
	t.ended = true
	return append(dst, runError(code, message, now))
}

func (t *Translator) stamp(at time.Time) int64 {
	if at.IsZero() {
		return t.opts.Clock().UnixMilli()
	}
	return at.UnixMilli()
}

func (t *Translator) start(dst []events.Event, payloadRunID string, ts int64) []events.Event {
	if t.runID == "" {
		t.runID = payloadRunID
	}
	if t.runID == "" {
		t.runID = t.opts.NewID("run-")
	}
	if t.threadID == "" {
		t.threadID = "thread-" + t.runID
	}
	t.started = true
	return append(dst, &events.RunStartedEvent{BaseEvent: base(events.EventTypeRunStarted, ts), ThreadIDValue: t.threadID, RunIDValue: t.runID})
}

func (t *Translator) flushHeld(dst []events.Event) []events.Event {
	held := t.held
	t.held = nil
	for _, h := range held {
		dst = t.apply(dst, h)
	}
	return dst
}

func base(typ events.EventType, ts int64) *events.BaseEvent {
	return &events.BaseEvent{EventType: typ, TimestampMs: &ts}
}

func (t *Translator) apply(dst []events.Event, p agentadaptor.StreamPayload) []events.Event {
	if t.ended {
		return dst
	}
	ts := t.stamp(p.Time)
	switch p.Kind {
	case agentadaptor.KindRunStarted:
		return dst // duplicate
	case agentadaptor.KindRunFinished:
		dst = t.closeAll(dst, ts)
		t.ended = true
		return append(dst, &events.RunFinishedEvent{BaseEvent: base(events.EventTypeRunFinished, ts), ThreadIDValue: t.threadID, RunIDValue: t.runID})
	case agentadaptor.KindRunFailed:
		code, msg := CodeRunFailed, defaultRunErrText
		if p.Failure != nil {
			if p.Failure.Code != "" {
				code = string(p.Failure.Code)
			}
			if p.Failure.Message != "" {
				msg = p.Failure.Message
			} else {
				msg = "the run failed: " + code
			}
		}
		dst = t.closeAll(dst, ts)
		t.ended = true
		return append(dst, runError(code, msg, ts))
	case agentadaptor.KindRunCancelled:
		msg := "the run was cancelled"
		if p.Failure != nil && p.Failure.Message != "" {
			msg = p.Failure.Message
		}
		dst = t.closeAll(dst, ts)
		t.ended = true
		return append(dst, runError(CodeCancelled, msg, ts))

	case agentadaptor.KindTextStart:
		id := t.textID(p.MessageID, true)
		return t.openText(dst, id, ts)
	case agentadaptor.KindTextDelta:
		id := t.textID(p.MessageID, false)
		dst = t.openText(dst, id, ts)
		return t.textContent(dst, id, p.Delta, ts)
	case agentadaptor.KindTextEnd:
		id := t.textID(p.MessageID, false)
		i := findOpen(t.texts, id)
		if i < 0 {
			if p.Text == "" {
				return dst
			}
			dst = t.openText(dst, id, ts)
			i = findOpen(t.texts, id)
		}
		if !t.texts[i].content {
			dst = t.textContent(dst, id, p.Text, ts)
		}
		return t.endText(dst, id, ts)

	case agentadaptor.KindReasoningStart, agentadaptor.KindReasoningDelta, agentadaptor.KindReasoningEnd:
		return t.reasoning(dst, p, ts)

	case agentadaptor.KindToolCallStart:
		id := t.toolID(p.ToolCallID, true)
		if _, seen := t.tools[id]; seen {
			return dst
		}
		return t.startTool(dst, id, p.ToolName, p.MessageID, ts)
	case agentadaptor.KindToolCallArgs:
		id := t.toolID(p.ToolCallID, false)
		st, seen := t.tools[id]
		if !seen {
			dst = t.startTool(dst, id, p.ToolName, p.MessageID, ts)
			st = t.tools[id]
		}
		if !st.open || p.Delta == "" {
			return dst
		}
		st.argsOut = true
		return append(dst, &events.ToolCallArgsEvent{BaseEvent: base(events.EventTypeToolCallArgs, ts), ToolCallID: id, Delta: p.Delta})
	case agentadaptor.KindToolCallEnd:
		id := t.toolID(p.ToolCallID, false)
		st, seen := t.tools[id]
		if !seen {
			dst = t.startTool(dst, id, p.ToolName, p.MessageID, ts)
			st = t.tools[id]
		}
		if !st.open {
			return dst
		}
		return t.endTool(dst, id, p.ToolArgs, ts)
	case agentadaptor.KindToolCallResult:
		id := t.toolID(p.ToolCallID, false)
		st, seen := t.tools[id]
		if !seen {
			dst = t.startTool(dst, id, p.ToolName, p.MessageID, ts)
			st = t.tools[id]
		}
		if st.open {
			dst = t.endTool(dst, id, p.ToolArgs, ts)
		}
		content := p.ToolResult
		if content == "" {
			content = EmptyToolResult
			if p.ToolError {
				content = EmptyToolError
			}
		}
		role := "tool"
		return append(dst, &events.ToolCallResultEvent{BaseEvent: base(events.EventTypeToolCallResult, ts),
			MessageID: t.opts.NewID("result-"), ToolCallID: id, Content: content, Role: &role})

	case agentadaptor.KindUsage:
		var v usageValue
		if p.Usage != nil {
			u := p.Usage
			v = usageValue{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
				CacheWriteTokens: u.CacheWriteTokens, ReasoningTokens: u.ReasoningTokens, CostUSD: u.CostUSD}
		}
		return append(dst, custom(EventUsage, v, ts))
	case agentadaptor.KindDiagnostic:
		var v diagnosticValue
		if d := p.Diagnostic; d != nil {
			v = diagnosticValue{Code: d.Code, Message: d.Message, Line: d.Line, Bytes: d.Bytes, Excerpt: d.Excerpt}
		}
		return append(dst, custom(EventDiagnostic, v, ts))
	case agentadaptor.KindStreamDropped:
		return append(dst, custom(EventStreamDropped, droppedValue{Dropped: p.Dropped}, ts))
	default:
		name := p.Name
		if name == "" {
			name = string(p.Kind)
		}
		if name == "" {
			name = EventCustomFallback
		}
		var v any = map[string]any{}
		if p.Raw != nil {
			v = p.Raw
		}
		return append(dst, custom(name, v, ts))
	}
}

func runError(code, message string, ts int64) *events.RunErrorEvent {
	return &events.RunErrorEvent{BaseEvent: base(events.EventTypeRunError, ts), Code: &code, Message: message}
}

func findOpen(list []openMsg, id string) int {
	for i := range list {
		if list[i].id == id {
			return i
		}
	}
	return -1
}

// textID resolves a payload's MessageID; an empty id means the message last
// opened (or a new generated id when none is open or start is true).
func (t *Translator) textID(id string, start bool) string {
	if id != "" {
		return id
	}
	if !start && t.lastText != "" && findOpen(t.texts, t.lastText) >= 0 {
		return t.lastText
	}
	return t.opts.NewID("msg-")
}

func (t *Translator) openText(dst []events.Event, id string, ts int64) []events.Event {
	if findOpen(t.texts, id) >= 0 {
		return dst
	}
	t.texts = append(t.texts, openMsg{id: id})
	t.lastText = id
	role := "assistant"
	return append(dst, &events.TextMessageStartEvent{BaseEvent: base(events.EventTypeTextMessageStart, ts), MessageID: id, Role: &role})
}

func (t *Translator) textContent(dst []events.Event, id, delta string, ts int64) []events.Event {
	if delta == "" {
		return dst
	}
	t.texts[findOpen(t.texts, id)].content = true
	return append(dst, &events.TextMessageContentEvent{BaseEvent: base(events.EventTypeTextMessageContent, ts), MessageID: id, Delta: delta})
}

func (t *Translator) endText(dst []events.Event, id string, ts int64) []events.Event {
	i := findOpen(t.texts, id)
	if i < 0 {
		return dst
	}
	t.texts = append(t.texts[:i], t.texts[i+1:]...)
	return append(dst, &events.TextMessageEndEvent{BaseEvent: base(events.EventTypeTextMessageEnd, ts), MessageID: id})
}

func (t *Translator) reasoningID(id string, start bool) string {
	if id != "" {
		return "reasoning-" + id
	}
	if !start && t.lastReason != "" && (t.opts.Reasoning == ReasoningCustom || findOpen(t.reasonings, t.lastReason) >= 0) {
		return t.lastReason
	}
	return t.opts.NewID("reasoning-")
}

func (t *Translator) reasoning(dst []events.Event, p agentadaptor.StreamPayload, ts int64) []events.Event {
	if t.opts.Reasoning == ReasoningOmit {
		return dst
	}
	id := t.reasoningID(p.MessageID, p.Kind == agentadaptor.KindReasoningStart)
	if t.opts.Reasoning == ReasoningCustom {
		v := reasoningValue{MessageID: id, Delta: p.Delta, Text: p.Text}
		switch p.Kind {
		case agentadaptor.KindReasoningStart:
			t.lastReason = id
			return append(dst, custom(EventReasoningStart, v, ts))
		case agentadaptor.KindReasoningDelta:
			return append(dst, custom(EventReasoningDelta, v, ts))
		default:
			return append(dst, custom(EventReasoningEnd, v, ts))
		}
	}
	switch p.Kind {
	case agentadaptor.KindReasoningStart:
		return t.openReasoning(dst, id, ts)
	case agentadaptor.KindReasoningDelta:
		dst = t.openReasoning(dst, id, ts)
		return t.reasoningContent(dst, id, p.Delta, ts)
	default: // end
		i := findOpen(t.reasonings, id)
		if i < 0 {
			if p.Text == "" {
				return dst
			}
			dst = t.openReasoning(dst, id, ts)
			i = findOpen(t.reasonings, id)
		}
		if !t.reasonings[i].content {
			dst = t.reasoningContent(dst, id, p.Text, ts)
		}
		return t.endReasoning(dst, id, ts)
	}
}

func (t *Translator) openReasoning(dst []events.Event, id string, ts int64) []events.Event {
	if findOpen(t.reasonings, id) >= 0 {
		return dst
	}
	t.reasonings = append(t.reasonings, openMsg{id: id})
	t.lastReason = id
	return append(dst,
		&events.ReasoningStartEvent{BaseEvent: base(events.EventTypeReasoningStart, ts), MessageID: id},
		&events.ReasoningMessageStartEvent{BaseEvent: base(events.EventTypeReasoningMessageStart, ts), MessageID: id, Role: "reasoning"})
}

func (t *Translator) reasoningContent(dst []events.Event, id, delta string, ts int64) []events.Event {
	if delta == "" {
		return dst
	}
	t.reasonings[findOpen(t.reasonings, id)].content = true
	return append(dst, &events.ReasoningMessageContentEvent{BaseEvent: base(events.EventTypeReasoningMessageContent, ts), MessageID: id, Delta: delta})
}

func (t *Translator) endReasoning(dst []events.Event, id string, ts int64) []events.Event {
	i := findOpen(t.reasonings, id)
	if i < 0 {
		return dst
	}
	t.reasonings = append(t.reasonings[:i], t.reasonings[i+1:]...)
	return append(dst,
		&events.ReasoningMessageEndEvent{BaseEvent: base(events.EventTypeReasoningMessageEnd, ts), MessageID: id},
		&events.ReasoningEndEvent{BaseEvent: base(events.EventTypeReasoningEnd, ts), MessageID: id})
}

// toolID resolves a payload's ToolCallID; an empty id means the call last
// started (or a new generated id when start is true or none was started).
func (t *Translator) toolID(id string, start bool) string {
	if id != "" {
		return id
	}
	if !start && t.lastTool != "" {
		return t.lastTool
	}
	return t.opts.NewID("call-")
}

func (t *Translator) startTool(dst []events.Event, id, name, parent string, ts int64) []events.Event {
	if name == "" {
		name = UnknownToolName
	}
	t.tools[id] = &toolState{open: true}
	t.toolOrder = append(t.toolOrder, id)
	t.lastTool = id
	ev := &events.ToolCallStartEvent{BaseEvent: base(events.EventTypeToolCallStart, ts), ToolCallID: id, ToolCallName: name}
	if parent != "" {
		ev.ParentMessageID = &parent
	}
	return append(dst, ev)
}

func (t *Translator) endTool(dst []events.Event, id, wholeArgs string, ts int64) []events.Event {
	st := t.tools[id]
	if st == nil || !st.open {
		return dst
	}
	if !st.argsOut && wholeArgs != "" {
		st.argsOut = true
		dst = append(dst, &events.ToolCallArgsEvent{BaseEvent: base(events.EventTypeToolCallArgs, ts), ToolCallID: id, Delta: wholeArgs})
	}
	st.open = false
	for i, o := range t.toolOrder {
		if o == id {
			t.toolOrder = append(t.toolOrder[:i], t.toolOrder[i+1:]...)
			break
		}
	}
	return append(dst, &events.ToolCallEndEvent{BaseEvent: base(events.EventTypeToolCallEnd, ts), ToolCallID: id})
}

// closeAll closes open text messages, reasoning messages and tool calls.
func (t *Translator) closeAll(dst []events.Event, ts int64) []events.Event {
	for len(t.texts) > 0 {
		dst = t.endText(dst, t.texts[0].id, ts)
	}
	for len(t.reasonings) > 0 {
		dst = t.endReasoning(dst, t.reasonings[0].id, ts)
	}
	for len(t.toolOrder) > 0 {
		dst = t.endTool(dst, t.toolOrder[0], "", ts)
	}
	return dst
}

type usageValue struct {
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int64   `json:"cacheWriteTokens,omitempty"`
	ReasoningTokens  int64   `json:"reasoningTokens,omitempty"`
	CostUSD          float64 `json:"costUsd,omitempty"`
}

type diagnosticValue struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
	Bytes   int    `json:"bytes,omitempty"`
	Excerpt string `json:"excerpt,omitempty"`
}

type droppedValue struct {
	Dropped int `json:"dropped"`
}

type reasoningValue struct {
	MessageID string `json:"messageId"`
	Delta     string `json:"delta,omitempty"`
	Text      string `json:"text,omitempty"`
}
