package delegator

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/seed0634/agentadaptor/internal/sanitize"
	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"

	"github.com/seed0634/agentadaptor/pkg/credentials"
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

// inflight is one running delegation. Its fields are owned by the
// goroutine running its current tool call (Delegate; after a park, the
// call that continues it, or the park watcher that ends it: ownership
// passes under Delegator.mu); the cleanup watcher only reads task and log
// after the owner is done with them. waiting, input, parked and resumed
// are guarded by Delegator.mu; req.OnEvent by pubMu.
type inflight struct {
	d     *Delegator
	id    string
	req   Request
	run   *runState // the live parent run, if the run was begun
	known bool      // the agent is in the registry
	spec  registry.RemoteAgentSpec
	eff   registry.Effective
	tr    *remote.Transcript
	task  remote.Task
	log   *slog.Logger
	start time.Time

	fingerprint string
	mode        string
	auth        remote.Info // AuthScheme and DeclaredAuth of the agent
	begun       bool
	ctxLost     bool // its sticky context could not be read (told after started)
	recovered   int
	cancelOK    *bool

	input   chan string
	waiting bool

	// Parking (input_required policy "return"): park is set by the owner
	// when the remote asked and the question goes back to the parent;
	// parked and resumed are the parked state (Delegator.mu).
	park        bool
	parked      bool
	resumed     chan struct{}
	releaseSlot func()

	pubMu sync.Mutex
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
	f := &inflight{d: d, id: id, req: req, start: time.Now(), input: make(chan string, 1)}
	agent := sanitize.Truncate(req.Agent, 128)
	if req.RunID == "" {
		return delegation.FailedResult(f.id, agent, delegation.ProtocolA2A, &delegation.DelegationError{Code: delegation.CodeMissingRunContext,
			Message: "This tool call is not bound to a parent run (no valid run token): host configuration error."})
	}
	if derr := ValidateRequest(&req); derr != nil {
		return delegation.FailedResult(f.id, agent, delegation.ProtocolA2A, derr)
	}
	f.spec, f.known = d.reg.Spec(req.Agent)
	if !f.known {
		f.spec = registry.RemoteAgentSpec{Key: sanitize.Line(req.Agent, 64), Protocol: delegation.ProtocolA2A}
	}
	f.log = d.log.With("delegation_id", f.id, "run_id", req.RunID, "agent", f.spec.Key)
	if d.cfg.Observer != nil {
		f.log = slog.New(contextLog{f.log.Handler(), ctx})
	}
	if !d.track(f) {
		return delegation.FailedResult(f.id, agent, f.spec.Protocol, &delegation.DelegationError{Code: delegation.CodeAgentUnavailable, Retryable: true,
			Message: "The delegation service is shutting down."})
	}
	d.corr.Register(req.RunID, f.id, req.ParentToolCallID)
	f.eff = f.spec.Policy.Clamp(req.Constraints)
	f.tr = remote.NewTranscript(f.transcriptConfig())
	f.segment(ctx, f.begin1)
	return f.outcome()
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
	f, derr := d.unpark(req)
	if derr != nil {
		return delegation.FailedResult("", agent, delegation.ProtocolA2A, derr)
	}
	f.setOnEvent(req.OnEvent)
	f.log.Info("delegation continued by the parent", "parent_tool_call_id", req.ParentToolCallID)
	f.segment(ctx, func(ctx context.Context) error {
		ev := delegation.DelegationEvent{Kind: delegation.DelegationStatus, Status: delegation.StatusInputProvided, Text: "The parent agent's answer was sent to the remote agent."}
		if req.ParentToolCallID != "" {
			ev.Raw = map[string]any{"continue_tool_call_id": req.ParentToolCallID}
		}
		f.publish(ev)
		return f.recoverCut(ctx, f.task.Answer(ctx, req.Objective))
	})
	return f.outcome()
}

// transcriptConfig applies the agent's policy to the transcript.
func (f *inflight) transcriptConfig() remote.TranscriptConfig {
	p := f.spec.Policy
	cfg := remote.TranscriptConfig{AllowInput: p.InputMode() != registry.InputRequiredFail, MaxArtifactBytes: p.MaxArtifactBytes, MaxArtifacts: f.eff.MaxArtifacts, Secrets: f.d.reg.Secrets()}
	if p.AllowRemoteArtifacts {
		store := f.d.artifacts
		cfg.Put = func(meta artifact.Meta, content []byte) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := store.Put(ctx, artifact.Stored{RunID: f.req.RunID, DelegationID: f.id, ID: meta.ID, Name: meta.Name, MimeType: meta.MimeType, Content: content})
			if err != nil {
				return "", err
			}
			return artifact.URI(f.id, meta.ID), nil
		}
	}
	return cfg
}

// segment runs one tool call's share of the delegation: body (the start,
// or a continuing answer), then the task until it ends or parks. Its
// context ends with the tool call, the parent run (CancelRun, EndRun), the
// delegator (Close) or the delegation's timeout, whichever comes first.
// body returns the error to handle (a body that finished the delegation
// itself returns nil).
func (f *inflight) segment(parent context.Context, body func(ctx context.Context) error) {
	d := f.d
	dctx, dcancel := context.WithCancelCause(context.WithoutCancel(parent))
	defer dcancel(nil)
	stop1 := context.AfterFunc(parent, func() { dcancel(errParentCancel) })
	defer stop1()
	if f.run != nil {
		stop2 := context.AfterFunc(f.run.ctx, func() { dcancel(context.Cause(f.run.ctx)) })
		defer stop2()
	}
	stop3 := context.AfterFunc(d.ctx, func() { dcancel(errClosed) })
	defer stop3()
	ctx, cancel := context.WithTimeoutCause(dctx, f.eff.Timeout, errHostTimeout)
	defer cancel()
	f.drive(ctx, body(ctx))
}

// begin1 is the first segment's body: connect and start the remote task.
func (f *inflight) begin1(ctx context.Context) error {
	d := f.d
	if !f.known {
		f.finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeAgentNotFound,
			Message: fmt.Sprintf("No remote agent %q is registered. Available agents: %s.", sanitize.Truncate(f.req.Agent, 64), strings.Join(d.reg.Keys(), ", "))})
		return nil
	}
	release, derr := d.reg.Acquire(f.spec.Key, f.req.RunID)
	if derr != nil {
		f.finish(delegation.DelegationFailed, derr)
		return nil
	}
	f.releaseSlot = release

	agent, cerr := d.reg.Connect(ctx, f.spec.Key)
	if cerr != nil {
		if ctx.Err() != nil {
			f.stopped(ctx)
			return nil
		}
		f.log.Warn("remote agent unavailable", "error", cerr.Error())
		f.finish(delegation.DelegationFailed, cerr.Failure)
		return nil
	}
	info := agent.Info()
	f.fingerprint = info.Fingerprint
	f.auth = remote.Info{AuthScheme: info.AuthScheme, DeclaredAuth: info.DeclaredAuth}
	f.mode = "polling"
	if info.Streaming && f.eff.Stream {
		f.mode = "streaming"
	}
	if !info.Streaming && f.spec.Policy.RequireStreaming {
		f.finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeCapabilityUnsupported,
			Message: fmt.Sprintf("Agent %q does not support streaming, which host policy requires.", f.spec.Key)})
		return nil
	}
	contextID, lost := d.stickyContext(f.req, f.spec)
	f.ctxLost = lost
	f.task = agent.NewTask(remote.TaskSpec{DelegationID: f.id, Text: f.taskText(), Artifacts: f.inputArtifacts(),
		ContextID: contextID, Stream: f.eff.Stream, Transcript: f.tr, Emit: f.emit, Log: f.log})
	f.mode = f.task.Mode()
	return f.recoverCut(ctx, f.task.Start(ctx))
}

// drive follows the task after err (the outcome of its last call) until
// the delegation ends, or parks for the parent's answer.
func (f *inflight) drive(ctx context.Context, err error) {
	for {
		switch {
		case f.tr.Terminal() != "":
			return
		case ctx.Err() != nil:
			f.stopped(ctx)
			return
		case err != nil:
			f.fail(err)
			return
		}
		// The task is interrupted: input-required or auth-required.
		answer, ok := f.interrupted(ctx)
		if !ok {
			return
		}
		err = f.recoverCut(ctx, f.task.Answer(ctx, answer))
	}
}

// outcome ends the tool call: the parked result when the delegation waits
// for the parent's answer, else the final result (and the delegation ends).
func (f *inflight) outcome() delegation.Result {
	if f.park {
		f.setOnEvent(nil) // the call's progress ends with it
		res := f.parkedResult()
		f.d.park(f)
		return res
	}
	return f.end()
}

// end releases what the delegation held and returns its final result.
func (f *inflight) end() delegation.Result {
	if f.task != nil {
		f.d.rememberContext(f.req, f.spec, f.task.ContextID())
	}
	if f.releaseSlot != nil {
		f.releaseSlot()
	}
	res := f.result()
	f.d.untrack(f)
	return res
}

// setOnEvent replaces the per-call event hook (nil: none).
func (f *inflight) setOnEvent(fn func(delegation.DelegationEvent)) {
	f.pubMu.Lock()
	defer f.pubMu.Unlock()
	f.req.OnEvent = fn
}

// recoverCut re-attaches once to a task whose stream was cut, when the
// protocol can.
func (f *inflight) recoverCut(ctx context.Context, err error) error {
	if err == nil || f.tr.Terminal() != "" || ctx.Err() != nil || !f.task.CanRecover(err) {
		return err
	}
	f.recovered++
	if o := f.d.cfg.Observer; o != nil {
		o.RemoteError(f.spec.Key, delegation.CodeStreamInterrupted)
	}
	f.log.Warn("delegation stream interrupted; recovering", "remote_task_id", f.tr.TaskID(), "error", f.d.reg.Secrets().Redact(sanitize.Truncate(err.Error(), 500)))
	f.publish(delegation.DelegationEvent{Kind: delegation.DelegationStatus, Status: string(delegation.CodeStreamInterrupted), Text: "The remote stream was interrupted; reconnecting."})
	return f.task.Recover(ctx)
}

// interrupted handles input-required / auth-required. It returns the
// answer to send, or ok=false after finishing the delegation (or, with
// the input_required policy "return", marking it to park).
func (f *inflight) interrupted(ctx context.Context) (string, bool) {
	question := f.tr.Question()
	label := f.tr.State().Label()
	if f.tr.State() != remote.StateInputRequired {
		f.settleCancel(f.cancelRemote(ctx, "auth_required"))
		f.finish(delegation.DelegationFailed, f.authRequired(label, question))
		return "", false
	}
	switch f.spec.Policy.InputMode() {
	case registry.InputRequiredFail:
		f.settleCancel(f.cancelRemote(ctx, "input_required_unsupported"))
		f.finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeInputRequiredUnsupported, RemoteStatus: label,
			Message: "The remote agent asked for input, which host policy does not allow" + remote.Suffix(question)})
		return "", false
	case registry.InputRequiredReturn:
		// The question goes back to the parent model; the delegation
		// parks without a terminal event (outcome).
		f.park = true
		f.publish(delegation.DelegationEvent{Kind: delegation.DelegationStatus, Status: delegation.StatusInputReturned,
			Text: "The question was returned to the parent agent, which may answer it by continuing this delegation."})
		return "", false
	}
	f.d.awaitInput(f)
	var answer string
	select {
	case answer = <-f.input:
	case <-ctx.Done():
	}
	f.d.setWaiting(f, false)
	if ctx.Err() != nil {
		if context.Cause(ctx) == errHostTimeout {
			f.inputTimeout(ctx)
			return "", false
		}
		f.stopped(ctx)
		return "", false
	}
	f.publish(delegation.DelegationEvent{Kind: delegation.DelegationStatus, Status: delegation.StatusInputProvided, Text: "Input sent to the remote agent."})
	return answer, true
}

// authRequired is the failure of a task that asked for authentication the
// host cannot provide (A2A auth-required): it names the scheme the host
// authenticates with and the schemes the agent declares
// (docs/design.md#failure-codes).
func (f *inflight) authRequired(label, question string) *delegation.DelegationError {
	how := map[string]string{"": "no credential", string(credentials.SchemeBearer): "a bearer token (scheme bearer)",
		string(credentials.SchemeAPIKey): "an API key (scheme api_key)", string(credentials.SchemeOAuth2): "OAuth2 client credentials (scheme oauth2)"}[f.auth.AuthScheme]
	if how == "" {
		how = "scheme " + f.auth.AuthScheme
	}
	declared := ""
	if len(f.auth.DeclaredAuth) > 0 {
		declared = "; its agent card declares: " + strings.Join(f.auth.DeclaredAuth, ", ")
	}
	return &delegation.DelegationError{Code: delegation.CodeAuthRequired, RemoteStatus: label, Message: fmt.Sprintf(
		"The remote agent requires authentication the host cannot provide (task state auth-required)%s The host authenticates to agent %q with %s%s. "+
			"The host's auth configuration for this agent must change; retrying will not help.", remote.Suffix(question), f.spec.Key, how, declared)}
}

// inputTimeout ends a delegation whose question was not answered in time:
// the remote task is cancelled (reason input_timeout).
func (f *inflight) inputTimeout(ctx context.Context) {
	f.settleCancel(f.cancelRemote(ctx, "input_timeout"))
	f.finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeInputRequired, RemoteStatus: f.tr.State().Label(),
		Message: "The remote agent needs input that was not provided before the timeout" + remote.Suffix(f.tr.Question())})
}

// stopped ends a delegation whose context ended: host timeout or cancellation.
func (f *inflight) stopped(ctx context.Context) {
	cause := context.Cause(ctx)
	reason := map[error]string{errHostTimeout: "host_timeout", errRunEnded: "parent_run_ended", errClosed: "host_shutdown"}[cause]
	if reason == "" {
		reason = "parent_cancelled"
	}
	confirmed := true
	if f.task != nil && !f.tr.State().Terminal() {
		out := f.cancelRemote(ctx, reason)
		f.settleCancel(out)
		confirmed = out == remote.CancelConfirmed || out == remote.CancelNotNeeded
	}
	label := f.tr.State().Label()
	if cause == errHostTimeout {
		msg := fmt.Sprintf("Remote task did not finish before timeout (%s).", f.eff.Timeout)
		if !confirmed {
			msg += " Its cancellation is not confirmed yet; the host keeps trying."
		}
		f.finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeRemoteTimeout, Retryable: true, RemoteStatus: label, Message: msg})
		return
	}
	why := map[string]string{"parent_run_ended": "the parent run ended", "host_shutdown": "the host is shutting down"}[reason]
	if why == "" {
		why = "the parent cancelled the tool call"
	}
	if !confirmed {
		f.finish(delegation.DelegationCancelled, &delegation.DelegationError{Code: delegation.CodeCancelPending, RemoteStatus: label,
			Message: "Delegation cancelled because " + why + "; the remote agent has not confirmed the cancellation yet and the host keeps trying."})
		return
	}
	f.finish(delegation.DelegationCancelled, &delegation.DelegationError{Code: delegation.CodeCancelled, RemoteStatus: label, Message: "Delegation cancelled because " + why + "."})
}

// cancelRemote asks the remote to cancel the task, bounded by
// Config.CancelTimeout (and not by ctx, which has usually ended already).
func (f *inflight) cancelRemote(ctx context.Context, reason string) remote.CancelOutcome {
	if f.task == nil {
		return remote.CancelNotNeeded
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.d.cfg.CancelTimeout)
	defer cancel()
	if out, gated := f.d.cancelGate(cctx, f.req.RunID, f.id); gated {
		return out
	}
	return f.task.Cancel(cctx, map[string]any{"reason": reason, "delegation_id": f.id, "run_id": f.req.RunID, "agent": f.spec.Key, "requested_by": "agentadaptor"})
}

// settleCancel records a cancellation's outcome; an unconfirmed one is
// announced (cancel_pending) and handed to a cleanup watcher.
func (f *inflight) settleCancel(out remote.CancelOutcome) {
	switch out {
	case remote.CancelNotNeeded:
	case remote.CancelConfirmed:
		ok := true
		f.cancelOK = &ok
	case remote.CancelUnaddressable:
		// The request that creates the task went out, but its response
		// never named the task: the remote may be running it, and it cannot
		// be cancelled by id. Do not claim a confirmed cancellation.
		ok := false
		f.cancelOK = &ok
	case remote.CancelPending:
		ok := false
		f.cancelOK = &ok
		f.publish(delegation.DelegationEvent{Kind: delegation.DelegationStatus, Status: string(delegation.CodeCancelPending), Text: "Cancellation requested; waiting for the remote agent to confirm."})
		f.d.startWatcher(f)
	}
}

// fail finishes the delegation for a client error.
func (f *inflight) fail(err error) {
	f.log.Warn("delegation failed", "remote_task_id", f.tr.TaskID(), "error", f.d.reg.Secrets().Redact(sanitize.Truncate(err.Error(), 500)))
	derr := FailureOf(err, f.tr.State().Label())
	if f.tr.TaskID() != "" && !f.tr.State().Terminal() {
		f.settleCancel(f.cancelRemote(context.Background(), string(derr.Code)))
	}
	f.finish(delegation.DelegationFailed, derr)
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

// begin records the delegation and publishes subagent.started; raw adds
// the protocol's own fields.
func (f *inflight) begin(raw map[string]any) {
	f.begun = true
	d := f.d
	d.audit.Begin(audit.Record{DelegationID: f.id, RunID: f.req.RunID, ParentToolCallID: d.corr.ParentOf(f.id), AgentKey: f.spec.Key,
		AgentName: f.spec.DisplayName, Protocol: f.spec.Protocol, Tenant: f.spec.Tenant, RemoteTaskID: f.tr.TaskID(), RemoteContextID: f.tr.ContextID(),
		CardFingerprint: f.fingerprint, Mode: f.mode, Objective: f.objective(), Status: audit.StatusRunning, StartedAt: f.start})
	started := map[string]any{"correlation": string(d.corr.Level(f.id))}
	if f.fingerprint != "" {
		started["card_fingerprint"] = f.fingerprint
	}
	if f.mode != "" {
		started["mode"] = f.mode
	}
	maps.Copy(started, raw)
	f.send(delegation.DelegationEvent{Kind: delegation.DelegationStarted, Status: "starting", Raw: started})
	f.log.Info("delegation started", "mode", f.mode)
}

// objective is the objective as the audit keeps it: bounded, secrets scrubbed.
func (f *inflight) objective() string {
	return f.d.reg.Secrets().Redact(sanitize.Truncate(f.req.Objective, 2000))
}

// finish publishes the terminal event (once).
func (f *inflight) finish(kind delegation.DelegationEventKind, derr *delegation.DelegationError) {
	f.emit(f.tr.Finish(kind, derr)...)
}

// emit publishes events of the task, in order: the first is always a
// subagent.started (the protocol's, or one synthesized here).
func (f *inflight) emit(evs ...delegation.DelegationEvent) {
	for _, ev := range evs {
		f.publish(ev)
	}
}

// publish sends ev, after the started event.
func (f *inflight) publish(ev delegation.DelegationEvent) {
	f.pubMu.Lock()
	defer f.pubMu.Unlock()
	if ev.Kind == delegation.DelegationStarted {
		if !f.begun {
			f.begin(ev.Raw)
			f.noteContextLost()
		}
		return
	}
	if !f.begun {
		f.begin(nil)
		f.noteContextLost()
	}
	f.send(ev)
}

// noteContextLost tells the user, right after subagent.started, that the
// delegation's sticky context could not be read (under pubMu).
func (f *inflight) noteContextLost() {
	if f.ctxLost {
		f.ctxLost = false
		f.send(delegation.DelegationEvent{Kind: delegation.DelegationStatus, Status: StatusContextUnavailable,
			Text: "The remote context this conversation used could not be read in time; this delegation starts a new one."})
	}
}

// send fills the common fields, scrubs known secrets from every field, and
// sends ev to the bus, the audit log and the OnEvent hook.
func (f *inflight) send(ev delegation.DelegationEvent) {
	d := f.d
	red := d.reg.Secrets().Redact
	ev.RunID = f.req.RunID
	ev.DelegationID = f.id
	ev.ParentToolCallID = d.corr.ParentOf(f.id)
	ev.AgentKey = f.spec.Key
	ev.AgentName = f.spec.DisplayName
	ev.Protocol = f.spec.Protocol
	ev.RemoteTaskID = f.tr.TaskID()
	ev.RemoteContextID = f.tr.ContextID()
	ev.RemoteMessageID = red(ev.RemoteMessageID)
	ev.RemoteArtifactID = red(ev.RemoteArtifactID)
	ev.Raw = redactRaw(red, ev.Raw)
	ev.Time = time.Now()
	ev.Delta = red(ev.Delta)
	ev.Text = red(ev.Text)
	ev.Status = red(ev.Status)
	if ev.Error != nil {
		e := *ev.Error
		e.Message = red(e.Message)
		ev.Error = &e
	}
	if ev.Artifact != nil {
		a := *ev.Artifact
		a.ID, a.Name, a.URI = red(a.ID), red(a.Name), red(a.URI)
		if a.Error != nil {
			e := *a.Error
			e.Message = red(e.Message)
			a.Error = &e
		}
		ev.Artifact = &a
	}
	if ev.Kind == delegation.DelegationInputRequired && f.spec.Policy.InputMode() == registry.InputRequiredSurface {
		// Accept answers from the moment the UI can see the question (a
		// question returned to the parent is answered by the parent only).
		d.setWaiting(f, true)
	}
	d.bus.Publish(ev)
	if level := f.spec.Policy.AuditLevel; level != registry.AuditMinimal || ev.Kind.Critical() {
		ae := audit.Event{Kind: ev.Kind, Time: ev.Time, Status: ev.Status, RemoteTaskID: ev.RemoteTaskID, RemoteMessageID: ev.RemoteMessageID,
			RemoteArtifactID: ev.RemoteArtifactID, Artifact: ev.Artifact, Error: ev.Error}
		if level == registry.AuditFull {
			ae.Text = sanitize.Truncate(ev.Delta+ev.Text, 2000)
		}
		if ev.Kind != delegation.DelegationTextDelta || level == registry.AuditFull {
			d.audit.Event(f.id, ae)
		}
	}
	if f.req.OnEvent != nil {
		f.req.OnEvent(ev)
	}
}

// redactRaw removes known secrets from a Raw payload (remote payloads are
// preserved there, so a remote echoing the credential must not leak it).
func redactRaw(red func(string) string, raw map[string]any) map[string]any {
	if raw == nil {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return map[string]any{"unencodable": true}
	}
	if s := red(string(b)); s != string(b) {
		var out map[string]any
		if json.Unmarshal([]byte(s), &out) == nil {
			return out
		}
		return map[string]any{"redacted": true}
	}
	return raw
}

// snapshot is the tool result as the transcript stands, without status.
func (f *inflight) snapshot() delegation.Result {
	red := f.d.reg.Secrets().Redact
	tr := f.tr
	res := delegation.Result{DelegationID: f.id, Agent: f.spec.Key, RemoteProtocol: f.spec.Protocol, RemoteTaskID: tr.TaskID(), RemoteContextID: tr.ContextID(),
		Summary: red(tr.Summary()), Artifacts: tr.Artifacts(), Messages: tr.Messages()}
	for i := range res.Messages {
		res.Messages[i].Text = red(res.Messages[i].Text)
	}
	for i := range res.Artifacts {
		a := &res.Artifacts[i]
		a.ID, a.Name, a.URI = red(a.ID), red(a.Name), red(a.URI)
	}
	if tr.TaskID() != "" {
		res.RawTask = &delegation.RawTask{Provider: f.spec.Protocol, TaskID: tr.TaskID()}
		if r := tr.RemoteResult(); r != nil {
			res.RawTask.SessionID = red(r.SessionID)
			if r.InputTokens > 0 || r.OutputTokens > 0 {
				res.RawTask.Usage = &delegation.RemoteUsage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}
			}
		}
	}
	return res
}

// parkedResult is the result of a call that returns the remote's question
// to the parent (input_required policy "return"): status input_required,
// the question, and the reference to continue with.
func (f *inflight) parkedResult() delegation.Result {
	red := f.d.reg.Secrets().Redact
	res := f.snapshot()
	question := red(f.tr.Question())
	res.Status = delegation.StatusInputRequired
	res.Question = question
	res.Continue = &delegation.ContinueRef{DelegationID: f.id}
	res.Error = &delegation.DelegationError{Code: delegation.CodeInputRequired, Retryable: true, RemoteStatus: f.tr.State().Label(),
		Message: fmt.Sprintf("The remote agent needs more input%s Answer it (ask your user if you cannot), then call the tool again with "+
			`continue: {"delegation_id": %q} and the answer as objective, within %s; the remote task waits until then.`,
			remote.Suffix(question), f.id, f.spec.Policy.MaxTimeout)}
	f.log.Info("delegation parked: the question was returned to the parent", "remote_task_id", f.tr.TaskID())
	return res
}

// result builds the final tool result, completes the audit record and
// logs the end.
func (f *inflight) result() delegation.Result {
	d := f.d
	red := d.reg.Secrets().Redact
	tr := f.tr
	res := f.snapshot()
	switch tr.Terminal() {
	case delegation.DelegationFinished:
		res.Status = delegation.StatusCompleted
	case delegation.DelegationCancelled:
		res.Status = delegation.StatusCancelled
	default:
		res.Status = delegation.StatusFailed
	}
	if e := tr.TerminalError(); e != nil {
		c := *e
		c.Message = red(c.Message)
		res.Error = &c
		if c.Code == delegation.CodeInputRequired {
			res.Status = delegation.StatusInputRequired
		}
	}
	end := time.Now()
	d.audit.End(audit.Record{DelegationID: f.id, RunID: f.req.RunID, ParentToolCallID: d.corr.ParentOf(f.id), AgentKey: f.spec.Key,
		AgentName: f.spec.DisplayName, Protocol: f.spec.Protocol, Tenant: f.spec.Tenant, RemoteTaskID: tr.TaskID(), RemoteContextID: tr.ContextID(),
		CardFingerprint: f.fingerprint, Mode: f.mode, Objective: f.objective(), Status: res.Status, Result: &res,
		StartedAt: f.start, EndedAt: end, DurationMS: end.Sub(f.start).Milliseconds(), Recovered: f.recovered, CancelConfirmed: f.cancelOK})
	code := ""
	if res.Error != nil {
		code = string(res.Error.Code)
	}
	f.log.Info("delegation finished", "status", res.Status, "code", code, "remote_task_id", tr.TaskID(), "duration_ms", end.Sub(f.start).Milliseconds())
	return res
}

// taskText is the delegated task as one text: objective, prompt and context.
func (f *inflight) taskText() string {
	var b strings.Builder
	b.WriteString(f.req.Objective)
	if p := strings.TrimSpace(f.req.Input.Prompt); p != "" {
		b.WriteString("\n\n")
		b.WriteString(p)
	}
	if c := strings.TrimSpace(f.req.Input.Context); c != "" {
		b.WriteString("\n\nContext:\n")
		b.WriteString(c)
	}
	return b.String()
}

// inputArtifacts resolves the model's artifact references: host artifacts
// of this run within the size policy carry their content; every other
// reference travels as a URI only (the host never fetches it).
func (f *inflight) inputArtifacts() []remote.InputArtifact {
	var out []remote.InputArtifact
	for _, a := range f.req.Input.Artifacts {
		in := remote.InputArtifact{Name: sanitize.Line(a.Name, 200), URI: a.URI}
		if del, aid, ok := artifact.ParseURI(a.URI); ok {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			st, err := f.d.artifacts.Get(ctx, f.req.RunID, del, aid)
			cancel()
			if err == nil && int64(len(st.Content)) <= f.spec.Policy.MaxArtifactBytes {
				in.Name = sanitize.Line(cmp.Or(a.Name, st.Name), 200)
				in.MimeType, in.Content = st.MimeType, st.Content
			}
		}
		out = append(out, in)
	}
	return out
}
