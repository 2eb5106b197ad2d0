package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor/internal/testkit/natstest"
)

// A run is fenced as soon as the replica sees another one claim it, by
// its claims watcher alone, not only when its next lease renewal finds
// the claim: here the owner renews nothing, and the run is still stopped
// (cancelled) once b claims it (docs/design.md#scale-out, "Fencing").
func TestClaimSeenFencesTheRun(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ns := natstest.New(t)
	o := leaseCluster(t, ns, "o", 30*time.Second)
	b := leaseCluster(t, ns, "b", 30*time.Second)
	r := beginRun(t, o, "run-w", true)
	r.append(events.NewRunStartedEvent("t-run-w", "run-w"))
	o.spawn(o.watchClaims) // the watcher only: no lease renewal, no scan

	ctx, cancel := b.kvCtx(context.Background())
	defer cancel()
	if _, err := b.claims.Put(ctx, r.rj.key, []byte("b")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return r.cancelled.Load() == 1 })
}
