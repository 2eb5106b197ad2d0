package a2adelegation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	sdka2a "github.com/a2aproject/a2a-go/v2/a2a"
	a2aclient "github.com/seed0634/agentadaptor/pkg/clients/a2a"
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
	Constraints Constraints
	// OnEvent, if set, is called synchronously with every event published
	// for this delegation (e.g. to send MCP progress). It must not block.
	OnEvent func(DelegationEvent)
}

// TaskInput is the "input" object of the tool (SPEC §11).
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

// Result statuses.
const (
	StatusCompleted     = "completed"
	StatusFailed        = "failed"
	StatusCancelled     = "cancelled"
	StatusInputRequired = "input_required"
)

// Result is the structured tool result (SPEC §11). Error is set iff the
// delegation did not complete.
type Result struct {
	DelegationID    string           `json:"delegation_id"`
	Agent           string           `json:"agent"`
	RemoteProtocol  string           `json:"remote_protocol"`
	RemoteTaskID    string           `json:"remote_task_id"`
	RemoteContextID string           `json:"remote_context_id"`
	Status          string           `json:"status"`
	Summary         string           `json:"summary"`
	Artifacts       []ResultArtifact `json:"artifacts"`
	Messages        []ResultMessage  `json:"messages"`
	RawTask         *RawTask         `json:"raw_task,omitempty"`
	Error           *DelegationError `json:"error,omitempty"`
}

// ResultArtifact references a stored remote artifact. Error is set (and
// URI empty) when the artifact was not stored, e.g. artifact_too_large.
type ResultArtifact struct {
	ID       string           `json:"id"`
	Name     string           `json:"name"`
	MimeType string           `json:"mime_type"`
	URI      string           `json:"uri"`
	Error    *DelegationError `json:"error,omitempty"`
}

// ResultMessage is one remote message.
type ResultMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// RawTask identifies the remote task for audit and replay.
type RawTask struct {
	Provider string `json:"provider"`
	TaskID   string `json:"task_id"`
}

// Causes of a delegation's context ending.
var (
	errHostTimeout   = errors.New("host timeout")
	errRunEnded      = errors.New("parent run ended")
	errServiceClosed = errors.New("delegation service closed")
	errParentCancel  = errors.New("parent cancelled")
)

func newDelegationID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "del-" + hex.EncodeToString(b[:])
}

// Input bounds (tool input validation).
const (
	maxObjectiveBytes = 16 << 10
	maxPromptBytes    = 64 << 10
	maxInputArtifacts = 32
)

func validateRequest(r *Request) *DelegationError {
	bad := func(format string, args ...any) *DelegationError {
		return &DelegationError{Code: CodeInvalidInput, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case strings.TrimSpace(r.Agent) == "":
		return bad("agent is required")
	case len(r.Agent) > 128:
		return bad("agent must be a registry key")
	case strings.TrimSpace(r.Objective) == "":
		return bad("objective is required")
	case len(r.Objective) > maxObjectiveBytes:
		return bad("objective is longer than %d bytes", maxObjectiveBytes)
	case len(r.Input.Prompt) > maxPromptBytes || len(r.Input.Context) > maxPromptBytes:
		return bad("input.prompt and input.context must be at most %d bytes", maxPromptBytes)
	case len(r.Input.Artifacts) > maxInputArtifacts:
		return bad("at most %d input artifacts", maxInputArtifacts)
	case r.Constraints.TimeoutSeconds < 0 || r.Constraints.MaxArtifacts < 0:
		return bad("constraints must not be negative")
	}
	for i, a := range r.Input.Artifacts {
		if a.URI == "" || len(a.URI) > 2048 || len(a.Name) > 256 {
			return bad("input.artifacts[%d] needs a uri (at most 2048 bytes) and a name (at most 256)", i)
		}
	}
	return nil
}

// delegation is one running delegation.
type delegation struct {
	s     *Service
	id    string
	req   Request
	entry *agentEntry
	spec  RemoteAgentSpec
	eff   Effective
	m     *mapper
	start time.Time

	client      *a2aclient.Client
	fingerprint string
	mode        string
	sent        bool // a request that creates the remote task went out
	recovered   int
	cancelOK    *bool

	// input answers (AnswerInput), guarded by s.mu for waiting
	input   chan string
	waiting bool

	pubMu sync.Mutex
}

// Delegate runs one delegation to completion and returns its structured
// result. It publishes subagent.started first and exactly one terminal
// event on the bus while it runs; it never panics and never returns a
// result without Status. Cancelling ctx cancels the remote task
// (bounded by Config.CancelTimeout; a cleanup watcher keeps trying when
// the remote does not confirm).
func (s *Service) Delegate(ctx context.Context, req Request) Result {
	d := &delegation{s: s, id: newDelegationID(), req: req, start: time.Now(), input: make(chan string, 1)}
	d.m = newMapper(mapperConfig{runID: req.RunID, delegationID: d.id})
	res := Result{DelegationID: d.id, Agent: shortText(req.Agent, 128), RemoteProtocol: ProtocolA2A, Status: StatusFailed,
		Artifacts: []ResultArtifact{}, Messages: []ResultMessage{}}
	if req.RunID == "" {
		res.Error = &DelegationError{Code: CodeMissingRunContext, Message: "This tool call is not bound to a parent run (no valid run token): host configuration error."}
		return res
	}
	if derr := validateRequest(&req); derr != nil {
		res.Error = derr
		return res
	}
	d.entry = s.reg.entry(req.Agent)
	if d.entry != nil {
		d.spec = d.entry.spec
	} else {
		d.spec = RemoteAgentSpec{Key: sanitizeText(req.Agent, 64), DisplayName: "", Protocol: ProtocolA2A}
	}
	res.RemoteProtocol = d.spec.Protocol
	if !s.track(d) {
		res.Error = &DelegationError{Code: CodeAgentUnavailable, Retryable: true, Message: "The delegation service is shutting down."}
		return res
	}
	defer s.untrack(d)
	s.corr.Register(req.RunID, d.id, req.ParentToolCallID)
	return d.run(ctx)
}

// run is Delegate after bookkeeping.
func (d *delegation) run(parent context.Context) Result {
	s := d.s
	// The delegation's context ends with the tool call, the parent run
	// (Release) or the service (Close), whichever comes first.
	dctx, dcancel := context.WithCancelCause(context.WithoutCancel(parent))
	defer dcancel(nil)
	stop1 := context.AfterFunc(parent, func() { dcancel(errParentCancel) })
	defer stop1()
	if rc := s.runContext(d.req.RunID); rc != nil {
		stop2 := context.AfterFunc(rc, func() { dcancel(context.Cause(rc)) })
		defer stop2()
	}
	stop3 := context.AfterFunc(s.ctx, func() { dcancel(errServiceClosed) })
	defer stop3()

	if d.entry == nil {
		d.begin()
		d.finish(DelegationFailed, &DelegationError{Code: CodeAgentNotFound, Message: fmt.Sprintf("No remote agent %q is registered. Available agents: %s.", shortText(d.req.Agent, 64), strings.Join(s.reg.Keys(), ", "))})
		return d.result()
	}
	d.eff = d.spec.Policy.Clamp(d.req.Constraints)
	tctx, tcancel := context.WithTimeoutCause(dctx, d.eff.Timeout, errHostTimeout)
	defer tcancel()

	if derr := d.entry.acquire(d.req.RunID); derr != nil {
		d.begin()
		d.finish(DelegationFailed, derr)
		return d.result()
	}
	defer d.entry.release(d.req.RunID)

	if d.spec.Protocol == ProtocolAGUI {
		d.runAGUI(tctx) // agui.go
		if d.m.contextID != "" {
			s.rememberContext(d.req, d.spec, d.m.contextID)
		}
		return d.result()
	}
	client, fp, cerr := s.reg.connect(tctx, d.entry)
	d.client, d.fingerprint = client, fp
	caps, _ := s.reg.Capabilities(d.spec.Key)
	d.mode = "polling"
	if caps.Streaming && d.eff.Stream {
		d.mode = "streaming"
	}
	d.begin()
	if cerr != nil {
		if tctx.Err() != nil {
			d.stopped(tctx)
		} else {
			d.finish(DelegationFailed, cerr.DelegationError)
		}
		return d.result()
	}
	if !caps.Streaming && d.spec.Policy.RequireStreaming {
		d.finish(DelegationFailed, &DelegationError{Code: CodeCapabilityUnsupported, Message: fmt.Sprintf("Agent %q does not support streaming, which host policy requires.", d.spec.Key)})
		return d.result()
	}
	d.configureMapper(d.mode == "streaming")
	if !caps.Streaming {
		d.publish(DelegationEvent{Kind: DelegationStatus, Status: "polling", Text: "The remote agent does not stream; following its task state by polling.",
			Raw: map[string]any{"reason": string(CodeCapabilityUnsupported)}})
	}

	msg := d.buildMessage(d.s.stickyContext(d.req, d.spec))
	d.execute(tctx, msg)
	if d.m.contextID != "" {
		s.rememberContext(d.req, d.spec, d.m.contextID)
	}
	return d.result()
}

// configureMapper applies the policy to the mapper (both protocols).
func (d *delegation) configureMapper(streamText bool) {
	d.m.cfg = mapperConfig{
		streamText: streamText, allowInput: d.spec.Policy.AllowInputRequired,
		maxArtifactBytes: d.spec.Policy.MaxArtifactBytes, maxArtifacts: d.eff.MaxArtifacts,
		runID: d.req.RunID, delegationID: d.id,
	}
	if d.spec.Policy.AllowRemoteArtifacts {
		store := d.s.artifacts
		d.m.cfg.put = func(a StoredArtifact) error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return store.Put(ctx, a)
		}
	}
}

// execute drives the remote task to a terminal event.
func (d *delegation) execute(ctx context.Context, msg *sdka2a.Message) {
	for {
		var err error
		if d.mode == "streaming" {
			err = d.stream(ctx, msg)
		} else {
			err = d.poll(ctx, msg)
		}
		if d.m.terminal != "" {
			return
		}
		if ctx.Err() != nil {
			d.stopped(ctx)
			return
		}
		if err != nil {
			d.fail(err)
			return
		}
		// The task is interrupted: input-required or auth-required.
		next, ok := d.interrupted(ctx)
		if !ok {
			return
		}
		msg = next
	}
}

func (d *delegation) metadata() map[string]any {
	return map[string]any{"agentadaptor/delegation_id": d.id}
}

// stream sends msg with message/stream and reads the stream, recovering a
// cut stream by resubscribing or polling. It returns nil when the task
// reached a terminal or interrupted state.
func (d *delegation) stream(ctx context.Context, msg *sdka2a.Message) error {
	rctx, first, done := d.untilTaskKnown(ctx)
	defer done()
	d.sent = true
	st, err := d.client.SendStreaming(rctx, a2aclient.SendRequest{Message: msg, Tenant: d.spec.Tenant, Metadata: d.metadata()})
	if err != nil {
		first()
		return err
	}
	if st.Next() {
		d.emit(d.m.Map(st.Event()))
	}
	first()
	for st.Next() {
		d.emit(d.m.Map(st.Event()))
	}
	err = st.Err()
	_ = st.Close()
	if d.m.terminal != "" || ctx.Err() != nil {
		return nil
	}
	if err == nil && (a2aclient.IsInterrupted(d.m.state) || a2aclient.IsTerminal(d.m.state)) {
		return nil
	}
	if err == nil {
		err = &a2aclient.Error{Kind: a2aclient.KindInterrupted, Op: "stream", Err: errors.New("stream ended before a terminal state")}
	}
	if d.m.taskID == "" || !(a2aclient.KindOf(err) == a2aclient.KindInterrupted || a2aclient.KindOf(err) == a2aclient.KindUnavailable) {
		return err
	}
	return d.recover(ctx, err)
}

// recover re-attaches to a cut stream (resubscribe, then get) before failing.
func (d *delegation) recover(ctx context.Context, cause error) error {
	d.recovered++
	d.s.logWarn("delegation stream interrupted; recovering", d, cause)
	d.publish(DelegationEvent{Kind: DelegationStatus, Status: string(CodeStreamInterrupted), Text: "The remote stream was interrupted; reconnecting."})
	d.m.lastStatusKey = ""
	rep, err := a2aclient.RecoverTask(ctx, d.client, sdka2a.TaskID(d.m.taskID), a2aclient.RecoverOptions{
		Tenant: d.spec.Tenant, MaxAttempts: d.s.cfg.RecoverAttempts, InitialBackoff: d.s.cfg.RecoverBackoff,
		OnEvent: func(ev a2aclient.Event) { d.emit(d.m.Map(ev)) },
	})
	if rep != nil && rep.Task != nil {
		d.emit(d.m.Map(rep.Task))
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return &a2aclient.Error{Kind: a2aclient.KindInterrupted, Op: "recover", Err: err}
	}
	return nil
}

// poll is the non-streaming path: send with returnImmediately, then poll
// the task with backoff. Only status events are published (no fake text deltas).
// untilTaskKnown returns the context for a request that creates a remote
// task. A cancellation of ctx while that request is in flight must not cut
// it before the response names the task, or the remote task would run on
// with nobody to cancel it: the returned context ends when ctx does, but only
// once first has been called (the task id is known, or the request failed)
// or after Config.CancelTimeout. done releases everything.
func (d *delegation) untilTaskKnown(ctx context.Context) (rctx context.Context, first, done func()) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	known := make(chan struct{})
	var once sync.Once
	first = func() { once.Do(func() { close(known) }) }
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(d.s.cfg.CancelTimeout)
		defer t.Stop()
		select {
		case <-known:
		case <-t.C:
		}
		cancel()
	})
	return rctx, first, func() { first(); stop(); cancel() }
}

func (d *delegation) poll(ctx context.Context, msg *sdka2a.Message) error {
	rctx, first, done := d.untilTaskKnown(ctx)
	d.sent = true
	res, err := d.client.Send(rctx, a2aclient.SendRequest{Message: msg, Tenant: d.spec.Tenant, ReturnImmediately: true, Metadata: d.metadata()})
	first()
	done()
	if err != nil {
		return err
	}
	if res.Message != nil {
		d.emit(d.m.Map(res.Message))
		return nil
	}
	d.emit(d.m.Map(res.Task))
	interval := d.s.cfg.PollInterval
	failures := 0
	zero := 0
	for d.m.terminal == "" && !a2aclient.IsInterrupted(d.m.state) {
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		interval = min(interval*3/2, d.s.cfg.MaxPollInterval)
		task, err := d.client.GetTask(ctx, a2aclient.GetTaskRequest{TaskID: sdka2a.TaskID(d.m.taskID), Tenant: d.spec.Tenant, HistoryLength: &zero})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var e *a2aclient.Error
			if errors.As(err, &e) && e.Retryable() && failures < d.s.cfg.RecoverAttempts {
				failures++
				continue
			}
			return &a2aclient.Error{Kind: a2aclient.KindInterrupted, Op: "poll", Err: err}
		}
		failures = 0
		d.emit(d.m.Map(task))
	}
	return nil
}

// interrupted handles input-required / auth-required. It returns the
// follow-up message, or ok=false after finishing the delegation.
func (d *delegation) interrupted(ctx context.Context) (*sdka2a.Message, bool) {
	question := d.m.question
	label := RemoteStatusLabel(d.m.state)
	if d.m.state != a2aclient.StateInputRequired {
		d.cancelRemote("auth_required")
		d.finish(DelegationFailed, &DelegationError{Code: CodeRemoteRejected, RemoteStatus: label, Message: "The remote agent requires additional authentication, which the host cannot provide."})
		return nil, false
	}
	if !d.spec.Policy.AllowInputRequired {
		d.cancelRemote("input_required_unsupported")
		d.finish(DelegationFailed, &DelegationError{Code: CodeInputRequiredUnsupported, RemoteStatus: label,
			Message: "The remote agent asked for input, which host policy does not allow" + suffix(question)})
		return nil, false
	}
	d.s.awaitInput(d)
	var answer string
	select {
	case answer = <-d.input:
	case <-ctx.Done():
	}
	d.s.setWaiting(d, false)
	if ctx.Err() != nil {
		if context.Cause(ctx) == errHostTimeout {
			ok := d.cancelRemote("input_timeout")
			d.pending(ok)
			d.finish(DelegationFailed, &DelegationError{Code: CodeInputRequired, RemoteStatus: label,
				Message: "The remote agent needs input that was not provided before the timeout" + suffix(question)})
			return nil, false
		}
		d.stopped(ctx)
		return nil, false
	}
	d.publish(DelegationEvent{Kind: DelegationStatus, Status: "input_provided", Text: "Input sent to the remote agent."})
	d.m.lastStatusKey = ""
	next := sdka2a.NewMessageForTask(sdka2a.MessageRoleUser, sdka2a.TaskInfo{TaskID: sdka2a.TaskID(d.m.taskID), ContextID: d.m.contextID}, sdka2a.NewTextPart(answer))
	return next, true
}

// stopped ends a delegation whose context ended: host timeout or cancellation.
func (d *delegation) stopped(ctx context.Context) {
	cause := context.Cause(ctx)
	reason := map[error]string{errHostTimeout: "host_timeout", errRunEnded: "parent_run_ended", errServiceClosed: "host_shutdown"}[cause]
	if reason == "" {
		reason = "parent_cancelled"
	}
	confirmed := true
	switch {
	case d.m.taskID != "" && !a2aclient.IsTerminal(d.m.state):
		confirmed = d.cancelRemote(reason)
		d.pending(confirmed)
	case d.m.taskID == "" && d.sent && d.spec.Protocol != ProtocolAGUI:
		// The request that creates the task went out, but its response
		// never named the task: the remote may be running it, and it cannot
		// be cancelled by id. Do not claim a confirmed cancellation.
		confirmed = false
		d.cancelOK = &confirmed
	}
	label := RemoteStatusLabel(d.m.state)
	if cause == errHostTimeout {
		msg := fmt.Sprintf("Remote task did not finish before timeout (%s).", d.eff.Timeout)
		if !confirmed {
			msg += " Its cancellation is not confirmed yet; the host keeps trying."
		}
		d.finish(DelegationFailed, &DelegationError{Code: CodeRemoteTimeout, Retryable: true, RemoteStatus: label, Message: msg})
		return
	}
	why := map[string]string{"parent_run_ended": "the parent run ended", "host_shutdown": "the host is shutting down"}[reason]
	if why == "" {
		why = "the parent cancelled the tool call"
	}
	if !confirmed {
		d.finish(DelegationCancelled, &DelegationError{Code: CodeCancelPending, RemoteStatus: label,
			Message: "Delegation cancelled because " + why + "; the remote agent has not confirmed the cancellation yet and the host keeps trying."})
		return
	}
	d.finish(DelegationCancelled, &DelegationError{Code: CodeCancelled, RemoteStatus: label, Message: "Delegation cancelled because " + why + "."})
}

// pending publishes cancel_pending and starts the cleanup watcher when a
// cancellation was not confirmed.
func (d *delegation) pending(confirmed bool) {
	d.cancelOK = &confirmed
	if confirmed {
		return
	}
	d.publish(DelegationEvent{Kind: DelegationStatus, Status: string(CodeCancelPending), Text: "Cancellation requested; waiting for the remote agent to confirm."})
	d.s.startWatcher(d.id, d.req.RunID, d.spec, d.client, d.m.taskID)
}

// cancelRemote asks the remote to cancel the task, bounded by
// Config.CancelTimeout, and reports whether the task is confirmed ended.
func (d *delegation) cancelRemote(reason string) bool {
	if d.m.taskID == "" || d.client == nil {
		return true
	}
	return d.s.cancelTask(d.client, d.spec, d.req.RunID, d.id, d.m.taskID, reason)
}

// cancelTask sends one CancelTask with structured metadata.
func (s *Service) cancelTask(c *a2aclient.Client, spec RemoteAgentSpec, runID, delegationID, taskID, reason string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CancelTimeout)
	defer cancel()
	t, err := c.CancelTask(ctx, a2aclient.CancelTaskRequest{TaskID: sdka2a.TaskID(taskID), Tenant: spec.Tenant, Metadata: map[string]any{
		"reason": reason, "delegation_id": delegationID, "run_id": runID, "agent": spec.Key, "requested_by": "agentadaptor",
	}})
	if err == nil {
		return t != nil && a2aclient.IsTerminal(t.Status.State)
	}
	s.log.Warn("remote cancel not confirmed", "delegation_id", delegationID, "run_id", runID, "agent", spec.Key, "reason", reason, "error", s.reg.red.str(shortText(err.Error(), 300)))
	if k := a2aclient.KindOf(err); k == a2aclient.KindRejected || k == a2aclient.KindNotFound {
		// Not cancelable, or unknown: it may simply have ended already.
		gctx, gcancel := context.WithTimeout(context.Background(), s.cfg.CancelTimeout)
		defer gcancel()
		if t, gerr := c.GetTask(gctx, a2aclient.GetTaskRequest{TaskID: sdka2a.TaskID(taskID), Tenant: spec.Tenant}); gerr == nil {
			return a2aclient.IsTerminal(t.Status.State)
		} else if a2aclient.KindOf(gerr) == a2aclient.KindNotFound {
			return true
		}
	}
	return false
}

// fail finishes the delegation for a client error.
func (d *delegation) fail(err error) {
	d.s.logWarn("delegation failed", d, err)
	derr := clientFailure(err, RemoteStatusLabel(d.m.state))
	if d.m.taskID != "" && !a2aclient.IsTerminal(d.m.state) {
		ok := d.cancelRemote(string(derr.Code))
		d.pending(ok)
	}
	d.finish(DelegationFailed, derr)
}

// clientFailure maps a pkg/clients/a2a error to a SPEC §16 failure. The
// message is generic: remote URLs and payloads stay in the host log.
func clientFailure(err error, remoteStatus string) *DelegationError {
	kind := a2aclient.KindOf(err)
	e := &DelegationError{RemoteStatus: remoteStatus}
	switch kind {
	case a2aclient.KindUnavailable:
		e.Code, e.Retryable, e.Message = CodeAgentUnavailable, true, "The remote agent could not be reached."
	case a2aclient.KindUnauthorized:
		e.Code, e.Message = CodeAgentUnavailable, "The remote agent refused the host's credentials."
	case a2aclient.KindRejected:
		e.Code, e.Message = CodeRemoteRejected, "The remote agent rejected the request."
	case a2aclient.KindTimeout:
		e.Code, e.Retryable, e.Message = CodeRemoteTimeout, true, "A call to the remote agent timed out."
	case a2aclient.KindInterrupted:
		e.Code, e.Retryable, e.Message = CodeStreamInterrupted, true, "The remote stream was interrupted and the task could not be recovered."
	case a2aclient.KindNotFound:
		e.Code, e.Message = CodeRemoteFailed, "The remote agent does not know the task."
	case a2aclient.KindProtocol:
		e.Code, e.Message = CodeRemoteFailed, "The remote agent sent a malformed payload."
	default:
		e.Code, e.Message = CodeRemoteFailed, "The delegation failed."
	}
	return e
}

// begin records the delegation and publishes subagent.started.
func (d *delegation) begin() { d.beginRaw(nil) }

// beginRaw is begin with protocol-specific Raw fields added to the started event.
func (d *delegation) beginRaw(extra map[string]any) {
	s := d.s
	s.audit.Begin(AuditRecord{DelegationID: d.id, RunID: d.req.RunID, ParentToolCallID: s.corr.ParentOf(d.id), AgentKey: d.spec.Key,
		AgentName: d.spec.DisplayName, Protocol: d.spec.Protocol, Tenant: d.spec.Tenant, CardFingerprint: d.fingerprint, Mode: d.mode,
		Objective: s.reg.red.str(shortText(d.req.Objective, 2000)), Status: "running", StartedAt: d.start})
	raw := map[string]any{"correlation": string(s.corr.Level(d.id))}
	if d.fingerprint != "" {
		raw["card_fingerprint"] = d.fingerprint
	}
	if d.mode != "" {
		raw["mode"] = d.mode
	}
	for k, v := range extra {
		raw[k] = v
	}
	d.publish(DelegationEvent{Kind: DelegationStarted, Status: "starting", Raw: raw})
	s.log.Info("delegation started", "delegation_id", d.id, "run_id", d.req.RunID, "agent", d.spec.Key, "mode", d.mode)
}

// finish publishes the terminal event (once).
func (d *delegation) finish(kind DelegationEventKind, derr *DelegationError) {
	d.emit(d.m.finish(kind, derr))
}

func (d *delegation) emit(evs []DelegationEvent) {
	for _, ev := range evs {
		d.publish(ev)
	}
}

// publish fills the common fields, redacts, and sends ev to the bus, the
// audit log and the OnEvent hook.
func (d *delegation) publish(ev DelegationEvent) {
	d.pubMu.Lock()
	defer d.pubMu.Unlock()
	s := d.s
	red := s.reg.red
	ev.RunID = d.req.RunID
	ev.DelegationID = d.id
	ev.ParentToolCallID = s.corr.ParentOf(d.id)
	ev.AgentKey = d.spec.Key
	ev.AgentName = d.spec.DisplayName
	ev.Protocol = d.spec.Protocol
	// Remote-chosen ids are untrusted text too: a remote that echoes a
	// secret into them must not get it onto the bus or into the audit.
	ev.RemoteTaskID = red.str(d.m.taskID)
	ev.RemoteContextID = red.str(d.m.contextID)
	ev.RemoteMessageID = red.str(ev.RemoteMessageID)
	ev.RemoteArtifactID = red.str(ev.RemoteArtifactID)
	ev.Raw = redactRaw(red, ev.Raw)
	ev.Time = time.Now()
	ev.Delta = red.str(ev.Delta)
	ev.Text = red.str(ev.Text)
	ev.Status = red.str(ev.Status)
	if ev.Error != nil {
		e := *ev.Error
		e.Message = red.str(e.Message)
		ev.Error = &e
	}
	if ev.Artifact != nil {
		a := *ev.Artifact
		a.ID = red.str(a.ID)
		a.Name = red.str(a.Name)
		a.URI = red.str(a.URI)
		if a.Error != nil {
			e := *a.Error
			e.Message = red.str(e.Message)
			a.Error = &e
		}
		ev.Artifact = &a
	}
	if ev.Kind == DelegationInputRequired {
		// Accept answers from the moment the UI can see the question.
		s.setWaiting(d, true)
	}
	s.bus.Publish(ev)
	if d.spec.Policy.AuditLevel != AuditMinimal || ev.Kind.Critical() {
		ae := AuditEvent{Kind: ev.Kind, Time: ev.Time, Status: ev.Status, RemoteTaskID: ev.RemoteTaskID, RemoteMessageID: ev.RemoteMessageID,
			RemoteArtifactID: ev.RemoteArtifactID, Artifact: ev.Artifact, Error: ev.Error}
		if d.spec.Policy.AuditLevel == AuditFull {
			ae.Text = shortText(ev.Delta+ev.Text, 2000)
		}
		if ev.Kind != DelegationTextDelta || d.spec.Policy.AuditLevel == AuditFull {
			s.audit.Event(d.id, ae)
		}
	}
	if d.req.OnEvent != nil {
		d.req.OnEvent(ev)
	}
}

// result builds the tool result and completes the audit record.
func (d *delegation) result() Result {
	s := d.s
	red := s.reg.red
	m := d.m
	res := Result{DelegationID: d.id, Agent: d.spec.Key, RemoteProtocol: d.spec.Protocol, RemoteTaskID: m.taskID, RemoteContextID: m.contextID,
		Summary: red.str(m.summary()), Artifacts: redactArtifacts(red, m.artifacts()), Messages: m.messages()}
	for i := range res.Messages {
		res.Messages[i].Text = red.str(res.Messages[i].Text)
	}
	for i := range res.Artifacts {
		res.Artifacts[i].Name = red.str(res.Artifacts[i].Name)
	}
	if m.taskID != "" {
		res.RawTask = &RawTask{Provider: d.spec.Protocol, TaskID: m.taskID}
	}
	switch m.terminal {
	case DelegationFinished:
		res.Status = StatusCompleted
	case DelegationCancelled:
		res.Status = StatusCancelled
	default:
		res.Status = StatusFailed
	}
	if e := m.terminalError; e != nil {
		c := *e
		c.Message = red.str(c.Message)
		res.Error = &c
		if c.Code == CodeInputRequired {
			res.Status = StatusInputRequired
		}
	}
	end := time.Now()
	s.audit.End(AuditRecord{DelegationID: d.id, RunID: d.req.RunID, ParentToolCallID: s.corr.ParentOf(d.id), AgentKey: d.spec.Key,
		AgentName: d.spec.DisplayName, Protocol: d.spec.Protocol, Tenant: d.spec.Tenant, RemoteTaskID: m.taskID, RemoteContextID: m.contextID,
		CardFingerprint: d.fingerprint, Mode: d.mode, Objective: red.str(shortText(d.req.Objective, 2000)), Status: res.Status, Result: &res,
		StartedAt: d.start, EndedAt: end, DurationMS: end.Sub(d.start).Milliseconds(), Recovered: d.recovered, CancelConfirmed: d.cancelOK})
	code := ""
	if res.Error != nil {
		code = string(res.Error.Code)
	}
	s.log.Info("delegation finished", "delegation_id", d.id, "run_id", d.req.RunID, "agent", d.spec.Key, "status", res.Status, "code", code,
		"remote_task_id", m.taskID, "duration_ms", end.Sub(d.start).Milliseconds())
	return res
}

// taskText is the delegated task as one text: objective, prompt and context.
func (d *delegation) taskText() string {
	var b strings.Builder
	b.WriteString(d.req.Objective)
	if p := strings.TrimSpace(d.req.Input.Prompt); p != "" {
		b.WriteString("\n\n")
		b.WriteString(p)
	}
	if c := strings.TrimSpace(d.req.Input.Context); c != "" {
		b.WriteString("\n\nContext:\n")
		b.WriteString(c)
	}
	return b.String()
}

// buildMessage composes the A2A message of the delegated task.
func (d *delegation) buildMessage(contextID string) *sdka2a.Message {
	parts := []*sdka2a.Part{sdka2a.NewTextPart(d.taskText())}
	var refs []map[string]string
	for _, a := range d.req.Input.Artifacts {
		if del, aid, ok := ParseArtifactURI(a.URI); ok {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			st, err := d.s.artifacts.Get(ctx, d.req.RunID, del, aid)
			cancel()
			if err == nil && int64(len(st.Content)) <= d.spec.Policy.MaxArtifactBytes {
				var p *sdka2a.Part
				if strings.HasPrefix(st.MimeType, "text/") || st.MimeType == "application/json" {
					p = sdka2a.NewTextPart(string(st.Content))
				} else {
					p = sdka2a.NewRawPart(st.Content)
				}
				p.Filename, p.MediaType = sanitizeText(cmpOrStr(a.Name, st.Name), 200), st.MimeType
				parts = append(parts, p)
				continue
			}
		}
		refs = append(refs, map[string]string{"name": sanitizeText(a.Name, 200), "uri": a.URI})
	}
	if len(refs) > 0 {
		p := sdka2a.NewDataPart(map[string]any{"artifact_refs": refs})
		p.MediaType = "application/json"
		parts = append(parts, p)
	}
	msg := sdka2a.NewMessage(sdka2a.MessageRoleUser, parts...)
	msg.ContextID = contextID
	return msg
}

// redactArtifacts scrubs known secrets from remote-chosen artifact ids,
// names and URIs in a tool result. (An artifact whose id a remote built from
// the host's secret is then listed but not downloadable: secrecy wins.)
func redactArtifacts(red *redactor, list []ResultArtifact) []ResultArtifact {
	for i := range list {
		list[i].ID = red.str(list[i].ID)
		list[i].Name = red.str(list[i].Name)
		list[i].URI = red.str(list[i].URI)
	}
	return list
}
