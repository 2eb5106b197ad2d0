package cluster

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
)

// ContextStore is a delegator.ContextStore shared by every replica: the
// contexts of chat threads (sticky_per_parent_thread_agent) live in
// ContextsBucket, so a thread's next run continues its remote contexts on
// whichever replica it lands; per-run contexts stay in this replica's
// memory, where the run runs. A store that cannot reach NATS answers
// "none" from Get, and an error from Lookup (the delegation starts a new
// remote context and says so).
type ContextStore struct {
	c   *Cluster
	run *delegator.MemoryContexts
}

var _ delegator.ContextStore = (*ContextStore)(nil)

// Contexts returns the cluster's sticky context store.
func (c *Cluster) Contexts() *ContextStore {
	return &ContextStore{c: c, run: delegator.NewMemoryContexts(0)}
}

func contextKey(k delegator.ContextKey) string { return token(k.Thread) + "." + token(k.Agent) }

// Get implements delegator.ContextStore.
func (s *ContextStore) Get(ctx context.Context, k delegator.ContextKey) (string, bool) {
	id, ok, _ := s.Lookup(ctx, k)
	return id, ok
}

// Lookup implements delegator.ContextLookup: a thread's context that
// cannot be read (NATS slow or away) is an error, not "none", so that the
// delegator can tell the user its delegation starts a new remote context.
func (s *ContextStore) Lookup(ctx context.Context, k delegator.ContextKey) (string, bool, error) {
	if k.Thread == "" {
		id, ok := s.run.Get(ctx, k)
		return id, ok, nil
	}
	e, err := s.c.contexts.Get(ctx, contextKey(k))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", false, nil
	}
	if err != nil {
		s.c.log.Warn("cluster: reading a sticky context; starting a new remote context", "err", err)
		return "", false, err
	}
	return string(e.Value()), true, nil
}

// Put implements delegator.ContextStore.
func (s *ContextStore) Put(ctx context.Context, k delegator.ContextKey, contextID string) {
	if k.Thread == "" {
		s.run.Put(ctx, k, contextID)
		return
	}
	if _, err := s.c.contexts.Put(ctx, contextKey(k), []byte(contextID)); err != nil {
		s.c.log.Warn("cluster: remembering a sticky context", "err", err)
	}
}

// ForgetRun implements delegator.ContextStore.
func (s *ContextStore) ForgetRun(ctx context.Context, runID string) { s.run.ForgetRun(ctx, runID) }
