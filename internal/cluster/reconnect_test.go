package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor/internal/testkit/natstest"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
)

// A replica judges other replicas' leases only once it has been connected
// for a whole lease, so that after NATS comes back the live replicas
// renew theirs first (docs/design.md#scale-out, "Leases and exactly-once
// cleanup"). Here a run's lease is already gone when b connects (as after
// an outage): b ends the run, but not before one lease after connecting.
// The bound is a lower one on b's own clock: a slow machine only makes the
// takeover later.
func TestLeasesJudgedOneLeaseAfterConnecting(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	const lease = 3 * time.Second
	ns := natstest.New(t)
	owner := leaseCluster(t, ns, "owner", lease)
	r := startLostRun(t, owner, "run-rc")
	crash(owner)
	w := leaseCluster(t, ns, "w", lease) // only looks
	waitUntil(t, func() bool {
		ctx, cancel := w.kvCtx(context.Background())
		defer cancel()
		_, err := w.leases.Get(ctx, r.key)
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})

	b := leaseCluster(t, ns, "b", lease)
	connected := time.Unix(0, b.reconnectAt.Load())
	var mu sync.Mutex
	var first time.Time
	var calls orphanCalls
	next := calls.handler(b)
	if err := b.Start(Handlers{EndOrphan: func(ctx context.Context, rec audit.Record) error {
		mu.Lock()
		if first.IsZero() {
			first = time.Now()
		}
		mu.Unlock()
		return next(ctx, rec)
	}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return ended(b, r) })
	mu.Lock()
	defer mu.Unlock()
	if first.IsZero() {
		t.Fatal("the lost run ended without its delegations' cleanup")
	}
	if after := first.Sub(connected); after < lease {
		t.Fatalf("b ended a run %v after connecting, within its first lease (%v): a live replica had no chance to renew", after.Round(time.Millisecond), lease)
	}
}
