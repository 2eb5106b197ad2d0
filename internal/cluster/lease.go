package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
)

// CodeHostLost is the RUN_ERROR code (and the failure code of the run's
// delegations) when a run's replica died and a survivor ended it.
const CodeHostLost = "host_lost"

// hostLostMessage explains CodeHostLost.
const hostLostMessage = "the host replica running this run stopped responding; the run was ended by another replica and its remote tasks were cancelled"

// refreshLeases keeps this replica's runs leased, on its own goroutine and
// its own NATS connection (renewals never queue behind frames): every
// Lease/3 each run's lease is rewritten, compare-and-set on the revision
// this replica wrote last, all runs at once, acks awaited for at most
// Lease/3. A renewal that succeeds lets the run publish until Lease minus
// a margin after the round began (by this replica's clock: before the
// lease could expire on the server); one that fails does not, so a
// replica that cannot renew in time stops writing before anyone can take
// its runs over. A lease found gone or changed has lapsed: see reacquire.
func (c *Cluster) refreshLeases() {
	every := c.cfg.Lease / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-c.ctx.Done():
			return
		}
		if c.lnc.IsConnected() {
			c.renewLeases(every)
		}
	}
}

// renewLeases is one round of refreshLeases, bounded by deadline.
func (c *Cluster) renewLeases(deadline time.Duration) {
	type renewal struct {
		rj *runJournal
		f  jetstream.PubAckFuture
	}
	start := time.Now()
	var pending []renewal
	for _, rj := range c.local.snapshot() {
		rj.mu.Lock()
		rev, lapsed, live := rj.leaseRev, rj.lapsed, rj.state == stateLive
		rj.mu.Unlock()
		if !live || rev == 0 {
			continue
		}
		if lapsed {
			c.relapse(rj)
			continue
		}
		m := nats.NewMsg("$KV." + LeasesBucket + "." + rj.key)
		m.Data = []byte(c.cfg.Replica)
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
		f, err := c.ljs.PublishMsgAsync(m)
		if err != nil {
			c.obs.LeaseRenewFailed()
			continue
		}
		pending = append(pending, renewal{rj, f})
	}
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	late := false
	for _, p := range pending {
		if late {
			select {
			case ack := <-p.f.Ok():
				p.rj.renewed(ack.Sequence, start)
			default:
				c.obs.LeaseRenewFailed()
			}
			continue
		}
		select {
		case ack := <-p.f.Ok():
			p.rj.renewed(ack.Sequence, start)
		case err := <-p.f.Err():
			c.obs.LeaseRenewFailed()
			if isWrongLastSeq(err) {
				c.reacquire(p.rj)
			}
		case <-timer.C:
			late = true
			c.obs.LeaseRenewFailed()
		case <-c.ctx.Done():
			return
		}
	}
}

// renewed records a renewal acked at rev: the run may publish until the
// lease could expire (from start, the round's beginning), minus a margin.
func (rj *runJournal) renewed(rev uint64, start time.Time) {
	rj.mu.Lock()
	rj.leaseRev = rev
	until := start.Add(rj.c.cfg.Lease - rj.c.leaseMargin())
	wasValid := time.Now().Before(rj.validUntil)
	if until.After(rj.validUntil) {
		rj.validUntil = until
	}
	rj.mu.Unlock()
	if !wasValid {
		rj.kick() // its publisher waited for the lease
	}
}

// reacquire handles a run whose lease renewal was refused. A lease that
// still holds this replica's name only had another revision (a renewal
// whose ack came too late was stored): its revision is adopted. A lease
// that is gone lapsed (it expired while this replica could not renew it: a
// pause, starvation, a cut from NATS): if no replica has claimed the run,
// the lease is taken again (a KV create: exclusive) and the run continues;
// otherwise another replica is ending the run and this one fences it. A
// claim made after the check is seen by watchClaims, and the journal's
// compare-and-set keeps one history meanwhile.
func (c *Cluster) reacquire(rj *runJournal) {
	ctx, cancel := c.kvCtx(c.ctx)
	defer cancel()
	start := time.Now()
	e, err := c.lleases.Get(ctx, rj.key)
	switch {
	case err == nil && string(e.Value()) == c.cfg.Replica:
		rj.mu.Lock()
		rj.leaseRev, rj.lapsed = e.Revision(), false
		rj.mu.Unlock()
		return
	case err == nil:
		rj.fence("its lease was taken by " + string(e.Value()))
		return
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		rj.mu.Lock()
		rj.lapsed = true // checked again next round
		rj.mu.Unlock()
		return
	}
	rev, err := c.lleases.Create(ctx, rj.key, []byte(c.cfg.Replica))
	if errors.Is(err, jetstream.ErrKeyExists) {
		rj.fence("its lease was taken")
		return
	}
	if err != nil {
		rj.mu.Lock()
		rj.lapsed = true
		rj.mu.Unlock()
		return
	}
	rj.mu.Lock()
	rj.leaseRev, rj.lapsed = rev, true // until the claim check passed
	rj.mu.Unlock()
	if !c.claimFree(ctx, rj) {
		return
	}
	rj.mu.Lock()
	rj.lapsed = false
	rj.mu.Unlock()
	rj.renewed(rev, start)
	c.log.Warn("cluster: a run's lease had lapsed (this replica could not renew it in time); no other replica took the run, so it continues", "run_id", rj.rec.RunID)
}

// claimFree reports whether no other replica has claimed the run; it
// fences the run when one has. false without fencing: it cannot tell now.
func (c *Cluster) claimFree(ctx context.Context, rj *runJournal) bool {
	e, err := c.claims.Get(ctx, rj.key)
	switch {
	case err == nil && parseClaim(e.Value()).Replica != c.cfg.Replica:
		rj.fence("it was claimed by replica " + parseClaim(e.Value()).Replica)
		return false
	case err != nil && !errors.Is(err, jetstream.ErrKeyNotFound):
		return false
	}
	return true
}

// relapse retries a lapsed run: its lease is taken again if needed and
// the run continues once no claim is found.
func (c *Cluster) relapse(rj *runJournal) {
	ctx, cancel := c.kvCtx(c.ctx)
	defer cancel()
	e, err := c.lleases.Get(ctx, rj.key)
	if err != nil || string(e.Value()) != c.cfg.Replica {
		c.reacquire(rj)
		return
	}
	start := time.Now()
	if !c.claimFree(ctx, rj) {
		return
	}
	rev, err := c.lleases.Update(ctx, rj.key, []byte(c.cfg.Replica), e.Revision())
	if err != nil {
		return
	}
	rj.mu.Lock()
	rj.lapsed = false
	rj.mu.Unlock()
	rj.renewed(rev, start)
}

// watchClaims fences a local run as soon as another replica claims it
// (the goroutine is owned by the Cluster). Its watcher is made again
// after each reconnection (a restarted server loses it), and starts with
// every claim, so that claims made meanwhile are seen.
func (c *Cluster) watchClaims() {
	for c.ctx.Err() == nil {
		w, err := c.claims.WatchAll(c.ctx)
		if err != nil {
			if !c.sleep(time.Second) {
				return
			}
			continue
		}
		c.readClaims(w)
		_ = w.Stop()
	}
}

func (c *Cluster) readClaims(w jetstream.KeyWatcher) {
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			if by := parseClaim(e.Value()).Replica; by != c.cfg.Replica {
				if rj := c.local.get(e.Key()); rj != nil {
					rj.fence("it was claimed by replica " + by)
				}
			}
		case <-c.reconnected:
			return
		case <-c.ctx.Done():
			return
		}
	}
}

// scan looks for lost runs every Lease/2 (jittered): runs listed active
// whose lease has expired, ended up to maxTakeovers at once (each scan
// waits for its takeovers). It waits one lease after each (re)connection,
// so that live replicas refresh their leases first.
func (c *Cluster) scan() {
	for {
		d := c.cfg.Lease/2 + rand.N(c.cfg.Lease/4+1)
		if !c.sleep(d) {
			return
		}
		if !c.connected.Load() || time.Since(time.Unix(0, c.reconnectAt.Load())) < c.cfg.Lease {
			continue
		}
		if err := c.scanOnce(); err != nil && c.ctx.Err() == nil {
			c.log.Debug("cluster: scanning for lost runs", "err", err)
		}
	}
}

func (c *Cluster) scanOnce() error {
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.Lease)
	defer cancel()
	active, err := keys(ctx, c.active)
	if err != nil {
		return err
	}
	if len(active) == 0 {
		return nil
	}
	leased, err := keys(ctx, c.leases)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, k := range leased {
		have[k] = true
	}
	unleased := map[string]bool{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxTakeovers)
	for _, k := range active {
		if have[k] {
			continue
		}
		unleased[k] = true
		select {
		case sem <- struct{}{}:
		case <-c.ctx.Done():
			wg.Wait()
			return c.ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-sem }()
			c.tryTakeover(k)
		})
	}
	wg.Wait()
	c.claimWatch.keep(unleased)
	return nil
}

// maxTakeovers bounds the lost runs one scan ends at once: the runs of a
// replica that died (or starved) are ended side by side, so the last one's
// clients do not wait for every other takeover's remote cancellations and
// audit writes, while a survivor's NATS round trips stay bounded.
const maxTakeovers = 16

func keys(ctx context.Context, kv jetstream.KeyValue) ([]string, error) {
	ks, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	return ks, err
}

// tryTakeover claims the run under key if it is still active without a
// lease: the claim (a KV create) succeeds for exactly one replica, which
// ends the run. A claim whose holder stopped refreshing it (it died during
// its takeover) is taken over the same way (a compare-and-set on the
// revision seen unchanged for a lease), and the new holder finishes what
// is left; a claim marked done only leaves the active entry to remove.
func (c *Cluster) tryTakeover(key string) {
	ctx, cancel := c.kvCtx(c.ctx)
	defer cancel()
	e, err := c.active.Get(ctx, key)
	if err != nil {
		return
	}
	if _, err := c.leases.Get(ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) {
		return // leased again, or unknown
	}
	runID := string(e.Value())
	if c.local.get(key) != nil {
		return // ours and alive: the refresher restores the lease
	}
	how, rev := c.claim(ctx, key)
	switch how {
	case claimNone:
		return // another replica holds the claim (or NATS failed: retried next scan)
	case claimFinished:
		// Its holder ended the run and died before removing the entry.
		_ = c.active.Delete(ctx, key)
		return
	case claimResumed:
		c.obs.Takeover(true)
		c.log.Warn("cluster: the replica ending a lost run stopped before it finished; finishing it", "run_id", runID)
	default:
		c.obs.Takeover(false)
		c.log.Warn("cluster: a run's replica stopped renewing its lease; ending the run", "run_id", runID)
	}
	// errClaimLost was logged by the claim's holder.
	if err := c.takeover(key, runID, rev); err != nil && !errors.Is(err, errCrashed) && !errors.Is(err, errClaimLost) {
		c.log.Error("cluster: ending a lost run", "run_id", runID, "err", err)
	}
}

// crashed reports whether a test stops the takeover at step (c.crashAt).
func (c *Cluster) crashed(step string) bool {
	return c.crashAt != nil && c.crashAt(step)
}

// takeover ends a claimed run: its stream gets what closes it and
// RUN_ERROR host_lost, its running delegations are ended (remote tasks
// cancelled), its records say it was lost, its claim is marked done and
// its active entry removed. Every step is idempotent, so that a replica
// that takes over the claim of one that died midway finishes the same
// cleanup: the stream is rebuilt from what it holds and only what is
// missing is appended, delegations whose audit records ended are not
// ended again, and a record already lost is kept.
func (c *Cluster) takeover(key, runID string, rev uint64) (err error) {
	ctx, cancel := context.WithTimeout(c.ctx, 2*time.Minute)
	defer cancel()
	h := c.holdClaim(ctx, key, rev)
	defer h.release()
	defer func() { err = h.err(err) }()
	ctx = h.ctx
	if c.crashed("claimed") {
		return errCrashed
	}
	rec, err := c.record(ctx, key)
	if errors.Is(err, subagentstream.ErrNoRun) {
		return c.active.Delete(ctx, key)
	}
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		err := c.closeStream(ctx, key, rec)
		if err == nil {
			break
		}
		if attempt == 3 || !isWrongLastSeq(err) {
			return err
		}
		if err := h.confirm(); err != nil {
			return err
		}
	}
	if c.crashed("stream") {
		return errCrashed
	}
	if c.handlers.EndOrphan != nil && rec.SDKRunID != "" {
		ended := false
		for _, ar := range c.audit.ListRun(rec.SDKRunID) {
			if ar.Status != audit.StatusRunning {
				continue
			}
			if err := h.confirm(); err != nil {
				return err
			}
			if err := c.handlers.EndOrphan(ctx, ar); err != nil {
				c.log.Warn("cluster: ending a lost run's delegation", "delegation_id", ar.DelegationID, "err", err)
			}
			ended = true
			if c.crashed("orphan") {
				return errCrashed
			}
		}
		if ended {
			// The ended records are written before the claim is done: a
			// replica that finishes this takeover does not end them again.
			sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
			if err := c.audit.settle(sctx); err != nil {
				c.log.Warn("cluster: the ended audit records of a lost run are not written yet", "run_id", runID, "err", err)
			}
			scancel()
		}
	}
	if c.crashed("orphans") {
		return errCrashed
	}
	if err := h.confirm(); err != nil {
		return err
	}
	if rec.End != EndLost {
		rec.EndedAt, rec.End = time.Now(), EndLost
		data, _ := json.Marshal(rec)
		if _, err := c.runs.Put(ctx, key, data); err != nil {
			return err
		}
	}
	if c.crashed("record") {
		return errCrashed
	}
	if err := h.finish(); err != nil {
		return err
	}
	if c.crashed("done") {
		return errCrashed
	}
	return c.active.Delete(ctx, key)
}

// closeStream appends the frames that end the run's stream, in one
// message expecting the subject's last sequence as read, then the end
// marker, expecting that message: if anything else was appended meanwhile
// (the lost replica came back), it fails and is done again from the start.
//
// What the stream holds is kept: frames a replica that died during its
// takeover appended close what they close, so only what is still open is
// closed; a stream that already has its terminal event (RUN_ERROR of an
// earlier takeover, or the run's own end) only gets its end marker. A run
// whose journal is empty (its replica died before its first frame was
// committed: no client saw anything) gets a lone RUN_ERROR host_lost,
// never an invented RUN_STARTED.
func (c *Cluster) closeStream(ctx context.Context, key string, rec RunRecord) error {
	m := subagentstream.NewMirror(rec.ThreadID, rec.RunID, c.cfg.Stream)
	var terminal uint64 // the first terminal frame's id
	subject := framesSubject(key)
	seq, err := c.readFrom(ctx, subject, 1, m, false, func(f wireFrame) {
		if isTerminal(f.typ) && (terminal == 0 || f.id < terminal) {
			terminal = f.id
		}
	})
	if err != nil {
		return err
	}
	if m.Ended() {
		return nil
	}
	if terminal == 0 || terminal > m.LastID() {
		if frames := m.Closing(CodeHostLost, hostLostMessage, time.Now()); len(frames) > 0 {
			ack, err := c.js.PublishMsg(ctx, frameMsg(subject, frames), jetstream.WithExpectLastSequencePerSubject(seq))
			if err != nil {
				return fmt.Errorf("cluster: closing run %s: %w", rec.RunID, err)
			}
			seq = ack.Sequence
			c.obs.RunLost(LostLease)
			for _, f := range frames {
				_ = m.AppendFrame(f)
			}
			if c.crashed("frame") {
				return errCrashed
			}
		}
	}
	msg := nats.NewMsg(subject)
	msg.Header.Set(hdrEnd, strconv.FormatUint(m.LastID(), 10))
	_, err = c.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(seq))
	return err
}

func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}
