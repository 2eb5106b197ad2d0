package delegator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/seed0634/agentadaptor/internal/sanitize"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// Config configures a Delegator. Registry is required; every other field
// has a documented default.
type Config struct {
	// Registry is the host-curated set of remote agents.
	Registry *registry.Registry
	// Bus carries delegation events to the UI (default:
	// delegation.NewMemoryBus()). The host closes a run's stream
	// (Bus.CloseRun) when its UI stream ends.
	Bus delegation.EventBus
	// Audit records every delegation (default: audit.NewMemory).
	Audit audit.Store
	// Artifacts stores remote artifacts (default: artifact.NewMemoryStore, 256 MiB).
	Artifacts artifact.Store
	// Logger receives operational logs; secrets never reach it (default: discard).
	Logger *slog.Logger
	// CancelTimeout bounds one remote cancellation (default 5s).
	CancelTimeout time.Duration
	// CleanupInterval, CleanupAttempts, CleanupSlowInterval and
	// CleanupRetention tune the watcher that keeps cancelling a remote task
	// whose cancellation was not confirmed: the first retry comes after
	// CleanupInterval (default 5s), each next one after twice the delay,
	// every delay jittered (between half and all of it); a task gets at
	// most CleanupAttempts cancellations (default 3, the first one
	// included) in its first minute, then one every CleanupSlowInterval
	// (default 1h, jittered) until CleanupRetention (default 24h) after the
	// first.
	CleanupInterval     time.Duration
	CleanupAttempts     int
	CleanupSlowInterval time.Duration
	CleanupRetention    time.Duration
	// CancelClaim, when set, is asked before the host sends a remote task
	// its cancellation (every attempt, see CancelTurn): CancelOthers means
	// another process of a scaled-out host cancels that task, so this one
	// does not (the cancellation counts as done here); CancelMineAgain
	// that this process claimed it before, so the task is read first; an
	// error means it cannot tell now (the cancellation counts as pending
	// and is retried). Nil: every cancellation is sent, every retry reads
	// the task first.
	CancelClaim func(ctx context.Context, runID, delegationID string) (CancelTurn, error)
	// Contexts remembers the sticky remote contexts (default: in memory,
	// NewMemoryContexts).
	Contexts ContextStore
	// FailOnCardError makes New fail when a startup card fetch fails;
	// otherwise the agent is left out (malformed card) or retried on first
	// call (unreachable), and the problem is logged.
	FailOnCardError bool
	// Observer, if set, takes part in every Delegate call for the host's
	// telemetry (docs/design.md#observability); nil observes nothing.
	Observer Observer
}

// CancelTurn is Config.CancelClaim's answer: whether this process sends
// a remote task its cancellation (docs/design.md#scale-out).
type CancelTurn int

const (
	// CancelMine: this process cancels the task, and asks for the first
	// time: the cancellation is sent.
	CancelMine CancelTurn = iota
	// CancelMineAgain: this process cancels the task and claimed it
	// before — a cleanup retry, a claim whose answer was lost, or a second
	// path of the same process (a run it both ran and ended as lost). An
	// earlier cancellation may have reached the remote, so the task is
	// read first and sent the cancellation only if it still runs
	// (remote.CancelRetrier).
	CancelMineAgain
	// CancelOthers: another process cancels the task; this one sends
	// nothing, and the cancellation counts as done here.
	CancelOthers
)

// Observer sees delegations for the host's telemetry
// (docs/design.md#observability): traces and metrics live behind it, so
// the delegator imports neither. Its methods must not block.
type Observer interface {
	// DelegationStarted is called when a Delegate call begins. The call
	// continues under the context it returns (so every remote call of the
	// delegation is made under it: it may carry a trace span, and the
	// delegation's log lines carry it too); end is called exactly once,
	// with the call's result, when the call returns.
	DelegationStarted(ctx context.Context, d ObservedDelegation) (_ context.Context, end func(delegation.Result))
	// RemoteError reports a remote failure the delegation survived: a cut
	// stream it re-attached to (code stream_interrupted). Failures that end
	// a delegation are in the Result given to end.
	RemoteError(agent string, code delegation.FailureCode)
}

// ObservedDelegation identifies a Delegate call to an [Observer]. It holds
// no model or remote text: Agent is the registry key, "" when the requested
// agent is not registered.
type ObservedDelegation struct {
	RunID        string
	DelegationID string // for a continuing call, the delegation it continues
	Agent        string
	Protocol     string // "a2a" or "agui"; "" when Agent is ""
	Continue     bool   // the call continues a parked delegation (Request.Continue)
}

func (c *Config) defaults() {
	if c.Bus == nil {
		c.Bus = delegation.NewMemoryBus()
	}
	if c.Audit == nil {
		c.Audit = audit.NewMemory(audit.Options{})
	}
	if c.Artifacts == nil {
		c.Artifacts = artifact.NewMemoryStore(0)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Contexts == nil {
		c.Contexts = NewMemoryContexts(0)
	}
	if c.CancelTimeout <= 0 {
		c.CancelTimeout = 5 * time.Second
	}
	if c.CleanupInterval <= 0 {
		c.CleanupInterval = 5 * time.Second
	}
	if c.CleanupAttempts <= 0 {
		c.CleanupAttempts = 3
	}
	if c.CleanupSlowInterval <= 0 {
		c.CleanupSlowInterval = time.Hour
	}
	if c.CleanupRetention <= 0 {
		c.CleanupRetention = 24 * time.Hour
	}
}

// Delegator runs delegations: for each [Request] it reaches the remote
// agent through the registry and its protocol's remote.Task, publishes the
// remote's progress on the bus, records the audit, stores the artifacts
// and returns the structured [delegation.Result].
//
// Goroutine ownership: Delegate runs on its caller's goroutine (the MCP
// tool call); the protocol clients own their stream readers and the task
// closes them. Cleanup watchers (one per delegation whose remote
// cancellation was not confirmed) are owned by the Delegator. Close
// cancels every delegation and watcher and waits for them: after it
// returns no goroutine of the Delegator is left. Bus subscriptions belong
// to their subscribers.
type Delegator struct {
	cfg       Config
	reg       *registry.Registry
	bus       delegation.EventBus
	audit     audit.Store
	artifacts artifact.Store
	log       *slog.Logger
	corr      *Correlator

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	runs     map[string]*runState
	active   map[string]*activeDelegation
	all      activity
	watchers map[string]context.CancelFunc
	wg       sync.WaitGroup
}

// runState is one live parent run.
type runState struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	active activity
}

// activity counts the active delegations of a scope and lets callers wait
// until there are none. Guarded by Delegator.mu.
type activity struct {
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n == 0
}

func (a *activity) add() {
	if a.n == 0 {
		a.idle = make(chan struct{})
	}
	a.n++
}

func (a *activity) done() {
	a.n--
	if a.n == 0 {
		close(a.idle)
		a.idle = nil
	}
}

// waitIdle waits until a has no active delegation or ctx ends.
func (d *Delegator) waitIdle(ctx context.Context, a *activity) error {
	d.mu.Lock()
	idle := a.idle
	d.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Errors of the Delegator's run and input API.
var (
	ErrUnknownDelegation  = errors.New("no active delegation with this id in this run")
	ErrNotWaitingForInput = errors.New("the delegation is not waiting for input")
	ErrEmptyAnswer        = errors.New("the answer text is empty")
	ErrClosed             = errors.New("the delegator is closed")
)

// Causes of a delegation's context ending.
var (
	errHostTimeout  = errors.New("host timeout")
	errRunEnded     = errors.New("parent run ended")
	errClosed       = errors.New("delegation service closed")
	errParentCancel = errors.New("parent cancelled")
)

// New builds a Delegator and connects the registry's startup agents
// (bounded by ctx; see registry.Registry.Load).
func New(ctx context.Context, cfg Config) (*Delegator, error) {
	if cfg.Registry == nil {
		return nil, errors.New("delegator: Config.Registry is required")
	}
	cfg.defaults()
	d := &Delegator{cfg: cfg, reg: cfg.Registry, bus: cfg.Bus, audit: cfg.Audit, artifacts: cfg.Artifacts, log: cfg.Logger,
		runs: map[string]*runState{}, active: map[string]*activeDelegation{}, watchers: map[string]context.CancelFunc{}}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	if err := d.reg.Load(ctx); err != nil {
		if cfg.FailOnCardError {
			// The caller reports it (once, as the reason it cannot start).
			d.cancel()
			d.reg.Close()
			return nil, fmt.Errorf("delegator: %w", err)
		}
		d.log.Warn("remote agent registry: startup problems", "error", d.reg.Secrets().Redact(err.Error()))
	}
	tools := []string{registry.ReservedToolName}
	for _, k := range d.reg.Keys() {
		if spec, _ := d.reg.Spec(k); spec.Shortcut != "" {
			tools = append(tools, spec.Shortcut)
		}
	}
	d.corr = NewCorrelator(d.onCorrelated, tools...)
	return d, nil
}

// Registry returns the delegator's registry.
func (d *Delegator) Registry() *registry.Registry { return d.reg }

// Bus returns the event bus the delegator publishes to.
func (d *Delegator) Bus() delegation.EventBus { return d.bus }

// Audit returns the audit store.
func (d *Delegator) Audit() audit.Store { return d.audit }

// Artifacts returns the artifact store.
func (d *Delegator) Artifacts() artifact.Store { return d.artifacts }

// Correlator returns the correlator of delegations and parent tool calls.
func (d *Delegator) Correlator() *Correlator { return d.corr }

// MaxDelegationTime is the longest one Delegate call can take: the largest
// policy timeout plus the remote cancellation bound. A caller blocking on
// Delegate (an MCP tool call) should allow at least this long.
func (d *Delegator) MaxDelegationTime() time.Duration {
	var longest time.Duration
	for _, k := range d.reg.Keys() {
		if spec, ok := d.reg.Spec(k); ok {
			longest = max(longest, spec.Policy.MaxTimeout)
		}
	}
	if longest == 0 {
		longest = registry.DefaultMaxTimeout
	}
	return longest + d.cfg.CancelTimeout
}

// Stats is a snapshot of the delegator's live state.
type Stats struct {
	LiveRuns          int `json:"live_runs"`
	ActiveDelegations int `json:"active_delegations"`
	CleanupWatchers   int `json:"cleanup_watchers"`
}

// Stats returns a snapshot of live runs, active delegations and watchers.
func (d *Delegator) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Stats{LiveRuns: len(d.runs), ActiveDelegations: len(d.active), CleanupWatchers: len(d.watchers)}
}

// BeginRun makes runID a live parent run: its delegations are cancelled
// together by CancelRun and EndRun. Beginning a live run again is a no-op.
// It fails with ErrClosed after Close.
func (d *Delegator) BeginRun(runID string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if d.runs[runID] == nil {
		ctx, cancel := context.WithCancelCause(d.ctx)
		d.runs[runID] = &runState{ctx: ctx, cancel: cancel}
	}
	return nil
}

// CancelRun cancels runID's delegations now, cascading to their remote
// tasks, without ending the run: its tool calls still return their
// cancelled results. It is what a parent run's cancellation triggers,
// before its CLI has exited.
func (d *Delegator) CancelRun(runID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if rs := d.runs[runID]; rs != nil {
		rs.cancel(errParentCancel)
	}
}

// EndRun ends runID: its delegations are cancelled (cascading to the
// remote tasks even when the parent never cancelled its tool calls), EndRun
// waits for them (bounded by ctx), and everything kept for the run is
// forgotten (sticky per-run contexts, correlation).
func (d *Delegator) EndRun(ctx context.Context, runID string) error {
	d.mu.Lock()
	rs := d.runs[runID]
	if rs != nil {
		rs.cancel(errRunEnded)
	}
	d.mu.Unlock()
	var err error
	if rs != nil {
		err = d.waitIdle(ctx, &rs.active)
	}
	d.mu.Lock()
	if d.runs[runID] == rs {
		delete(d.runs, runID)
	}
	d.mu.Unlock()
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), contextTimeout)
	d.cfg.Contexts.ForgetRun(fctx, runID)
	cancel()
	d.corr.ForgetRun(runID)
	return err
}

// track makes a an active delegation of the Delegator and of its run, if
// the run was begun; false after Close.
func (d *Delegator) track(a *activeDelegation) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.active[a.id] = a
	d.all.add()
	if rs := d.runs[a.req.RunID]; rs != nil {
		a.run = rs
		rs.active.add()
	}
	return true
}

func (d *Delegator) untrack(a *activeDelegation) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.active, a.id)
	d.all.done()
	if a.run != nil {
		a.run.active.done()
	}
}

// setWaiting says whether a accepts an answer from the UI now; waiting
// for a new question drops a stale answer of an earlier one.
func (d *Delegator) setWaiting(a *activeDelegation, w bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if w {
		select {
		case <-a.wait.answer: // a stale answer of an earlier question
		default:
		}
	}
	a.wait.waiting = w
}

// awaitAnswer waits for the UI's answer to a's question (AnswerInput),
// keeping an answer that already arrived, or for ctx's end (ok false).
func (d *Delegator) awaitAnswer(ctx context.Context, a *activeDelegation) (answer string, ok bool) {
	d.mu.Lock()
	if !a.wait.waiting && len(a.wait.answer) == 0 {
		a.wait.waiting = true
	}
	d.mu.Unlock()
	select {
	case answer = <-a.wait.answer:
	case <-ctx.Done():
	}
	d.setWaiting(a, false)
	return answer, ctx.Err() == nil
}

// AnswerInput answers the input-required question of an active delegation
// of runID: the text is sent to the same remote task and context. It
// returns ErrUnknownDelegation, ErrNotWaitingForInput or ErrEmptyAnswer.
func (d *Delegator) AnswerInput(ctx context.Context, runID, delegationID, text string) error {
	if strings.TrimSpace(text) == "" {
		return ErrEmptyAnswer
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	a := d.active[delegationID]
	if a == nil || a.req.RunID != runID {
		return ErrUnknownDelegation
	}
	if !a.wait.waiting {
		return ErrNotWaitingForInput
	}
	a.wait.waiting = false
	a.wait.answer <- text // buffered; drained when waiting began
	return nil
}

// InputHandler serves POST /agui/runs/{runId}/delegations/{delegationId}/input
// with body {"text": "..."}: 202 when the answer was handed to the
// delegation, 404 for an unknown delegation, 409 when it is not waiting
// for input, 400 for a bad body. Errors are JSON {"error":{code,message}}.
func (d *Delegator) InputHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /agui/runs/{runId}/delegations/{delegationId}/input", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Text string `json:"text"`
		}
		dec := json.NewDecoder(io.LimitReader(r.Body, maxPromptBytes+1024))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			writeJSON(w, http.StatusBadRequest, errorBody("invalid_body", `body must be {"text": "..."}`))
			return
		}
		runID, delID := r.PathValue("runId"), r.PathValue("delegationId")
		switch err := d.AnswerInput(r.Context(), runID, delID, body.Text); {
		case err == nil:
			writeJSON(w, http.StatusAccepted, map[string]string{"status": "accepted", "delegation_id": delID})
		case errors.Is(err, ErrEmptyAnswer):
			writeJSON(w, http.StatusBadRequest, errorBody("empty_answer", err.Error()))
		case errors.Is(err, ErrUnknownDelegation):
			writeJSON(w, http.StatusNotFound, errorBody("delegation_not_found", err.Error()))
		case errors.Is(err, ErrNotWaitingForInput):
			writeJSON(w, http.StatusConflict, errorBody("not_waiting_for_input", err.Error()))
		default:
			writeJSON(w, http.StatusServiceUnavailable, errorBody("unavailable", err.Error()))
		}
	})
	return mux
}

func errorBody(code, msg string) map[string]any {
	return map[string]any{"error": map[string]string{"code": code, "message": msg}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// park leaves a waiting for its parent's answer (input_required policy
// "return"): it stays active (its run and Close wait for it, its
// concurrency slot stays taken) until a call continues it (resume), or a
// park watcher owned by the Delegator ends it: after the policy's
// MaxTimeout (the remote task is cancelled, input_required), when its run
// ends or is cancelled, or when the Delegator closes. Its lifecycle is
// then that call's or that watcher's.
func (d *Delegator) park(a *activeDelegation) {
	resumed := make(chan struct{})
	d.mu.Lock()
	a.wait.parked, a.wait.resumed = true, resumed
	d.wg.Add(1)
	d.mu.Unlock()
	go d.watchParked(a, resumed)
}

// unpark hands the parked delegation req.Continue names to the calling
// tool call, or says why it cannot.
func (d *Delegator) unpark(req Request) (*activeDelegation, *delegation.DelegationError) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a := d.active[req.Continue]
	if a == nil || a.req.RunID != req.RunID || !a.wait.parked {
		return nil, &delegation.DelegationError{Code: delegation.CodeInvalidInput, Message: fmt.Sprintf(
			"continue.delegation_id %q names no delegation of this run that waits for an answer (it may have ended, timed out, "+
				"be running, or never have returned input_required); start a new delegation instead", sanitize.Line(req.Continue, 64))}
	}
	if a.spec.Key != req.Agent {
		return nil, &delegation.DelegationError{Code: delegation.CodeInvalidInput, Message: fmt.Sprintf(
			"continue.delegation_id %q is a delegation to agent %q, not %q", a.id, a.spec.Key, sanitize.Line(req.Agent, 64))}
	}
	a.wait.parked, a.life.park = false, false
	close(a.wait.resumed)
	return a, nil
}

// claimParked takes a parked delegation for its watcher; false when a
// continuing call took it first.
func (d *Delegator) claimParked(a *activeDelegation) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !a.wait.parked {
		return false
	}
	a.wait.parked = false
	return true
}

// watchParked ends a parked delegation nobody continues: see park.
func (d *Delegator) watchParked(a *activeDelegation, resumed <-chan struct{}) {
	defer d.wg.Done()
	timer := time.NewTimer(a.spec.Policy.MaxTimeout)
	defer timer.Stop()
	var runDone <-chan struct{}
	if a.run != nil {
		runDone = a.run.ctx.Done()
	}
	var cause error
	select {
	case <-resumed:
		return
	case <-timer.C:
		cause = errHostTimeout
	case <-runDone:
		cause = context.Cause(a.run.ctx)
	case <-d.ctx.Done():
		cause = errClosed
	}
	if !d.claimParked(a) {
		return
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	if cause == errHostTimeout {
		a.life.inputTimeout(ctx)
	} else {
		a.life.stopped(ctx)
	}
	a.life.end()
}

// stickyKey returns the key under which a sticky context is remembered
// (false for ephemeral).
func stickyKey(req Request, spec registry.RemoteAgentSpec) (ContextKey, bool) {
	switch spec.Policy.ContextPolicy {
	case registry.ContextStickyPerParentThreadAgent:
		if req.SessionKey != "" {
			return ContextKey{Thread: req.SessionKey, Agent: spec.Key}, true
		}
		return ContextKey{Run: req.RunID, Agent: spec.Key}, true
	case registry.ContextStickyPerRunAgent:
		return ContextKey{Run: req.RunID, Agent: spec.Key}, true
	}
	return ContextKey{}, false
}

// contextTimeout bounds one ContextStore call.
const contextTimeout = 2 * time.Second

// stickyContext returns the remembered remote context for req ("" for
// none); unreadable reports a remembered context that could not be read.
func (d *Delegator) stickyContext(req Request, spec registry.RemoteAgentSpec) (id string, unreadable bool) {
	k, ok := stickyKey(req, spec)
	if !ok {
		return "", false
	}
	ctx, cancel := context.WithTimeout(d.ctx, contextTimeout)
	defer cancel()
	if l, ok := d.cfg.Contexts.(ContextLookup); ok {
		var err error
		id, _, err = l.Lookup(ctx, k)
		if err != nil {
			unreadable = true
			if o, ok := d.cfg.Observer.(ContextObserver); ok {
				o.StickyContextUnreadable(spec.Key)
			}
		}
		return id, unreadable
	}
	id, _ = d.cfg.Contexts.Get(ctx, k)
	return id, false
}

// maxStickyContexts bounds the remembered sticky contexts (MemoryContexts).
const maxStickyContexts = 100000

func (d *Delegator) rememberContext(req Request, spec registry.RemoteAgentSpec, contextID string) {
	k, ok := stickyKey(req, spec)
	if !ok || contextID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(d.ctx, contextTimeout)
	defer cancel()
	d.cfg.Contexts.Put(ctx, k, contextID)
}

// onCorrelated announces a parent tool call found after the delegation started.
func (d *Delegator) onCorrelated(runID, delegationID, parentID string) {
	d.mu.Lock()
	a := d.active[delegationID]
	d.mu.Unlock()
	ev := delegation.DelegationEvent{RunID: runID, DelegationID: delegationID, ParentToolCallID: parentID, Kind: delegation.DelegationStatus, Status: delegation.StatusCorrelated, Time: time.Now()}
	if a != nil {
		a.pub.announce(ev)
		return
	}
	// Already finished: announce with what the audit log knows.
	for _, r := range d.audit.ListRun(runID) {
		if r.DelegationID == delegationID {
			ev.AgentKey, ev.AgentName, ev.Protocol = r.AgentKey, r.AgentName, r.Protocol
			ev.RemoteTaskID, ev.RemoteContextID = r.RemoteTaskID, r.RemoteContextID
		}
	}
	d.bus.Publish(ev)
}

// startWatcher keeps cancelling a remote task whose cancellation was not
// confirmed, until it is, the retention ends, or the delegator closes.
// Each retry reads the task first (taskCanceller.retry): a task the
// remote shows ended is not sent its cancellation again.
func (d *Delegator) startWatcher(log *slog.Logger, c taskCanceller) {
	if c.task == nil {
		return
	}
	d.watch(c.id, log, c.retry)
}

// watch runs a cleanup watcher (owned by the Delegator) for the task of
// delegation id: cancel is retried on the schedule of cleanupDelay until
// it is confirmed (or not needed), CleanupRetention after the first
// attempt has passed, or the delegator closes. One watcher per delegation.
func (d *Delegator) watch(id string, log *slog.Logger, cancel func(context.Context) remote.CancelOutcome) {
	d.mu.Lock()
	if d.closed || d.watchers[id] != nil {
		d.mu.Unlock()
		return
	}
	ctx, stop := context.WithCancel(d.ctx)
	d.watchers[id] = stop
	d.wg.Add(1)
	d.mu.Unlock()
	log.Info("cleanup watcher started: the remote task's cancellation is not confirmed; retrying it gently")
	go func() {
		defer d.wg.Done()
		defer func() {
			stop()
			d.mu.Lock()
			delete(d.watchers, id)
			d.mu.Unlock()
		}()
		first := time.Now()
		for attempt := 1; ; attempt++ { // attempt 1 was the cancellation that started the watcher
			wait, ok := d.cleanupDelay(attempt, time.Since(first))
			if !ok {
				log.Warn("cleanup watcher gave up cancelling the remote task: its retention ended", "attempts", attempt)
				return
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			if out := cancel(ctx); out == remote.CancelConfirmed || out == remote.CancelNotNeeded {
				log.Info("remote task cancellation confirmed by cleanup watcher", "attempt", attempt+1)
				return
			}
		}
	}()
}

// cleanupDelay is how long a cleanup watcher waits before the next
// cancellation of a task that had attempts of them, the first elapsed
// ago: exponential from CleanupInterval while the task has had fewer than
// CleanupAttempts and the next one still falls in its first minute, then
// CleanupSlowInterval; each delay jittered to between half and all of
// it. ok is false once the next attempt would fall after
// CleanupRetention.
func (d *Delegator) cleanupDelay(attempts int, elapsed time.Duration) (wait time.Duration, ok bool) {
	wait = d.cfg.CleanupInterval << min(attempts-1, 20)
	if attempts >= d.cfg.CleanupAttempts || wait <= 0 || elapsed+wait > time.Minute {
		wait = max(d.cfg.CleanupSlowInterval, time.Minute-elapsed)
	}
	wait = wait/2 + rand.N(wait/2+1)
	return wait, elapsed+wait <= d.cfg.CleanupRetention
}

// Close cancels every active delegation (cascading to the remote tasks,
// bounded by CancelTimeout) and cleanup watcher, waits for them (bounded
// by ctx) and releases the registry's connections.
func (d *Delegator) Close(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	for _, rs := range d.runs {
		rs.cancel(errClosed)
	}
	d.mu.Unlock()
	d.cancel()
	err := d.waitIdle(ctx, &d.all)
	d.wg.Wait()
	d.reg.Close()
	return err
}
