package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
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

// refreshLeases keeps this replica's runs leased: every Lease/3 each
// journaled run's lease key is written again (an async publish to the
// bucket's subject, acks awaited). After a gap longer than the lease, the
// runs a survivor may have claimed meanwhile are checked, and a claimed run
// is cancelled here (it was ended elsewhere).
func (c *Cluster) refreshLeases() {
	every := c.cfg.Lease / 3
	lastOK := time.Now()
	for c.sleep(every) {
		if !c.connected.Load() {
			continue
		}
		runs := c.local.snapshot()
		var futures []jetstream.PubAckFuture
		failed := false
		for _, rj := range runs {
			if !rj.leased() {
				continue
			}
			f, err := c.js.PublishAsync("$KV."+LeasesBucket+"."+rj.key, []byte(c.cfg.Replica))
			if err != nil {
				failed = true
				break
			}
			futures = append(futures, f)
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
			case <-f.Err():
				failed = true
			case <-time.After(every):
				failed = true
			case <-c.ctx.Done():
				return
			}
		}
		if failed {
			continue
		}
		if time.Since(lastOK) > c.cfg.Lease-every {
			// Our leases may have expired meanwhile: was a run claimed?
			c.checkClaims(runs)
		}
		lastOK = time.Now()
	}
}

// checkClaims cancels the local runs another replica has taken over.
func (c *Cluster) checkClaims(runs []*runJournal) {
	for _, rj := range runs {
		ctx, cancel := c.kvCtx(c.ctx)
		e, err := c.claims.Get(ctx, rj.key)
		cancel()
		if err != nil {
			continue
		}
		by := parseClaim(e.Value()).Replica
		if by == c.cfg.Replica {
			continue
		}
		c.log.Warn("cluster: another replica ended this run while this replica was cut off; cancelling it here", "run_id", rj.run.RunID, "by", by)
		rj.disown()
		c.local.remove(rj)
		if rj.run.Cancel != nil {
			ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
			_ = rj.run.Cancel(ctx)
			cancel()
		}
	}
}

// scan looks for lost runs every Lease/2 (jittered): runs listed active
// whose lease has expired. It waits one lease after each (re)connection,
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
	for _, k := range active {
		if !have[k] {
			unleased[k] = true
			c.tryTakeover(k)
		}
	}
	c.claimWatch.keep(unleased)
	return nil
}

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
	if c.local.has(runID) {
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
		c.log.Warn("cluster: the replica ending a lost run stopped before it finished; finishing it", "run_id", runID)
	default:
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
	rec, err := c.Run(ctx, runID)
	if errors.Is(err, subagentstream.ErrNoRun) {
		return c.active.Delete(ctx, key)
	}
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		err := c.closeStream(ctx, rec)
		if err == nil {
			break
		}
		if attempt == 3 || !isWrongLastSeq(err) {
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

// closeStream appends the frames that end the run's stream, each expecting
// the subject's previous message: if anything else was appended meanwhile
// (the lost replica came back), it fails and is done again from the start.
//
// What the stream holds is kept: frames a replica that died during its
// takeover appended close what they close, so Abort appends only what is
// still open; a stream that already has its terminal event (RUN_ERROR of
// an earlier takeover, or the run's own end) only gets its end marker.
func (c *Cluster) closeStream(ctx context.Context, rec RunRecord) error {
	m := subagentstream.NewMirror(rec.ThreadID, rec.RunID, c.cfg.Stream)
	var terminal uint64 // the first terminal frame's id
	seq, err := c.readSeq(ctx, rec.RunID, m, func() {}, false, func(id uint64, typ events.EventType) {
		if (typ == events.EventTypeRunError || typ == events.EventTypeRunFinished) && (terminal == 0 || id < terminal) {
			terminal = id
		}
	})
	if err != nil {
		return err
	}
	if m.Ended() {
		return nil
	}
	var frames []*subagentstream.Frame
	if terminal == 0 || terminal > m.LastID() {
		frames = m.Abort(CodeHostLost, hostLostMessage)
	}
	subject := framesSubject(rec.RunID)
	for _, f := range frames {
		msg := nats.NewMsg(subject)
		msg.Header.Set(hdrID, strconv.FormatUint(f.ID, 10))
		msg.Header.Set(hdrType, string(f.Type))
		msg.Data = f.Data
		ack, err := c.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(seq))
		if err != nil {
			return fmt.Errorf("cluster: closing run %s: %w", rec.RunID, err)
		}
		seq = ack.Sequence
		if c.crashed("frame") {
			return errCrashed
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
