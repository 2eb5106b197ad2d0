package delegator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/seed0634/agentadaptor/internal/sanitize"
	"github.com/seed0634/agentadaptor/pkg/credentials"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// lifecycle is a delegation's remote task and what follows it: start,
// answers, recovery, cancellation, the one terminal event and the result.
// It is owned by one goroutine at a time, the one running the tool call
// that follows the delegation (Delegate; after a park, the call that
// continues it or the park watcher that ends it, which take it over under
// Delegator.mu). Its transcript is not safe for concurrent use: only this
// goroutine reads it; others see the remote ids through the publisher.
type lifecycle struct {
	a    *activeDelegation
	tr   *remote.Transcript
	task remote.Task // nil until the task was made

	fingerprint string      // the agent card's
	mode        string      // "streaming" or "polling"
	auth        remote.Info // AuthScheme and DeclaredAuth of the agent
	recovered   int         // cut streams re-attached to
	cancelOK    *bool       // whether a cancellation was confirmed (nil: none was needed)
	// park is set when the remote asked and the question goes back to the
	// parent (input_required policy "return"): the call returns parked.
	park        bool
	releaseSlot func() // the agent's concurrency slot, once taken
}

// followCall runs one tool call's share of the delegation: body (the
// start, or a continuing answer), then the task until it ends or parks.
// Its context ends with the tool call, the parent run (CancelRun, EndRun),
// the delegator (Close) or the delegation's timeout, whichever comes
// first. body returns the error to handle (a body that finished the
// delegation itself returns nil).
func (l *lifecycle) followCall(parent context.Context, body func(ctx context.Context) error) {
	a := l.a
	dctx, dcancel := context.WithCancelCause(context.WithoutCancel(parent))
	defer dcancel(nil)
	stop1 := context.AfterFunc(parent, func() { dcancel(errParentCancel) })
	defer stop1()
	if a.run != nil {
		stop2 := context.AfterFunc(a.run.ctx, func() { dcancel(context.Cause(a.run.ctx)) })
		defer stop2()
	}
	stop3 := context.AfterFunc(a.d.ctx, func() { dcancel(errClosed) })
	defer stop3()
	ctx, cancel := context.WithTimeoutCause(dctx, a.eff.Timeout, errHostTimeout)
	defer cancel()
	l.followTask(ctx, body(ctx))
}

// startTask is the first call's body: connect to the agent, take a
// concurrency slot, and start the remote task.
func (l *lifecycle) startTask(ctx context.Context) error {
	a := l.a
	d := a.d
	if !a.known {
		l.finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeAgentNotFound,
			Message: fmt.Sprintf("No remote agent %q is registered. Available agents: %s.", sanitize.Truncate(a.req.Agent, 64), strings.Join(d.reg.Keys(), ", "))})
		return nil
	}
	release, derr := d.reg.Acquire(a.spec.Key, a.req.RunID)
	if derr != nil {
		l.finish(delegation.DelegationFailed, derr)
		return nil
	}
	l.releaseSlot = release

	agent, cerr := d.reg.Connect(ctx, a.spec.Key)
	if cerr != nil {
		if ctx.Err() != nil {
			l.stopped(ctx)
			return nil
		}
		a.log.Warn("remote agent unavailable", "error", cerr.Error())
		l.finish(delegation.DelegationFailed, cerr.Failure)
		return nil
	}
	info := agent.Info()
	l.auth = remote.Info{AuthScheme: info.AuthScheme, DeclaredAuth: info.DeclaredAuth}
	mode := "polling"
	if info.Streaming && a.eff.Stream {
		mode = "streaming"
	}
	l.describe(info.Fingerprint, mode)
	if !info.Streaming && a.spec.Policy.RequireStreaming {
		l.finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeCapabilityUnsupported,
			Message: fmt.Sprintf("Agent %q does not support streaming, which host policy requires.", a.spec.Key)})
		return nil
	}
	contextID, lost := d.stickyContext(a.req, a.spec)
	if lost {
		a.pub.contextLost()
	}
	l.task = agent.NewTask(remote.TaskSpec{DelegationID: a.id, Text: a.taskText(), Artifacts: a.inputArtifacts(),
		ContextID: contextID, Stream: a.eff.Stream, Transcript: l.tr, Emit: l.emit, Log: a.log})
	l.describe(info.Fingerprint, l.task.Mode())
	return l.recoverCut(ctx, l.task.Start(ctx))
}

// describe records the agent's card fingerprint and how the task is
// followed, here (for the result's audit record) and for the publisher.
func (l *lifecycle) describe(fingerprint, mode string) {
	l.fingerprint, l.mode = fingerprint, mode
	l.a.pub.describe(fingerprint, mode)
}

// followTask follows the task after err (the outcome of its last call)
// until the delegation ends, or parks for the parent's answer.
func (l *lifecycle) followTask(ctx context.Context, err error) {
	for {
		switch {
		case l.tr.Terminal() != "":
			return
		case ctx.Err() != nil:
			l.stopped(ctx)
			return
		case err != nil:
			l.fail(err)
			return
		}
		// The task is interrupted: input-required or auth-required.
		answer, ok := l.onInterrupted(ctx)
		if !ok {
			return
		}
		err = l.recoverCut(ctx, l.task.Answer(ctx, answer))
	}
}

// outcome ends the tool call: the parked result when the delegation waits
// for the parent's answer, else the final result (and the delegation ends).
func (l *lifecycle) outcome() delegation.Result {
	if l.park {
		l.a.pub.setOnEvent(nil) // the call's progress ends with it
		res := l.parkedResult()
		l.a.d.park(l.a)
		return res
	}
	return l.end()
}

// end releases what the delegation held and returns its final result.
func (l *lifecycle) end() delegation.Result {
	a := l.a
	if l.task != nil {
		a.d.rememberContext(a.req, a.spec, l.task.ContextID())
	}
	if l.releaseSlot != nil {
		l.releaseSlot()
	}
	res := l.result()
	a.d.untrack(a)
	return res
}

// recoverCut re-attaches once to a task whose stream was cut, when the
// protocol can.
func (l *lifecycle) recoverCut(ctx context.Context, err error) error {
	if err == nil || l.tr.Terminal() != "" || ctx.Err() != nil || !l.task.CanRecover(err) {
		return err
	}
	a := l.a
	l.recovered++
	if o := a.d.cfg.Observer; o != nil {
		o.RemoteError(a.spec.Key, delegation.CodeStreamInterrupted)
	}
	a.log.Warn("delegation stream interrupted; recovering", "remote_task_id", l.tr.TaskID(), "error", a.d.reg.Secrets().Redact(sanitize.Truncate(err.Error(), 500)))
	l.publish(delegation.DelegationEvent{Kind: delegation.DelegationStatus, Status: string(delegation.CodeStreamInterrupted), Text: "The remote stream was interrupted; reconnecting."})
	return l.task.Recover(ctx)
}

// onInterrupted handles input-required / auth-required. It returns the
// answer to send, or ok=false after finishing the delegation (or, with
// the input_required policy "return", marking it to park).
func (l *lifecycle) onInterrupted(ctx context.Context) (string, bool) {
	a := l.a
	question := l.tr.Question()
	label := l.tr.State().Label()
	if l.tr.State() != remote.StateInputRequired {
		l.settleCancel(l.cancelRemote(ctx, "auth_required"))
		l.finish(delegation.DelegationFailed, l.authRequired(label, question))
		return "", false
	}
	switch a.spec.Policy.InputMode() {
	case registry.InputRequiredFail:
		l.settleCancel(l.cancelRemote(ctx, "input_required_unsupported"))
		l.finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeInputRequiredUnsupported, RemoteStatus: label,
			Message: "The remote agent asked for input, which host policy does not allow" + remote.Suffix(question)})
		return "", false
	case registry.InputRequiredReturn:
		// The question goes back to the parent model; the delegation
		// parks without a terminal event (outcome).
		l.park = true
		l.publish(delegation.DelegationEvent{Kind: delegation.DelegationStatus, Status: delegation.StatusInputReturned,
			Text: "The question was returned to the parent agent, which may answer it by continuing this delegation."})
		return "", false
	}
	answer, ok := a.d.awaitAnswer(ctx, a)
	if !ok {
		if context.Cause(ctx) == errHostTimeout {
			l.inputTimeout(ctx)
			return "", false
		}
		l.stopped(ctx)
		return "", false
	}
	l.publish(delegation.DelegationEvent{Kind: delegation.DelegationStatus, Status: delegation.StatusInputProvided, Text: "Input sent to the remote agent."})
	return answer, true
}

// authRequired is the failure of a task that asked for authentication the
// host cannot provide (A2A auth-required): it names the scheme the host
// authenticates with and the schemes the agent declares
// (docs/design.md#failure-codes).
func (l *lifecycle) authRequired(label, question string) *delegation.DelegationError {
	how := map[string]string{"": "no credential", string(credentials.SchemeBearer): "a bearer token (scheme bearer)",
		string(credentials.SchemeAPIKey): "an API key (scheme api_key)", string(credentials.SchemeOAuth2): "OAuth2 client credentials (scheme oauth2)"}[l.auth.AuthScheme]
	if how == "" {
		how = "scheme " + l.auth.AuthScheme
	}
	declared := ""
	if len(l.auth.DeclaredAuth) > 0 {
		declared = "; its agent card declares: " + strings.Join(l.auth.DeclaredAuth, ", ")
	}
	return &delegation.DelegationError{Code: delegation.CodeAuthRequired, RemoteStatus: label, Message: fmt.Sprintf(
		"The remote agent requires authentication the host cannot provide (task state auth-required)%s The host authenticates to agent %q with %s%s. "+
			"The host's auth configuration for this agent must change; retrying will not help.", remote.Suffix(question), l.a.spec.Key, how, declared)}
}

// inputTimeout ends a delegation whose question was not answered in time:
// the remote task is cancelled (reason input_timeout).
func (l *lifecycle) inputTimeout(ctx context.Context) {
	l.settleCancel(l.cancelRemote(ctx, "input_timeout"))
	l.finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeInputRequired, RemoteStatus: l.tr.State().Label(),
		Message: "The remote agent needs input that was not provided before the timeout" + remote.Suffix(l.tr.Question())})
}

// stopped ends a delegation whose context ended: host timeout or cancellation.
func (l *lifecycle) stopped(ctx context.Context) {
	cause := context.Cause(ctx)
	reason := map[error]string{errHostTimeout: "host_timeout", errRunEnded: "parent_run_ended", errClosed: "host_shutdown"}[cause]
	if reason == "" {
		reason = "parent_cancelled"
	}
	confirmed := true
	if l.task != nil && !l.tr.State().Terminal() {
		out := l.cancelRemote(ctx, reason)
		l.settleCancel(out)
		confirmed = out == remote.CancelConfirmed || out == remote.CancelNotNeeded
	}
	label := l.tr.State().Label()
	if cause == errHostTimeout {
		msg := fmt.Sprintf("Remote task did not finish before timeout (%s).", l.a.eff.Timeout)
		if !confirmed {
			msg += " Its cancellation is not confirmed yet; the host keeps trying."
		}
		l.finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeRemoteTimeout, Retryable: true, RemoteStatus: label, Message: msg})
		return
	}
	why := map[string]string{"parent_run_ended": "the parent run ended", "host_shutdown": "the host is shutting down"}[reason]
	if why == "" {
		why = "the parent cancelled the tool call"
	}
	if !confirmed {
		l.finish(delegation.DelegationCancelled, &delegation.DelegationError{Code: delegation.CodeCancelPending, RemoteStatus: label,
			Message: "Delegation cancelled because " + why + "; the remote agent has not confirmed the cancellation yet and the host keeps trying."})
		return
	}
	l.finish(delegation.DelegationCancelled, &delegation.DelegationError{Code: delegation.CodeCancelled, RemoteStatus: label, Message: "Delegation cancelled because " + why + "."})
}

// canceller returns what cancels the delegation's remote task, on this
// goroutine or a cleanup watcher's.
func (l *lifecycle) canceller() taskCanceller {
	a := l.a
	return taskCanceller{d: a.d, task: l.task, runID: a.req.RunID, id: a.id, agentKey: a.spec.Key}
}

// cancelRemote asks the remote to cancel the task (taskCanceller.cancel).
func (l *lifecycle) cancelRemote(ctx context.Context, reason string) remote.CancelOutcome {
	return l.canceller().cancel(ctx, reason, false)
}

// settleCancel records a cancellation's outcome; an unconfirmed one is
// announced (cancel_pending) and handed to a cleanup watcher.
func (l *lifecycle) settleCancel(out remote.CancelOutcome) {
	switch out {
	case remote.CancelNotNeeded:
	case remote.CancelConfirmed:
		ok := true
		l.cancelOK = &ok
	case remote.CancelUnaddressable:
		// The request that creates the task went out, but its response
		// never named the task: the remote may be running it, and it cannot
		// be cancelled by id. Do not claim a confirmed cancellation.
		ok := false
		l.cancelOK = &ok
	case remote.CancelPending:
		ok := false
		l.cancelOK = &ok
		l.publish(delegation.DelegationEvent{Kind: delegation.DelegationStatus, Status: string(delegation.CodeCancelPending), Text: "Cancellation requested; waiting for the remote agent to confirm."})
		l.a.d.startWatcher(l.a.log, l.canceller())
	}
}

// fail finishes the delegation for a client error.
func (l *lifecycle) fail(err error) {
	a := l.a
	a.log.Warn("delegation failed", "remote_task_id", l.tr.TaskID(), "error", a.d.reg.Secrets().Redact(sanitize.Truncate(err.Error(), 500)))
	derr := FailureOf(err, l.tr.State().Label())
	if l.tr.TaskID() != "" && !l.tr.State().Terminal() {
		l.settleCancel(l.cancelRemote(context.Background(), string(derr.Code)))
	}
	l.finish(delegation.DelegationFailed, derr)
}

// finish publishes the terminal event (once).
func (l *lifecycle) finish(kind delegation.DelegationEventKind, derr *delegation.DelegationError) {
	l.emit(l.tr.Finish(kind, derr)...)
}

// emit publishes events of the task, in order (the task's Emit): the
// publisher puts a subagent.started first (the protocol's, or one
// synthesized).
func (l *lifecycle) emit(evs ...delegation.DelegationEvent) {
	for _, ev := range evs {
		l.publish(ev)
	}
}

// publish sends ev with the remote ids as the transcript stands.
func (l *lifecycle) publish(ev delegation.DelegationEvent) {
	l.a.pub.publish(ev, remoteIDs{task: l.tr.TaskID(), context: l.tr.ContextID()})
}

// snapshot is the tool result as the transcript stands, without status.
func (l *lifecycle) snapshot() delegation.Result {
	a := l.a
	red := a.d.reg.Secrets().Redact
	tr := l.tr
	res := delegation.Result{DelegationID: a.id, Agent: a.spec.Key, RemoteProtocol: a.spec.Protocol, RemoteTaskID: tr.TaskID(), RemoteContextID: tr.ContextID(),
		Summary: red(tr.Summary()), Artifacts: tr.Artifacts(), Messages: tr.Messages()}
	for i := range res.Messages {
		res.Messages[i].Text = red(res.Messages[i].Text)
	}
	for i := range res.Artifacts {
		art := &res.Artifacts[i]
		art.ID, art.Name, art.URI = red(art.ID), red(art.Name), red(art.URI)
	}
	if tr.TaskID() != "" {
		res.RawTask = &delegation.RawTask{Provider: a.spec.Protocol, TaskID: tr.TaskID()}
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
func (l *lifecycle) parkedResult() delegation.Result {
	a := l.a
	red := a.d.reg.Secrets().Redact
	res := l.snapshot()
	question := red(l.tr.Question())
	res.Status = delegation.StatusInputRequired
	res.Question = question
	res.Continue = &delegation.ContinueRef{DelegationID: a.id}
	res.Error = &delegation.DelegationError{Code: delegation.CodeInputRequired, Retryable: true, RemoteStatus: l.tr.State().Label(),
		Message: fmt.Sprintf("The remote agent needs more input%s Answer it (ask your user if you cannot), then call the tool again with "+
			`continue: {"delegation_id": %q} and the answer as objective, within %s; the remote task waits until then.`,
			remote.Suffix(question), a.id, a.spec.Policy.MaxTimeout)}
	a.log.Info("delegation parked: the question was returned to the parent", "remote_task_id", l.tr.TaskID())
	return res
}

// result builds the final tool result, completes the audit record and
// logs the end.
func (l *lifecycle) result() delegation.Result {
	a := l.a
	d := a.d
	red := d.reg.Secrets().Redact
	tr := l.tr
	res := l.snapshot()
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
	d.audit.End(audit.Record{DelegationID: a.id, RunID: a.req.RunID, ParentToolCallID: d.corr.ParentOf(a.id), AgentKey: a.spec.Key,
		AgentName: a.spec.DisplayName, Protocol: a.spec.Protocol, Tenant: a.spec.Tenant, RemoteTaskID: tr.TaskID(), RemoteContextID: tr.ContextID(),
		CardFingerprint: l.fingerprint, Mode: l.mode, Objective: a.objective(), Status: res.Status, Result: &res,
		StartedAt: a.start, EndedAt: end, DurationMS: end.Sub(a.start).Milliseconds(), Recovered: l.recovered, CancelConfirmed: l.cancelOK})
	code := ""
	if res.Error != nil {
		code = string(res.Error.Code)
	}
	a.log.Info("delegation finished", "status", res.Status, "code", code, "remote_task_id", tr.TaskID(), "duration_ms", end.Sub(a.start).Milliseconds())
	return res
}
