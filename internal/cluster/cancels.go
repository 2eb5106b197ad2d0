package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
)

// ClaimCancel is the delegator's CancelClaim: it says whether this
// replica is the one that sends the remote task of a delegation (of the
// SDK run runID) its cancellation. The first replica to ask records itself
// in CancelsBucket (a KV create: exclusive, whatever the timing) and gets
// delegator.CancelMine; its later asks find its own name and get
// delegator.CancelMineAgain (its cleanup retries, an ask whose first
// answer was lost although the create was stored, the same replica ending
// the run as lost): the delegator then reads the task before it sends the
// cancellation again. Every other replica gets delegator.CancelOthers —
// the run's replica that finds its run ended elsewhere and a survivor
// ending a lost run never both cancel a task. An error means NATS could
// not say: the caller treats the cancellation as pending and retries
// later.
func (c *Cluster) ClaimCancel(ctx context.Context, runID, delegationID string) (delegator.CancelTurn, error) {
	key := token(runID) + "." + token(delegationID)
	kctx, cancel := c.kvCtx(ctx)
	defer cancel()
	_, err := c.cancels.Create(kctx, key, []byte(c.cfg.Replica))
	if err == nil {
		return delegator.CancelMine, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return delegator.CancelOthers, fmt.Errorf("cluster: recording a remote task's cancellation: %w", err)
	}
	e, err := c.cancels.Get(kctx, key)
	if err != nil {
		return delegator.CancelOthers, fmt.Errorf("cluster: reading a remote task's cancellation: %w", err)
	}
	if string(e.Value()) == c.cfg.Replica {
		return delegator.CancelMineAgain, nil
	}
	return delegator.CancelOthers, nil
}
