package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// claimValue is a claim's value in ClaimsBucket: the replica ending the
// run, and whether it finished. The replica rewrites it every Lease/3
// while it works (each write a new revision); a claim that is not done and
// whose revision a scanner saw unchanged for a whole lease is taken over
// (compare-and-set on that revision) by the scanner.
type claimValue struct {
	Replica string `json:"replica"`
	Done    bool   `json:"done,omitempty"`
}

func (v claimValue) encode() []byte {
	data, _ := json.Marshal(v)
	return data
}

// parseClaim decodes a claim; a value that is not JSON is a replica's name
// (as replicas without claim heartbeats wrote it).
func parseClaim(data []byte) claimValue {
	var v claimValue
	if json.Unmarshal(data, &v) != nil || v.Replica == "" {
		return claimValue{Replica: string(data)}
	}
	return v
}

// errClaimLost: another replica took this replica's claim over (it saw the
// claim unrefreshed for a lease), or it could not be refreshed for most of
// a lease; the takeover stops where it is and the new holder finishes it.
var errClaimLost = errors.New("cluster: this replica's claim on the lost run was taken over or could not be refreshed")

// errCrashed: Cluster.crashAt stopped the takeover (tests).
var errCrashed = errors.New("cluster: takeover stopped by a test")

// seenClaim is a claim's revision as a scanner first saw it, and when.
type seenClaim struct {
	rev uint64
	at  time.Time
}

// claimWatch remembers the revisions of other replicas' unfinished claims
// across scans: a claim whose revision stayed the same for a lease (on this
// replica's monotonic clock, so clocks need not agree) is stale.
type claimWatch struct {
	mu   sync.Mutex
	seen map[string]seenClaim
}

// stale records rev for key and reports whether it has not changed for
// lease since this replica first saw it.
func (w *claimWatch) stale(key string, rev uint64, lease time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]seenClaim{}
	}
	s, ok := w.seen[key]
	if !ok || s.rev != rev {
		w.seen[key] = seenClaim{rev: rev, at: time.Now()}
		return false
	}
	return time.Since(s.at) >= lease
}

// keep forgets the claims of keys not in live.
func (w *claimWatch) keep(live map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.seen {
		if !live[k] {
			delete(w.seen, k)
		}
	}
}

// Outcomes of claim.
const (
	claimNone     = iota // another replica holds the claim (or NATS failed)
	claimNew             // this replica created the claim
	claimResumed         // this replica took over a stale claim
	claimFinished        // the claim is done: only the active entry is left
)

// claim makes this replica the one that ends the lost run under key: it
// creates the claim, or takes over a claim whose holder stopped refreshing
// it. It returns the claim's revision.
func (c *Cluster) claim(ctx context.Context, key string) (int, uint64) {
	mine := claimValue{Replica: c.cfg.Replica}.encode()
	rev, err := c.claims.Create(ctx, key, mine)
	if err == nil {
		return claimNew, rev
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return claimNone, 0
	}
	e, err := c.claims.Get(ctx, key)
	if err != nil {
		return claimNone, 0
	}
	if parseClaim(e.Value()).Done {
		return claimFinished, e.Revision()
	}
	if !c.claimWatch.stale(key, e.Revision(), c.cfg.Lease) {
		return claimNone, 0
	}
	rev, err = c.claims.Update(ctx, key, mine, e.Revision())
	if err != nil {
		return claimNone, 0 // another replica took it over, or its holder refreshed it
	}
	return claimResumed, rev
}

// claimHold is this replica's claim on a lost run while it ends the run:
// a goroutine rewrites the claim every Lease/3 (compare-and-set on the
// revision it last wrote). ctx, under which the takeover works, is
// cancelled when the claim was taken over or could not be refreshed for
// most of a lease.
type claimHold struct {
	c      *Cluster
	key    string
	ctx    context.Context
	cancel context.CancelCauseFunc
	stopC  chan struct{}
	done   chan struct{}
	once   sync.Once

	mu   sync.Mutex
	rev  uint64
	lost bool
}

// holdClaim starts refreshing the claim under key, at revision rev. The
// caller must call release; the refresher goroutine ends before it returns.
func (c *Cluster) holdClaim(parent context.Context, key string, rev uint64) *claimHold {
	h := &claimHold{c: c, key: key, rev: rev, stopC: make(chan struct{}), done: make(chan struct{})}
	h.ctx, h.cancel = context.WithCancelCause(parent)
	go h.refresh()
	return h
}

func (h *claimHold) refresh() {
	defer close(h.done)
	every := h.c.cfg.Lease / 3
	t := time.NewTicker(every)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-h.stopC:
			return
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		err := h.put(false)
		switch {
		case err == nil:
			lastOK = time.Now()
		case errors.Is(err, errClaimLost):
			h.cancel(errClaimLost)
			return
		case time.Since(lastOK) >= h.c.cfg.Lease-every:
			h.c.log.Warn("cluster: cannot refresh the claim on a lost run; stopping, another replica will finish ending it", "key", h.key, "err", err)
			h.cancel(errClaimLost)
			return
		}
	}
}

// put rewrites the claim (done: marked finished) on the revision this
// replica last wrote; errClaimLost when that is no longer the claim's.
func (h *claimHold) put(done bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost {
		return errClaimLost
	}
	ctx, cancel := h.c.kvCtx(h.ctx)
	defer cancel()
	rev, err := h.c.claims.Update(ctx, h.key, claimValue{Replica: h.c.cfg.Replica, Done: done}.encode(), h.rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		h.lost = true
		h.c.log.Warn("cluster: another replica took over ending a lost run (this replica's claim was not refreshed in time); stopping here", "key", h.key)
		return errClaimLost
	}
	if err != nil {
		return err
	}
	h.rev = rev
	return nil
}

// confirm refreshes the claim now: nil when it is still this replica's.
func (h *claimHold) confirm() error {
	if err := h.ctx.Err(); err != nil {
		return h.err(err)
	}
	if err := h.put(false); err != nil {
		if errors.Is(err, errClaimLost) {
			h.cancel(errClaimLost)
		}
		return err
	}
	return nil
}

// finish stops the refresher and marks the claim done.
func (h *claimHold) finish() error {
	h.stop()
	if err := h.ctx.Err(); err != nil {
		return h.err(err)
	}
	return h.put(true)
}

// stop stops the refresher and waits for it; the claim's context stays
// valid until release.
func (h *claimHold) stop() {
	h.once.Do(func() { close(h.stopC) })
	<-h.done
}

// release stops the refresher and cancels the claim's context.
func (h *claimHold) release() {
	h.stop()
	h.cancel(nil)
}

// err returns errClaimLost when the claim was lost, else err.
func (h *claimHold) err(err error) error {
	if err != nil && errors.Is(context.Cause(h.ctx), errClaimLost) {
		return errClaimLost
	}
	return err
}
