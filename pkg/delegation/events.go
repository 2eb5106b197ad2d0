package delegation

import (
	"slices"
	"time"
)

// DelegationEventKind is the lifecycle step a DelegationEvent reports. The
// values are the subagent.* event names of the UI wire shape
// (docs/design.md#delegation-events).
type DelegationEventKind string

// The ten delegation event kinds.
const (
	DelegationStarted         DelegationEventKind = "subagent.started"
	DelegationStatus          DelegationEventKind = "subagent.status"
	DelegationTextStart       DelegationEventKind = "subagent.text.start"
	DelegationTextDelta       DelegationEventKind = "subagent.text.delta"
	DelegationTextEnd         DelegationEventKind = "subagent.text.end"
	DelegationArtifactCreated DelegationEventKind = "subagent.artifact"
	DelegationInputRequired   DelegationEventKind = "subagent.input_required"
	DelegationFinished        DelegationEventKind = "subagent.finished"
	DelegationFailed          DelegationEventKind = "subagent.failed"
	DelegationCancelled       DelegationEventKind = "subagent.cancelled"
)

// Kinds lists the ten kinds in lifecycle order.
var Kinds = []DelegationEventKind{
	DelegationStarted, DelegationStatus, DelegationTextStart, DelegationTextDelta, DelegationTextEnd,
	DelegationArtifactCreated, DelegationInputRequired, DelegationFinished, DelegationFailed, DelegationCancelled,
}

// Terminal reports whether k ends a delegation. Every delegation has exactly
// one terminal event.
func (k DelegationEventKind) Terminal() bool {
	return k == DelegationFinished || k == DelegationFailed || k == DelegationCancelled
}

// Critical reports whether k is in the critical QoS lane
// (docs/design.md#backpressure): never
// dropped, never coalesced.
func (k DelegationEventKind) Critical() bool {
	return k == DelegationStarted || k == DelegationInputRequired || k.Terminal()
}

// Volatile reports whether k may be coalesced under backpressure.
func (k DelegationEventKind) Volatile() bool { return k == DelegationTextDelta }

// Known reports whether k is one of the ten kinds.
func (k DelegationEventKind) Known() bool {
	return slices.Contains(Kinds, k)
}

// DelegationEvent is one step of a remote delegation, published on the
// run's bus while the delegate_to_agent tool call is still blocked. It is
// UI-facing: it never carries secrets, and it never enters the parent model's
// context.
type DelegationEvent struct {
	RunID            string `json:"run_id"`
	ParentToolCallID string `json:"parent_tool_call_id,omitempty"`
	DelegationID     string `json:"delegation_id"`
	AgentKey         string `json:"agent_key"`
	AgentName        string `json:"agent_name,omitempty"`
	Protocol         string `json:"protocol"` // "a2a" or "agui"

	RemoteTaskID     string `json:"remote_task_id,omitempty"`
	RemoteContextID  string `json:"remote_context_id,omitempty"`
	RemoteMessageID  string `json:"remote_message_id,omitempty"`
	RemoteArtifactID string `json:"remote_artifact_id,omitempty"`

	Kind     DelegationEventKind `json:"kind"`
	Delta    string              `json:"delta,omitempty"`
	Text     string              `json:"text,omitempty"`
	Artifact *DelegationArtifact `json:"artifact,omitempty"`
	Status   string              `json:"status,omitempty"`
	Error    *DelegationError    `json:"error,omitempty"`
	Raw      map[string]any      `json:"raw,omitempty"`

	Time time.Time `json:"time"`
	// Seq is assigned by the bus: strictly increasing per run in publish
	// order. A subscriber sees it never go down: a coalesced delta carries
	// the Seq of its newest part, a stream.dropped marker the Seq of the
	// event it precedes.
	Seq uint64 `json:"seq"`
}

// DelegationArtifact describes a remote artifact by reference: its content
// is stored by the host and served at URI, never inlined into the stream.
type DelegationArtifact struct {
	ID        string           `json:"id"`
	Name      string           `json:"name"`
	MimeType  string           `json:"mime_type,omitempty"`
	URI       string           `json:"uri,omitempty"`
	SizeBytes int64            `json:"size_bytes"`
	Error     *DelegationError `json:"error,omitempty"` // e.g. artifact_too_large
	// Redacted is set when the stored content held a secret of the host
	// (the remote reflected a credential into it): every occurrence was
	// replaced by [REDACTED] before the content was stored, and SizeBytes
	// is the stored size (docs/design.md#secrets).
	Redacted bool `json:"redacted,omitempty"`
}

// DelegationError is the structured failure of a delegation
// (docs/design.md#failure-codes). Its Message is written for the parent
// model and the user: it never carries URLs, payloads or secrets.
type DelegationError struct {
	Code         FailureCode `json:"code"`
	Message      string      `json:"message"`
	Retryable    bool        `json:"retryable"`
	RemoteStatus string      `json:"remote_status,omitempty"`
}

// Error implements error.
func (e *DelegationError) Error() string {
	if e == nil {
		return "<nil>"
	}
	return string(e.Code) + ": " + e.Message
}

// FailureCode classifies a failed delegation (docs/design.md#failure-codes).
type FailureCode string

// The failure codes of a delegation: the remote's failure classes plus the
// configuration and cancellation codes the tool needs.
const (
	CodeAgentNotFound            FailureCode = "agent_not_found"
	CodeAgentUnavailable         FailureCode = "agent_unavailable"
	CodeCapabilityUnsupported    FailureCode = "capability_unsupported"
	CodeRemoteRejected           FailureCode = "remote_rejected"
	CodeAuthRequired             FailureCode = "auth_required"
	CodeRemoteFailed             FailureCode = "remote_failed"
	CodeRemoteTimeout            FailureCode = "remote_timeout"
	CodeStreamInterrupted        FailureCode = "stream_interrupted"
	CodeArtifactTooLarge         FailureCode = "artifact_too_large"
	CodeInputRequired            FailureCode = "input_required"
	CodeInputRequiredUnsupported FailureCode = "input_required_unsupported"
	CodeInvalidInput             FailureCode = "invalid_input"
	CodeConcurrencyLimit         FailureCode = "concurrency_limit"
	CodeCancelled                FailureCode = "cancelled"
	CodeCancelPending            FailureCode = "cancel_pending"
	CodeMissingRunContext        FailureCode = "missing_run_context"
	CodeParentRunEnded           FailureCode = "parent_run_ended"
)

// StatusInputReturned is the Status of the subagent.status event published
// after subagent.input_required when the question goes back to the parent
// model (input_required policy "return", docs/design.md#tool-contract): the
// tool call returned, the delegation is parked without a terminal event,
// and it continues (subagent.status input_provided, carrying
// Raw["continue_tool_call_id"] when the continuing call's id is known) or
// ends (timeout, run end) later. The UI answers nothing itself here.
const StatusInputReturned = "input_returned"

// StatusInputProvided is the Status of the subagent.status event published
// when an answer is sent to the remote (from the UI, or a continuing call).
const StatusInputProvided = "input_provided"

// StatusCorrelated is the Status of the subagent.status event published
// when a delegation's parent tool call becomes known after the delegation
// started (medium correlation, docs/design.md#correlation): the event carries
// ParentToolCallID so that the UI can regroup the delegation under that call.
const StatusCorrelated = "correlated"
