package delegator

import (
	"context"
	"sync"
)

// ContextKey names a remembered sticky remote context
// (docs/design.md#context-policies): per chat thread and agent
// (sticky_per_parent_thread_agent, Thread set) or per run and agent
// (sticky_per_run_agent, or a thread policy without a session key).
type ContextKey struct {
	// Thread is the parent's session key; "" for a per-run context.
	Thread string
	// Run is the parent run id of a per-run context.
	Run string
	// Agent is the registry key of the remote agent.
	Agent string
}

// ContextStore remembers the remote contexts of the sticky context
// policies. Implementations must be safe for concurrent use and bound what
// they keep; a store that cannot answer (e.g. a remote store that is
// unreachable) answers "none", and the delegation starts a new context.
// The default is in memory ([NewMemoryContexts]); a shared store lets every
// replica of a host continue a thread's contexts (docs/design.md#scale-out).
type ContextStore interface {
	// Get returns the context remembered under key.
	Get(ctx context.Context, key ContextKey) (contextID string, ok bool)
	// Put remembers contextID under key.
	Put(ctx context.Context, key ContextKey, contextID string)
	// ForgetRun forgets the per-run contexts of runID (the run ended).
	ForgetRun(ctx context.Context, runID string)
}

// ContextLookup is a ContextStore that can tell a context it could not
// read (err) from one it does not have: the delegation then starts a new
// remote context and says so (subagent.status context_unavailable, and
// the Observer's StickyContextUnreadable when it has one).
type ContextLookup interface {
	Lookup(ctx context.Context, key ContextKey) (contextID string, ok bool, err error)
}

// StatusContextUnavailable is the subagent.status published right after
// subagent.started when the delegation's sticky context could not be read
// in time: it runs in a new remote context.
const StatusContextUnavailable = "context_unavailable"

// ContextObserver is an Observer that also counts sticky contexts that
// could not be read (by agent key).
type ContextObserver interface {
	StickyContextUnreadable(agent string)
}

// MemoryContexts is the in-memory ContextStore, bounded to max entries
// (beyond it new contexts are not remembered).
type MemoryContexts struct {
	max int

	mu    sync.Mutex
	m     map[ContextKey]string
	byRun map[string][]ContextKey
}

// NewMemoryContexts returns an empty store keeping at most max contexts
// (0: 100,000).
func NewMemoryContexts(max int) *MemoryContexts {
	if max <= 0 {
		max = maxStickyContexts
	}
	return &MemoryContexts{max: max, m: map[ContextKey]string{}, byRun: map[string][]ContextKey{}}
}

// Get implements ContextStore.
func (c *MemoryContexts) Get(_ context.Context, key ContextKey) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.m[key]
	return id, ok
}

// Put implements ContextStore.
func (c *MemoryContexts) Put(_ context.Context, key ContextKey, contextID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok {
		if len(c.m) >= c.max {
			return
		}
		if key.Thread == "" {
			c.byRun[key.Run] = append(c.byRun[key.Run], key)
		}
	}
	c.m[key] = contextID
}

// ForgetRun implements ContextStore.
func (c *MemoryContexts) ForgetRun(_ context.Context, runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.byRun[runID] {
		delete(c.m, k)
	}
	delete(c.byRun, runID)
}

// Len returns how many contexts the store remembers.
func (c *MemoryContexts) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
