package a2adelegation

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	a2aclient "github.com/seed0634/agentadaptor/pkg/clients/a2a"
)

// Config configures a Service. Registry is required; everything else has
// a default.
type Config struct {
	// Registry is the host-curated set of remote agents.
	Registry *Registry
	// Bus carries delegation events to the UI (default: NewMemoryBus()).
	// The host closes a run's stream (Bus().CloseRun) when its UI stream ends.
	Bus EventBus
	// Audit records every delegation (default: in-memory).
	Audit AuditStore
	// Artifacts stores remote artifacts (default: in-memory, 256 MiB).
	Artifacts ArtifactStore
	// Logger receives operational logs; secrets never reach it (default: discard).
	Logger *slog.Logger
	// MCPAddr is where the MCP server listens; it must be a loopback
	// address (default "127.0.0.1:0").
	MCPAddr string
	// CancelTimeout bounds one remote CancelTask call (default 5s).
	CancelTimeout time.Duration
	// PollInterval and MaxPollInterval pace GetTask polling of
	// non-streaming agents (defaults 250ms and 2s; the interval grows 1.5x).
	PollInterval, MaxPollInterval time.Duration
	// RecoverAttempts and RecoverBackoff tune the recovery of a cut stream
	// (resubscribe, then get) before stream_interrupted (defaults 5, 200ms).
	RecoverAttempts int
	RecoverBackoff  time.Duration
	// CleanupInterval and CleanupAttempts tune the watcher that keeps
	// cancelling a remote task whose cancellation was not confirmed
	// (defaults 1s, doubling up to 30s, and 10 attempts).
	CleanupInterval time.Duration
	CleanupAttempts int
	// ToolTimeoutMargin is added to the largest policy MaxTimeout to form
	// the MCP tool timeout advertised to the parent CLI (default 30s).
	ToolTimeoutMargin time.Duration
	// FailOnCardError makes New fail when a startup card fetch fails;
	// otherwise the agent is left out (malformed card) or retried on first
	// call (unreachable), and the problem is logged.
	FailOnCardError bool
}

func (c *Config) defaults() {
	if c.Bus == nil {
		c.Bus = NewMemoryBus()
	}
	if c.Artifacts == nil {
		c.Artifacts = NewMemoryArtifactStore(0)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MCPAddr == "" {
		c.MCPAddr = "127.0.0.1:0"
	}
	if c.CancelTimeout <= 0 {
		c.CancelTimeout = 5 * time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 250 * time.Millisecond
	}
	if c.MaxPollInterval < c.PollInterval {
		c.MaxPollInterval = max(2*time.Second, c.PollInterval)
	}
	if c.RecoverAttempts <= 0 {
		c.RecoverAttempts = 5
	}
	if c.RecoverBackoff <= 0 {
		c.RecoverBackoff = 200 * time.Millisecond
	}
	if c.CleanupInterval <= 0 {
		c.CleanupInterval = time.Second
	}
	if c.CleanupAttempts <= 0 {
		c.CleanupAttempts = 10
	}
	if c.ToolTimeoutMargin <= 0 {
		c.ToolTimeoutMargin = 30 * time.Second
	}
}

// Service is the A2A delegation host tool: registry, delegator, event bus,
// audit, artifact store and the run-scoped MCP server exposing
// delegate_to_agent.
//
// Goroutine ownership: New starts one goroutine serving the MCP listener.
// Each tool call runs its delegation on the MCP server's request goroutine
// plus one progress-notification goroutine that ends with the call; A2A
// streams own their reader goroutine (pkg/clients/a2a) and are closed by
// the delegation. Cleanup watchers (one per delegation whose remote
// cancellation was not confirmed, keyed by DelegationID) are owned by the
// Service. Close cancels every delegation and watcher, waits for them,
// stops the listener and closes the MCP sessions: after Close returns, no
// goroutine of the Service is left. Bus subscriptions belong to their
// subscribers.
type Service struct {
	cfg       Config
	reg       *Registry
	bus       EventBus
	audit     AuditStore
	ownAudit  *MemoryAudit
	artifacts ArtifactStore
	log       *slog.Logger
	corr      *Correlator

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	runs     map[string]*runState
	tokens   map[[32]byte]*runState
	active   map[string]*delegation
	contexts map[string]string
	watchers map[string]context.CancelFunc
	wg       sync.WaitGroup

	mcp     *mcp.Server
	ln      net.Listener
	httpSrv *http.Server
	url     string
	tools   []string
}

// runState is one live parent run.
type runState struct {
	id         string
	sessionKey string
	tokens     [][32]byte
	ctx        context.Context
	cancel     context.CancelCauseFunc
	sessions   map[*mcp.ServerSession]bool
	active     int
}

// Errors of AnswerInput.
var (
	ErrUnknownDelegation  = errors.New("no active delegation with this id in this run")
	ErrNotWaitingForInput = errors.New("the delegation is not waiting for input")
	ErrEmptyAnswer        = errors.New("the answer text is empty")
	ErrServiceClosed      = errors.New("the delegation service is closed")
)

// New builds the service, fetches the startup agent cards (bounded by
// ctx) and starts the MCP server on a loopback listener.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Registry == nil {
		return nil, errors.New("a2adelegation: Config.Registry is required")
	}
	cfg.defaults()
	host, _, err := net.SplitHostPort(cfg.MCPAddr)
	if err != nil {
		return nil, fmt.Errorf("a2adelegation: MCPAddr %q: %v", cfg.MCPAddr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("a2adelegation: MCPAddr %q is not a loopback address; the delegation MCP server listens on loopback only", cfg.MCPAddr)
	}
	s := &Service{cfg: cfg, reg: cfg.Registry, bus: cfg.Bus, audit: cfg.Audit, artifacts: cfg.Artifacts, log: cfg.Logger,
		runs: map[string]*runState{}, tokens: map[[32]byte]*runState{}, active: map[string]*delegation{},
		contexts: map[string]string{}, watchers: map[string]context.CancelFunc{}}
	if s.audit == nil {
		s.ownAudit, _ = NewMemoryAudit("")
		s.audit = s.ownAudit
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.reg.Load(ctx); err != nil {
		s.log.Warn("remote agent registry: startup problems", "error", s.reg.red.str(err.Error()))
		if cfg.FailOnCardError {
			s.cancel()
			s.reg.Close()
			return nil, fmt.Errorf("a2adelegation: %w", err)
		}
	}
	s.tools = append([]string{ToolName}, s.shortcutNames()...)
	s.corr = NewCorrelator(s.onCorrelated, s.tools...)
	if err := s.startMCP(); err != nil {
		s.cancel()
		s.reg.Close()
		return nil, err
	}
	return s, nil
}

func (s *Service) shortcutNames() []string {
	var out []string
	for _, k := range s.reg.Keys() {
		if sc := s.reg.agents[k].spec.Shortcut; sc != "" {
			out = append(out, sc)
		}
	}
	return out
}

// Registry returns the service's registry.
func (s *Service) Registry() *Registry { return s.reg }

// Bus returns the event bus the service publishes to.
func (s *Service) Bus() EventBus { return s.bus }

// Audit returns the audit store.
func (s *Service) Audit() AuditStore { return s.audit }

// Correlator returns the correlator the UI mux feeds with parent tool
// calls (ObserveToolCall) for parents that send no tool call id.
func (s *Service) Correlator() *Correlator { return s.corr }

// ToolNames returns the MCP tool names offered: delegate_to_agent and the shortcuts.
func (s *Service) ToolNames() []string { return append([]string(nil), s.tools...) }

// MCPURL returns the loopback URL of the MCP endpoint.
func (s *Service) MCPURL() string { return s.url }

// AuditHandler serves GET /agui/runs/{runId}/delegations (JSON array of
// AuditRecord). Mount it on the host mux at that pattern or under /agui/runs/.
func (s *Service) AuditHandler() http.Handler { return auditHandler(s.audit) }

// ArtifactHandler serves GET
// /agui/runs/{runId}/delegations/{delegationId}/artifacts/{artifactId}.
func (s *Service) ArtifactHandler() http.Handler { return artifactHandler(s.artifacts) }

// Stats is a snapshot of the service's live state.
type Stats struct {
	LiveRuns          int `json:"live_runs"`
	ActiveDelegations int `json:"active_delegations"`
	CleanupWatchers   int `json:"cleanup_watchers"`
}

// Stats returns a snapshot of live runs, active delegations and watchers.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{LiveRuns: len(s.runs), ActiveDelegations: len(s.active), CleanupWatchers: len(s.watchers)}
}

func (s *Service) track(d *delegation) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.active[d.id] = d
	if rs := s.runs[d.req.RunID]; rs != nil {
		rs.active++
	}
	return true
}

func (s *Service) untrack(d *delegation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.active, d.id)
	if rs := s.runs[d.req.RunID]; rs != nil {
		rs.active--
	}
}

func (s *Service) runContext(runID string) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rs := s.runs[runID]; rs != nil {
		return rs.ctx
	}
	return nil
}

func (s *Service) setWaiting(d *delegation, w bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w {
		select {
		case <-d.input: // a stale answer of an earlier question
		default:
		}
	}
	d.waiting = w
}

// awaitInput makes sure d accepts an answer while it blocks on input,
// keeping an answer that already arrived.
func (s *Service) awaitInput(d *delegation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !d.waiting && len(d.input) == 0 {
		d.waiting = true
	}
}

// AnswerInput answers the input-required question of an active delegation
// of runID: the text is sent to the same remote task and context. It
// returns ErrUnknownDelegation, ErrNotWaitingForInput or ErrEmptyAnswer.
func (s *Service) AnswerInput(ctx context.Context, runID, delegationID, text string) error {
	if strings.TrimSpace(text) == "" {
		return ErrEmptyAnswer
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	d := s.active[delegationID]
	if d == nil || d.req.RunID != runID {
		s.mu.Unlock()
		return ErrUnknownDelegation
	}
	if !d.waiting {
		s.mu.Unlock()
		return ErrNotWaitingForInput
	}
	d.waiting = false
	d.input <- text // buffered; drained when waiting began
	s.mu.Unlock()
	return nil
}

// InputHandler serves POST /agui/runs/{runId}/delegations/{delegationId}/input
// with body {"text": "..."}: 202 when the answer was handed to the
// delegation, 404 for an unknown delegation, 409 when it is not waiting
// for input, 400 for a bad body. Errors are JSON {"error":{code,message}}.
func (s *Service) InputHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /agui/runs/{runId}/delegations/{delegationId}/input", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Text string `json:"text"`
		}
		dec := json.NewDecoder(io.LimitReader(r.Body, maxPromptBytes+1024))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			writeJSONError(w, http.StatusBadRequest, "invalid_body", `body must be {"text": "..."}`)
			return
		}
		runID, delID := r.PathValue("runId"), r.PathValue("delegationId")
		switch err := s.AnswerInput(r.Context(), runID, delID, body.Text); {
		case err == nil:
			writeJSON(w, http.StatusAccepted, map[string]string{"status": "accepted", "delegation_id": delID})
		case errors.Is(err, ErrEmptyAnswer):
			writeJSONError(w, http.StatusBadRequest, "empty_answer", err.Error())
		case errors.Is(err, ErrUnknownDelegation):
			writeJSONError(w, http.StatusNotFound, "delegation_not_found", err.Error())
		case errors.Is(err, ErrNotWaitingForInput):
			writeJSONError(w, http.StatusConflict, "not_waiting_for_input", err.Error())
		default:
			writeJSONError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
		}
	})
	return mux
}

// stickyKey returns the key under which a sticky context is remembered ("" for ephemeral).
func stickyKey(req Request, spec RemoteAgentSpec) string {
	switch spec.Policy.ContextPolicy {
	case ContextStickyPerParentThreadAgent:
		if req.SessionKey != "" {
			return "thread\x00" + req.SessionKey + "\x00" + spec.Key
		}
		return "run\x00" + req.RunID + "\x00" + spec.Key
	case ContextStickyPerRunAgent:
		return "run\x00" + req.RunID + "\x00" + spec.Key
	}
	return ""
}

func (s *Service) stickyContext(req Request, spec RemoteAgentSpec) string {
	k := stickyKey(req, spec)
	if k == "" {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.contexts[k]
}

func (s *Service) rememberContext(req Request, spec RemoteAgentSpec, contextID string) {
	k := stickyKey(req, spec)
	if k == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.contexts) < 100000 {
		s.contexts[k] = contextID
	}
}

// onCorrelated announces a parent tool call found after the delegation started.
func (s *Service) onCorrelated(runID, delegationID, parentID string) {
	s.mu.Lock()
	d := s.active[delegationID]
	s.mu.Unlock()
	ev := DelegationEvent{RunID: runID, DelegationID: delegationID, ParentToolCallID: parentID, Kind: DelegationStatus, Status: StatusCorrelated, Time: time.Now()}
	if d != nil {
		d.publish(ev)
		return
	}
	// Already finished: announce with what the audit log knows.
	for _, r := range s.audit.ListRun(runID) {
		if r.DelegationID == delegationID {
			ev.AgentKey, ev.AgentName, ev.Protocol = r.AgentKey, r.AgentName, r.Protocol
			ev.RemoteTaskID, ev.RemoteContextID = r.RemoteTaskID, r.RemoteContextID
		}
	}
	s.bus.Publish(ev)
}

// startWatcher keeps cancelling a remote task whose cancellation was not
// confirmed, until it is, attempts run out, or the service closes.
func (s *Service) startWatcher(delegationID, runID string, spec RemoteAgentSpec, c *a2aclient.Client, taskID string) {
	s.mu.Lock()
	if s.closed || s.watchers[delegationID] != nil || c == nil {
		s.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.watchers[delegationID] = cancel
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer func() {
			cancel()
			s.mu.Lock()
			delete(s.watchers, delegationID)
			s.mu.Unlock()
		}()
		wait := s.cfg.CleanupInterval
		for i := 0; i < s.cfg.CleanupAttempts; i++ {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			if s.cancelTask(c, spec, runID, delegationID, taskID, "cleanup") {
				s.log.Info("remote task cancellation confirmed by cleanup watcher", "delegation_id", delegationID, "run_id", runID, "agent", spec.Key, "attempt", i+1)
				return
			}
			wait = min(wait*2, 30*time.Second)
		}
		s.log.Warn("cleanup watcher gave up cancelling the remote task", "delegation_id", delegationID, "run_id", runID, "agent", spec.Key)
	}()
}

func (s *Service) logWarn(msg string, d *delegation, err error) {
	s.log.Warn(msg, "delegation_id", d.id, "run_id", d.req.RunID, "agent", d.spec.Key, "remote_task_id", d.m.taskID,
		"error", s.reg.red.str(shortText(err.Error(), 500)))
}

// Close cancels every active delegation (cascading to the remote tasks,
// bounded by CancelTimeout) and cleanup watcher, waits for them, stops the
// MCP server and releases the registry's clients. Bounded by ctx for the
// wait on delegations.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for _, rs := range s.runs {
		rs.cancel(errServiceClosed)
	}
	s.mu.Unlock()
	s.cancel()
	var err error
	for !s.idle() {
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-t.C:
		}
		t.Stop()
		if err != nil {
			break
		}
	}
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
	_ = s.httpSrv.Close()
	s.wg.Wait()
	s.reg.Close()
	if s.ownAudit != nil {
		_ = s.ownAudit.Close()
	}
	return err
}

func (s *Service) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.active) == 0
}

func tokenHash(token string) [32]byte { return sha256.Sum256([]byte(token)) }
