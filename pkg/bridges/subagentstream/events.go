package subagentstream

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// The standard AG-UI 1.x subagent lifecycle events, which the AG-UI Go SDK
// this module uses does not define yet.
const (
	EventSubagentStarted  events.EventType = "SUBAGENT_STARTED"
	EventSubagentFinished events.EventType = "SUBAGENT_FINISHED"
	EventSubagentError    events.EventType = "SUBAGENT_ERROR"
)

// Names of the CUSTOM events the mux itself adds.
const (
	// EventReplayGap marks a resumed stream whose cursor was older than the
	// replay buffer: value {from, to} gives the ids that are missing.
	EventReplayGap = "stream.replay_gap"
	// EventStreamDropped marks text deltas dropped for a slow subscriber:
	// value {dropped, delegationId}.
	EventStreamDropped = "stream.dropped"
)

// SubagentStartedEvent is SUBAGENT_STARTED (AG-UI 1.x).
type SubagentStartedEvent struct {
	*events.BaseEvent
	SubagentRunID    string `json:"subagentRunId"`
	Name             string `json:"name"`
	Description      string `json:"description,omitempty"`
	ParentToolCallID string `json:"parentToolCallId,omitempty"`
}

// SubagentFinishedEvent is SUBAGENT_FINISHED (AG-UI 1.x).
type SubagentFinishedEvent struct {
	*events.BaseEvent
	SubagentRunID string         `json:"subagentRunId"`
	Result        any            `json:"result,omitempty"`
	Outcome       map[string]any `json:"outcome,omitempty"`
}

// SubagentErrorEvent is SUBAGENT_ERROR (AG-UI 1.x).
type SubagentErrorEvent struct {
	*events.BaseEvent
	SubagentRunID string `json:"subagentRunId"`
	Message       string `json:"message"`
	Code          string `json:"code,omitempty"`
}

// AttributedCustomEvent is a CUSTOM event carrying the AG-UI 1.x
// subagentRunId attribution.
type AttributedCustomEvent struct {
	*events.BaseEvent
	SubagentRunID string `json:"subagentRunId,omitempty"`
	Name          string `json:"name"`
	Value         any    `json:"value"`
}

func base(t events.EventType, at time.Time) *events.BaseEvent {
	ms := at.UnixMilli()
	return &events.BaseEvent{EventType: t, TimestampMs: &ms}
}

var errNoSubagentRunID = errors.New("subagentRunId is required")

// Validate implements events.Event.
func (e *SubagentStartedEvent) Validate() error {
	if e.SubagentRunID == "" {
		return errNoSubagentRunID
	}
	if e.Name == "" {
		return errors.New("SUBAGENT_STARTED needs a name")
	}
	return nil
}

// ToJSON implements events.Event.
func (e *SubagentStartedEvent) ToJSON() ([]byte, error) { return json.Marshal(e) }

// Validate implements events.Event.
func (e *SubagentFinishedEvent) Validate() error {
	if e.SubagentRunID == "" {
		return errNoSubagentRunID
	}
	return nil
}

// ToJSON implements events.Event.
func (e *SubagentFinishedEvent) ToJSON() ([]byte, error) { return json.Marshal(e) }

// Validate implements events.Event.
func (e *SubagentErrorEvent) Validate() error {
	if e.SubagentRunID == "" {
		return errNoSubagentRunID
	}
	if e.Message == "" {
		return errors.New("SUBAGENT_ERROR needs a message")
	}
	return nil
}

// ToJSON implements events.Event.
func (e *SubagentErrorEvent) ToJSON() ([]byte, error) { return json.Marshal(e) }

// Validate implements events.Event.
func (e *AttributedCustomEvent) Validate() error {
	if e.Name == "" {
		return errors.New("CUSTOM needs a name")
	}
	if e.Value == nil {
		return errors.New("CUSTOM needs a value")
	}
	return nil
}

// ToJSON implements events.Event.
func (e *AttributedCustomEvent) ToJSON() ([]byte, error) { return json.Marshal(e) }

// Value returns the camelCase wire value of a delegation event
// (docs/design.md#subagent-wire-shape):
// runId, parentToolCallId, delegationId, agentKey, agentName, protocol,
// remoteTaskId, remoteContextId, messageId, and the kind's own field(s):
// delta | text | status | artifact{id,name,mimeType,uri,sizeBytes,redacted} |
// error{code,message,retryable,remoteStatus}. runID is the AG-UI runId of the
// parent stream. Raw payloads are included as "raw" only when includeRaw.
func Value(ev delegation.DelegationEvent, runID string, includeRaw bool) map[string]any {
	v := map[string]any{
		"runId":        runID,
		"delegationId": ev.DelegationID,
		"agentKey":     ev.AgentKey,
		"protocol":     ev.Protocol,
	}
	set := func(k, s string) {
		if s != "" {
			v[k] = s
		}
	}
	set("parentToolCallId", ev.ParentToolCallID)
	set("agentName", ev.AgentName)
	set("remoteTaskId", ev.RemoteTaskID)
	set("remoteContextId", ev.RemoteContextID)
	set("messageId", ev.RemoteMessageID)
	set("delta", ev.Delta)
	set("text", ev.Text)
	set("status", ev.Status)
	if a := ev.Artifact; a != nil {
		art := map[string]any{"id": a.ID, "name": a.Name, "sizeBytes": a.SizeBytes}
		if a.MimeType != "" {
			art["mimeType"] = a.MimeType
		}
		if a.URI != "" {
			art["uri"] = a.URI
		}
		if a.Error != nil {
			art["error"] = errorValue(a.Error)
		}
		if a.Redacted {
			art["redacted"] = true
		}
		v["artifact"] = art
	}
	if ev.Error != nil {
		v["error"] = errorValue(ev.Error)
	}
	if includeRaw && len(ev.Raw) > 0 {
		v["raw"] = ev.Raw
	}
	return v
}

func errorValue(e *delegation.DelegationError) map[string]any {
	m := map[string]any{"code": string(e.Code), "message": e.Message, "retryable": e.Retryable}
	if e.RemoteStatus != "" {
		m["remoteStatus"] = e.RemoteStatus
	}
	return m
}
