package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// ClaimCancel is the delegator's CancelClaim: it reports whether this
// replica is the one that sends the remote task of a delegation (of the
// SDK run runID) its cancellation. The first replica to ask records
// itself in CancelsBucket (a KV create: exclusive) and gets true, later
// asks by the same replica (its cleanup retries) too; every other replica
// gets false — the run's replica that finds its run ended elsewhere, and a
// survivor ending a lost run, never both cancel a task. An error means
// NATS could not say: the caller treats the cancellation as pending and
// retries later.
func (c *Cluster) ClaimCancel(ctx context.Context, runID, delegationID string) (bool, error) {
	key := token(runID) + "." + token(delegationID)
	kctx, cancel := c.kvCtx(ctx)
	defer cancel()
	_, err := c.cancels.Create(kctx, key, []byte(c.cfg.Replica))
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return false, fmt.Errorf("cluster: recording a remote task's cancellation: %w", err)
	}
	e, err := c.cancels.Get(kctx, key)
	if err != nil {
		return false, fmt.Errorf("cluster: reading a remote task's cancellation: %w", err)
	}
	return string(e.Value()) == c.cfg.Replica, nil
}
