package delegator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/seed0634/agentadaptor/internal/sanitize"
	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// Request is one delegation, as the delegate_to_agent tool (or a host)
// asks for it. The run identity comes from the host (the per-run token),
// never from the model.
type Request struct {
	// RunID is the parent run (required).
	RunID string
	// SessionKey is the parent's session key (sticky contexts).
	SessionKey string
	// ParentToolCallID is the parent's tool call id when the request
	// carried one (strong correlation); "" falls back to call order.
	ParentToolCallID string
	// Agent is the registry key.
	Agent string
	// Objective is the bounded task (required).
	Objective string
	// Input is the optional prompt, context and artifact references.
	Input TaskInput
	// Constraints are the model's optional limits, clamped to the policy.
	Constraints registry.Constraints
	// Continue, when set, names a delegation of the same run that returned
	// input_required and is parked (policy "return"): Objective is the
	// answer, sent to the same remote task and context, and the call
	// follows that delegation (same delegation id) to its end or its next
	// question. Input and Constraints must then be empty
	// (docs/design.md#tool-contract).
	Continue string
	// OnEvent, if set, is called synchronously with every event published
	// for this delegation (e.g. to send MCP progress). It must not block.
	OnEvent func(delegation.DelegationEvent)
}

// TaskInput is the "input" object of the tool (docs/design.md#tool-contract).
type TaskInput struct {
	Prompt    string          `json:"prompt,omitempty"`
	Context   string          `json:"context,omitempty"`
	Artifacts []InputArtifact `json:"artifacts,omitempty"`
}

// InputArtifact is a reference the model passes along. host:// artifact
// URIs of the same run are sent with their content; other URIs are passed
// to the remote as references only (the host never fetches them).
type InputArtifact struct {
	Name string `json:"name"`
	URI  string `json:"uri"`
}

// Input bounds (tool input validation).
const (
	MaxObjectiveBytes = 16 << 10
	MaxPromptBytes    = 64 << 10
	MaxInputArtifacts = 32
	maxPromptBytes    = MaxPromptBytes
)

// ValidateRequest checks the model-provided fields of r: an agent key, an
// objective, and the size bounds. It returns an invalid_input failure.
func ValidateRequest(r *Request) *delegation.DelegationError {
	bad := func(format string, args ...any) *delegation.DelegationError {
		return &delegation.DelegationError{Code: delegation.CodeInvalidInput, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case strings.TrimSpace(r.Agent) == "":
		return bad("agent is required")
	case len(r.Agent) > 128:
		return bad("agent must be a registry key")
	case strings.TrimSpace(r.Objective) == "" && r.Continue != "":
		return bad("objective is required: with continue it is the answer to the remote agent's question")
	case strings.TrimSpace(r.Objective) == "":
		return bad("objective is required")
	case len(r.Objective) > MaxObjectiveBytes:
		return bad("objective is longer than %d bytes", MaxObjectiveBytes)
	case len(r.Input.Prompt) > MaxPromptBytes || len(r.Input.Context) > MaxPromptBytes:
		return bad("input.prompt and input.context must be at most %d bytes", MaxPromptBytes)
	case len(r.Input.Artifacts) > MaxInputArtifacts:
		return bad("at most %d input artifacts", MaxInputArtifacts)
	case r.Constraints.TimeoutSeconds < 0 || r.Constraints.MaxArtifacts < 0:
		return bad("constraints must not be negative")
	case r.Continue != "" && (len(r.Continue) > 64 || !strings.HasPrefix(r.Continue, "del-")):
		return bad("continue.delegation_id must be the delegation_id of an input_required result")
	case r.Continue != "" && (r.Input.Prompt != "" || r.Input.Context != "" || len(r.Input.Artifacts) > 0 || r.Constraints != (registry.Constraints{})):
		return bad("with continue, pass the answer as objective only (no input, no constraints)")
	}
	for i, a := range r.Input.Artifacts {
		if a.URI == "" || len(a.URI) > 2048 || len(a.Name) > 256 {
			return bad("input.artifacts[%d] needs a uri (at most 2048 bytes) and a name (at most 256)", i)
		}
	}
	return nil
}

func newDelegationID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "del-" + hex.EncodeToString(b[:])
}

// Delegate runs one delegation to completion and returns its structured
// result. It publishes subagent.started first and exactly one terminal
// event on the bus while it runs; it never panics and never returns a
// result without Status. Cancelling ctx cancels the remote task (bounded by
// Config.CancelTimeout; a cleanup watcher keeps trying when the remote does
// not confirm).
//
// With the input_required policy "return" a delegation whose remote asks
// for input returns at once (status input_required, the question, a
// continue reference) without a terminal event; a later call with
// Request.Continue continues it (docs/design.md#tool-contract).
func (d *Delegator) Delegate(ctx context.Context, req Request) (res delegation.Result) {
	id := req.Continue
	if id == "" {
		id = newDelegationID()
	}
	if o := d.cfg.Observer; o != nil {
		var end func(delegation.Result)
		ctx, end = o.DelegationStarted(ctx, d.observed(req, id))
		defer func() { end(res) }()
	}
	if req.Continue != "" {
		return d.resume(ctx, req)
	}
	a := d.newActive(id, req)
	agent := sanitize.Truncate(req.Agent, 128)
	if req.RunID == "" {
		return delegation.FailedResult(a.id, agent, delegation.ProtocolA2A, &delegation.DelegationError{Code: delegation.CodeMissingRunContext,
			Message: "This tool call is not bound to a parent run (no valid run token): host configuration error."})
	}
	if derr := ValidateRequest(&req); derr != nil {
		return delegation.FailedResult(a.id, agent, delegation.ProtocolA2A, derr)
	}
	a.spec, a.known = d.reg.Spec(req.Agent)
	if !a.known {
		a.spec = registry.RemoteAgentSpec{Key: sanitize.Line(req.Agent, 64), Protocol: delegation.ProtocolA2A}
	}
	a.log = d.log.With("delegation_id", a.id, "run_id", req.RunID, "agent", a.spec.Key)
	if d.cfg.Observer != nil {
		a.log = slog.New(contextLog{a.log.Handler(), ctx})
	}
	if !d.track(a) {
		return delegation.FailedResult(a.id, agent, a.spec.Protocol, &delegation.DelegationError{Code: delegation.CodeAgentUnavailable, Retryable: true,
			Message: "The delegation service is shutting down."})
	}
	d.corr.Register(req.RunID, a.id, req.ParentToolCallID)
	a.eff = a.spec.Policy.Clamp(req.Constraints)
	a.life.tr = remote.NewTranscript(a.transcriptConfig())
	a.life.followCall(ctx, a.life.startTask)
	return a.life.outcome()
}

// observed describes a Delegate call to the Observer: registry facts only.
func (d *Delegator) observed(req Request, id string) ObservedDelegation {
	o := ObservedDelegation{RunID: req.RunID, DelegationID: id, Continue: req.Continue != ""}
	if spec, ok := d.reg.Spec(req.Agent); ok {
		o.Agent, o.Protocol = spec.Key, spec.Protocol
	}
	return o
}

// contextLog hands its context to the handler of every log line, so that a
// delegation's lines carry what the Observer put there (a handler that
// reads trace ids from the context prints them).
type contextLog struct {
	slog.Handler
	ctx context.Context
}

func (h contextLog) Handle(_ context.Context, r slog.Record) error { return h.Handler.Handle(h.ctx, r) }
func (h contextLog) WithAttrs(as []slog.Attr) slog.Handler {
	return contextLog{h.Handler.WithAttrs(as), h.ctx}
}
func (h contextLog) WithGroup(name string) slog.Handler {
	return contextLog{h.Handler.WithGroup(name), h.ctx}
}

// resume continues a parked delegation with the parent's answer
// (Request.Continue): the answer goes to the same remote task and context,
// and the call follows the delegation to its end or its next question.
func (d *Delegator) resume(ctx context.Context, req Request) delegation.Result {
	agent := sanitize.Truncate(req.Agent, 128)
	if req.RunID == "" {
		return delegation.FailedResult("", agent, delegation.ProtocolA2A, &delegation.DelegationError{Code: delegation.CodeMissingRunContext,
			Message: "This tool call is not bound to a parent run (no valid run token): host configuration error."})
	}
	if derr := ValidateRequest(&req); derr != nil {
		return delegation.FailedResult("", agent, delegation.ProtocolA2A, derr)
	}
	a, derr := d.unpark(req)
	if derr != nil {
		return delegation.FailedResult("", agent, delegation.ProtocolA2A, derr)
	}
	a.pub.setOnEvent(req.OnEvent)
	a.log.Info("delegation continued by the parent", "parent_tool_call_id", req.ParentToolCallID)
	l := &a.life
	l.followCall(ctx, func(ctx context.Context) error {
		ev := delegation.DelegationEvent{Kind: delegation.DelegationStatus, Status: delegation.StatusInputProvided, Text: "The parent agent's answer was sent to the remote agent."}
		if req.ParentToolCallID != "" {
			ev.Raw = map[string]any{"continue_tool_call_id": req.ParentToolCallID}
		}
		l.publish(ev)
		return l.recoverCut(ctx, l.task.Answer(ctx, req.Objective))
	})
	return l.outcome()
}

// FailureOf maps a remote-agent client error (pkg/clients/clienterr) to
// the failure the parent model sees. The message is generic: remote URLs
// and payloads stay in the host log.
func FailureOf(err error, remoteStatus string) *delegation.DelegationError {
	e := &delegation.DelegationError{RemoteStatus: remoteStatus}
	var ce *clienterr.Error
	protocol := ""
	if errors.As(err, &ce) {
		protocol = ce.Protocol
	}
	switch clienterr.KindOf(err) {
	case clienterr.KindUnavailable:
		e.Code, e.Retryable, e.Message = delegation.CodeAgentUnavailable, true, "The remote agent could not be reached."
	case clienterr.KindUnauthorized:
		e.Code, e.Message = delegation.CodeAuthRequired, "The remote agent refused the host's credentials (401/403): the agent's auth_ref or auth in the host config must change."
	case clienterr.KindRejected:
		e.Code, e.Message = delegation.CodeRemoteRejected, "The remote agent rejected the request."
	case clienterr.KindTimeout:
		e.Code, e.Retryable, e.Message = delegation.CodeRemoteTimeout, true, "The remote agent did not answer in time."
	case clienterr.KindInterrupted:
		e.Code, e.Retryable, e.Message = delegation.CodeStreamInterrupted, true, "The remote stream was interrupted and the task could not be recovered."
	case clienterr.KindNotFound:
		if protocol == delegation.ProtocolAGUI {
			// AG-UI has no tasks to look up: a 404 is a missing endpoint.
			e.Code, e.Message = delegation.CodeAgentUnavailable, "There is no agent endpoint at the configured URL."
		} else {
			e.Code, e.Message = delegation.CodeRemoteFailed, "The remote agent does not know the task."
		}
	case clienterr.KindProtocol:
		e.Code, e.Message = delegation.CodeRemoteFailed, "The remote agent sent a malformed or oversized payload."
	default:
		e.Code, e.Message = delegation.CodeRemoteFailed, "The delegation failed."
	}
	return e
}
