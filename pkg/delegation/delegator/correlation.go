package delegator

import (
	"errors"
	"strings"
	"sync"
	"time"
)

// CorrelationLevel says how a delegation was tied to its parent tool call.
type CorrelationLevel string

// Correlation levels (docs/design.md#correlation).
const (
	// CorrelationStrong: run from the per-run token, parent tool call id from _meta.
	CorrelationStrong CorrelationLevel = "strong"
	// CorrelationMedium: run from the token, parent tool call by call order.
	CorrelationMedium CorrelationLevel = "medium"
	// CorrelationPending: run known, parent tool call not (yet) observed.
	CorrelationPending CorrelationLevel = "pending"
	// CorrelationWeak: run and tool call guessed by time (diagnostic only).
	CorrelationWeak CorrelationLevel = "weak"
)

// Errors of weak correlation.
var (
	// ErrWeakAmbiguous: more than one unclaimed delegate tool call is in
	// the window; weak correlation refuses to guess.
	ErrWeakAmbiguous = errors.New("weak correlation: ambiguous, more than one unclaimed delegate tool call in the window")
	// ErrWeakNoCandidate: no unclaimed delegate tool call is in the window.
	ErrWeakNoCandidate = errors.New("weak correlation: no unclaimed delegate tool call in the window")
)

// Correlator ties delegations to parent tool calls.
//
// Strong correlation needs nothing from the UI side: the MCP request names
// its run (token) and tool call (_meta). For parents that send no tool call
// id, the UI mux calls ObserveToolCall for every parent tool_call.start;
// delegations of a run that have no parent id are then paired with the
// run's delegate tool calls in call order (medium correlation), whichever
// side arrives first. A pairing found after the delegation started is
// announced through the callback given to NewCorrelator.
//
// Weak (temporal) correlation, for a shared MCP server without run
// tokens, is a diagnostic mode only: see ResolveWeak.
//
// Safe for concurrent use.
type Correlator struct {
	mu        sync.Mutex
	toolNames map[string]bool
	onResolve func(runID, delegationID, parentToolCallID string)
	now       func() time.Time

	runs     map[string]*corrRun
	parentOf map[string]string
	level    map[string]CorrelationLevel
}

type observedCall struct {
	id string
	at time.Time
}

type corrRun struct {
	calls   []observedCall // observed, unclaimed delegate tool calls, in order
	delegs  []string       // delegations without a parent, in start order
	claimed map[string]bool
	delegOf map[string]bool
}

// NewCorrelator returns a correlator recognising the given tool names
// (delegate_to_agent and the shortcuts; MCP-prefixed forms such as
// mcp__a2a-delegation__delegate_to_agent match too). onResolve, if not
// nil, is called (outside the correlator's lock) when a pending delegation
// gets its parent tool call.
func NewCorrelator(onResolve func(runID, delegationID, parentToolCallID string), toolNames ...string) *Correlator {
	c := &Correlator{toolNames: map[string]bool{}, onResolve: onResolve, now: time.Now,
		runs: map[string]*corrRun{}, parentOf: map[string]string{}, level: map[string]CorrelationLevel{}}
	for _, n := range toolNames {
		c.toolNames[n] = true
	}
	return c
}

// IsDelegationTool reports whether a parent tool name is one of the
// delegation tools, bare or MCP-prefixed (mcp__<server>__<tool>).
func (c *Correlator) IsDelegationTool(name string) bool {
	if c.toolNames[name] {
		return true
	}
	if i := strings.LastIndex(name, "__"); i >= 0 && strings.HasPrefix(name, "mcp__") {
		return c.toolNames[name[i+2:]]
	}
	return false
}

func (c *Correlator) run(runID string) *corrRun {
	r := c.runs[runID]
	if r == nil {
		r = &corrRun{claimed: map[string]bool{}, delegOf: map[string]bool{}}
		c.runs[runID] = r
	}
	return r
}

// ObserveToolCall records a parent tool_call.start. Calls of other tools
// are ignored. If a delegation of the run is waiting for its parent, the
// first one is paired with this call and its id is returned (and
// announced through the callback).
func (c *Correlator) ObserveToolCall(runID, toolCallID, toolName string) (delegationID string) {
	if toolCallID == "" || !c.IsDelegationTool(toolName) {
		return ""
	}
	c.mu.Lock()
	r := c.run(runID)
	if r.claimed[toolCallID] {
		c.mu.Unlock()
		return ""
	}
	for _, oc := range r.calls {
		if oc.id == toolCallID {
			c.mu.Unlock()
			return ""
		}
	}
	if len(r.delegs) == 0 {
		r.calls = append(r.calls, observedCall{id: toolCallID, at: c.now()})
		c.mu.Unlock()
		return ""
	}
	d := r.delegs[0]
	r.delegs = r.delegs[1:]
	r.claimed[toolCallID] = true
	c.parentOf[d] = toolCallID
	c.level[d] = CorrelationMedium
	cb := c.onResolve
	c.mu.Unlock()
	if cb != nil {
		cb(runID, d, toolCallID)
	}
	return d
}

// Register records a delegation of runID. With a parent id from the
// request (strong) that id is used and claimed; otherwise the first
// unclaimed observed delegate tool call of the run is used (medium), or
// the delegation waits for one (pending).
func (c *Correlator) Register(runID, delegationID, parentToolCallID string) (string, CorrelationLevel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.run(runID)
	r.delegOf[delegationID] = true
	if parentToolCallID != "" {
		r.claimed[parentToolCallID] = true
		for i, oc := range r.calls {
			if oc.id == parentToolCallID {
				r.calls = append(r.calls[:i], r.calls[i+1:]...)
				break
			}
		}
		c.parentOf[delegationID] = parentToolCallID
		c.level[delegationID] = CorrelationStrong
		return parentToolCallID, CorrelationStrong
	}
	if len(r.calls) > 0 {
		id := r.calls[0].id
		r.calls = r.calls[1:]
		r.claimed[id] = true
		c.parentOf[delegationID] = id
		c.level[delegationID] = CorrelationMedium
		return id, CorrelationMedium
	}
	r.delegs = append(r.delegs, delegationID)
	c.level[delegationID] = CorrelationPending
	return "", CorrelationPending
}

// ParentOf returns the parent tool call id of a delegation ("" if unknown).
func (c *Correlator) ParentOf(delegationID string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parentOf[delegationID]
}

// Level returns how a delegation was correlated ("" if unknown).
func (c *Correlator) Level(delegationID string) CorrelationLevel {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.level[delegationID]
}

// ForgetRun drops everything known about a run (call it when the run ended).
func (c *Correlator) ForgetRun(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.runs[runID]; r != nil {
		for d := range r.delegOf {
			delete(c.parentOf, d)
			delete(c.level, d)
		}
	}
	delete(c.runs, runID)
}

// ResolveWeak is the diagnostic weak (temporal) correlation for an MCP
// request that carries neither a run token nor a tool call id: it claims
// the only unclaimed delegate tool call observed, across all runs, within
// window of now. It refuses to guess when there are several
// (ErrWeakAmbiguous) and fails with ErrWeakNoCandidate when there is none.
//
// Known failure modes (see the tests): an observed call whose MCP request
// never arrives (a client-side failure) is later claimed by an unrelated
// request; a retried request finds no candidate; parallel calls are
// refused. Never use it as the production default.
func (c *Correlator) ResolveWeak(delegationID string, window time.Duration) (runID, toolCallID string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	type cand struct {
		run string
		idx int
	}
	var found []cand
	for id, r := range c.runs {
		for i, oc := range r.calls {
			if now.Sub(oc.at) <= window {
				found = append(found, cand{id, i})
			}
		}
	}
	switch {
	case len(found) == 0:
		return "", "", ErrWeakNoCandidate
	case len(found) > 1:
		return "", "", ErrWeakAmbiguous
	}
	r := c.runs[found[0].run]
	oc := r.calls[found[0].idx]
	r.calls = append(r.calls[:found[0].idx], r.calls[found[0].idx+1:]...)
	r.claimed[oc.id] = true
	r.delegOf[delegationID] = true
	c.parentOf[delegationID] = oc.id
	c.level[delegationID] = CorrelationWeak
	return found[0].run, oc.id, nil
}
