package agui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
)

// sdkDecoded lists the event types that events.EventFromJSON decodes into
// the SDK's own structs.
var sdkDecoded = map[events.EventType]bool{
	events.EventTypeRunStarted: true, events.EventTypeRunFinished: true, events.EventTypeRunError: true,
	events.EventTypeStepStarted: true, events.EventTypeStepFinished: true,
	events.EventTypeTextMessageStart: true, events.EventTypeTextMessageContent: true,
	events.EventTypeTextMessageChunk: true, events.EventTypeTextMessageEnd: true,
	events.EventTypeToolCallStart: true, events.EventTypeToolCallArgs: true,
	events.EventTypeToolCallEnd: true, events.EventTypeToolCallResult: true,
	events.EventTypeStateSnapshot: true, events.EventTypeStateDelta: true, events.EventTypeMessagesSnapshot: true,
	events.EventTypeActivitySnapshot: true, events.EventTypeActivityDelta: true,
	events.EventTypeRaw: true, events.EventTypeCustom: true,
	events.EventTypeReasoningStart: true, events.EventTypeReasoningMessageStart: true,
	events.EventTypeReasoningMessageContent: true, events.EventTypeReasoningMessageEnd: true,
	events.EventTypeReasoningMessageChunk: true, events.EventTypeReasoningEnd: true,
	events.EventTypeReasoningEncryptedValue: true,
}

// sdkExtra covers SDK event structs that events.EventFromJSON does not
// decode (this SDK version lacks a case for them).
var sdkExtra = map[events.EventType]func() events.Event{
	events.EventTypeToolCallChunk: func() events.Event {
		return &events.ToolCallChunkEvent{BaseEvent: &events.BaseEvent{}}
	},
}

// UnknownEvent is an AG-UI event whose type this SDK version does not model,
// for example SUBAGENT_STARTED from an AG-UI 1.x remote or the deprecated
// THINKING_* events. It is passed through, never an error: the type and the
// complete JSON object are kept.
//
// It implements events.Event. Validate only checks that the type is set
// (the SDK's own validation rejects types it does not know); ToJSON returns
// Raw unchanged.
type UnknownEvent struct {
	*events.BaseEvent
	// Raw is the frame's JSON object, as received.
	Raw json.RawMessage
	// ThreadIDValue and RunIDValue are the top-level "threadId" and "runId"
	// strings of Raw, if present.
	ThreadIDValue string
	RunIDValue    string
}

// ThreadID returns the event's top-level "threadId", if any.
func (e *UnknownEvent) ThreadID() string { return e.ThreadIDValue }

// RunID returns the event's top-level "runId", if any.
func (e *UnknownEvent) RunID() string { return e.RunIDValue }

// Validate checks that the event has a type.
func (e *UnknownEvent) Validate() error {
	if e.BaseEvent == nil || e.EventType == "" {
		return fmt.Errorf("%w: no event type", ErrMalformedEvent)
	}
	return nil
}

// ToJSON returns the event's JSON as received.
func (e *UnknownEvent) ToJSON() ([]byte, error) { return bytes.Clone(e.Raw), nil }

// Fields decodes Raw into a map.
func (e *UnknownEvent) Fields() (map[string]any, error) {
	var m map[string]any
	err := json.Unmarshal(e.Raw, &m)
	return m, err
}

var _ events.Event = (*UnknownEvent)(nil)

// envelope is the part of every AG-UI event this package reads itself.
type envelope struct {
	Type      events.EventType `json:"type"`
	Timestamp any              `json:"timestamp"`
	ThreadID  any              `json:"threadId"`
	RunID     any              `json:"runId"`
}

// DecodeEvent decodes the data of one SSE frame into an AG-UI event using
// the official Go SDK's event types (events.EventFromJSON). Types the SDK
// does not model become an [*UnknownEvent]. data that is not a JSON object
// with a non-empty string "type", or whose fields have the wrong JSON types
// for a known event, is an error wrapping [ErrMalformedEvent]. data is not
// retained.
func DecodeEvent(data []byte) (events.Event, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedEvent, err)
	}
	if bytes.TrimSpace(data)[0] != '{' { // "null" decodes without error
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformedEvent)
	}
	if env.Type == "" {
		return nil, fmt.Errorf("%w: no \"type\"", ErrMalformedEvent)
	}
	if sdkDecoded[env.Type] {
		ev, err := events.EventFromJSON(data)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrMalformedEvent, env.Type, err)
		}
		return ev, nil
	}
	if mk, ok := sdkExtra[env.Type]; ok {
		ev := mk()
		if err := json.Unmarshal(data, ev); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrMalformedEvent, env.Type, err)
		}
		return ev, nil
	}
	u := &UnknownEvent{
		BaseEvent: &events.BaseEvent{EventType: env.Type},
		Raw:       bytes.Clone(data),
	}
	u.ThreadIDValue, _ = env.ThreadID.(string)
	u.RunIDValue, _ = env.RunID.(string)
	if ts, ok := env.Timestamp.(float64); ok && ts == math.Trunc(ts) && math.Abs(ts) < 1<<53 {
		ms := int64(ts)
		u.TimestampMs = &ms
	}
	return u, nil
}

// IsTerminal reports whether ev ends an AG-UI run: RUN_FINISHED or
// RUN_ERROR.
func IsTerminal(ev events.Event) bool {
	if ev == nil {
		return false
	}
	t := ev.Type()
	return t == events.EventTypeRunFinished || t == events.EventTypeRunError
}
