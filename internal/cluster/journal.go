package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
)

// RunRecord is what the cluster keeps about a run in RunsBucket.
type RunRecord struct {
	RunID     string    `json:"run_id"`
	ThreadID  string    `json:"thread_id"`
	SDKRunID  string    `json:"sdk_run_id"`
	Principal string    `json:"principal,omitempty"`
	Replica   string    `json:"replica"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// End is how the run ended: "finished" (its stream's terminal event),
	// "lost" (its replica died; a survivor ended it).
	End string `json:"end,omitempty"`
}

// How a run ended (RunRecord.End).
const (
	EndFinished = "finished"
	EndLost     = "lost"
)

// CodeJournalLost is the RUN_ERROR code of a run whose replica could not
// keep its journal (the publish buffer overflowed while NATS was away).
const CodeJournalLost = "journal_lost"

const journalLostMessage = "the replica running this run could not publish its stream in time (NATS was unreachable too long); the run was stopped"

// ErrRunIDInUse: Reserve found the runId taken in the cluster (a run of any
// replica, active or ended within the records' retention).
var ErrRunIDInUse = errors.New("cluster: the runId is taken by another run")

// errFenced: the run's journal holds a message this replica did not write
// after its last one (another replica ended the run): this replica must
// not write anything more of the run.
var errFenced = errors.New("cluster: another replica wrote this run's journal")

// publishTimeout bounds one publish (and its ack).
const publishTimeout = 10 * time.Second

// leaseMargin is how long before its lease could expire (by this replica's
// clock, from the renewal's send) a replica stops publishing a run's
// frames until it renews the lease again.
func (c *Cluster) leaseMargin() time.Duration { return c.cfg.Lease / 6 }

// Journal returns the hub's Journal: every frame of this replica's runs
// goes to the frames stream through the run's own ordered publisher, and
// the run's clients on this replica are served what the journal committed
// (subagentstream.ServingJournal).
func (c *Cluster) Journal() subagentstream.Journal { return (*journal)(c) }

type journal Cluster

// Reservation holds a runId for a run this replica is about to start: its
// record, active entry and lease exist from Reserve on, so the runId is
// taken cluster-wide and the run is known to every replica before its
// first frame. The run that starts under it (Journal.Begin with the same
// principal and runId) takes it over; Release gives it back if none did.
type Reservation struct {
	c    *Cluster
	rj   *runJournal
	once sync.Once
}

// Reserve takes runId for principal ("" when run ids are global) across
// the cluster, before the run starts: the first of two replicas reserving
// the same runId wins, the other gets ErrRunIDInUse. A runId stays taken
// while its record is kept (Config.TTL). Errors other than ErrRunIDInUse
// mean NATS could not be reached in time. The caller must call Release
// once the request is done.
func (c *Cluster) Reserve(ctx context.Context, principal, runID, threadID string) (*Reservation, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	key := runKey(principal, runID)
	// Not cut by the client leaving midway: the steps are undone or done.
	kctx, cancel := c.kvCtx(context.WithoutCancel(ctx))
	defer cancel()
	start := time.Now()
	// The record first (a KV create: it takes the runId), then the lease,
	// then the active entry: other replicas look for lost runs among the
	// active entries only, so they never find this run without its record
	// (a takeover needs it to end the journal: see takeover).
	rec := RunRecord{RunID: runID, ThreadID: threadID, Principal: principal, Replica: c.cfg.Replica, StartedAt: start}
	data, _ := json.Marshal(rec)
	rrev, err := c.runs.Create(kctx, key, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, ErrRunIDInUse
	}
	if err != nil {
		return nil, fmt.Errorf("%w: reserving a runId: %w", ErrDisconnected, err)
	}
	c.wroteStep("record")
	// What was written is undone on a context of its own: kctx may be
	// what ran out.
	undo := func(lrev uint64) {
		uctx, ucancel := c.kvCtx(c.ctx)
		defer ucancel()
		if lrev != 0 {
			_ = c.lleases.Delete(uctx, key, jetstream.LastRevision(lrev))
		}
		_ = c.runs.Delete(uctx, key, jetstream.LastRevision(rrev))
	}
	lrev, err := c.lleases.Put(kctx, key, []byte(c.cfg.Replica))
	if err != nil {
		undo(0)
		return nil, fmt.Errorf("%w: reserving a runId: %w", ErrDisconnected, err)
	}
	c.wroteStep("lease")
	arev, err := c.active.Create(kctx, key, []byte(runID))
	if err != nil {
		undo(lrev)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil, ErrRunIDInUse // an entry left by a reservation given back midway
		}
		return nil, fmt.Errorf("%w: reserving a runId: %w", ErrDisconnected, err)
	}
	c.wroteStep("active")
	rj := c.newRunJournal(key, rec)
	rj.reserved, rj.begun, rj.recRev, rj.activeRev = true, true, rrev, arev
	rj.leaseRev, rj.validUntil = lrev, start.Add(c.cfg.Lease-c.leaseMargin())
	c.local.add(rj)
	c.local.reserve(rj)
	return &Reservation{c: c, rj: rj}, nil
}

// wroteStep calls the test hook c.wrote after a write that makes a run
// known.
func (c *Cluster) wroteStep(step string) {
	if c.wrote != nil {
		c.wrote(step)
	}
}

// Release gives the runId back if no run began under the reservation (its
// start failed, or the request was refused after Reserve); otherwise it
// does nothing. It is idempotent.
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	r.once.Do(func() {
		c, rj := r.c, r.rj
		if !c.local.unreserve(rj) {
			return // a run took it
		}
		rj.mu.Lock()
		rj.state = stateDone
		lrev, rrev, arev := rj.leaseRev, rj.recRev, rj.activeRev
		rj.mu.Unlock()
		c.local.remove(rj)
		ctx, cancel := c.kvCtx(c.ctx)
		defer cancel()
		// Record first: a replica that sees the active entry without a
		// record only removes the entry.
		_ = c.runs.Delete(ctx, rj.key, jetstream.LastRevision(rrev))
		_ = c.active.Delete(ctx, rj.key, jetstream.LastRevision(arev))
		_ = c.lleases.Delete(ctx, rj.key, jetstream.LastRevision(lrev))
	})
}

// Begin implements subagentstream.Journal.
func (j *journal) Begin(run subagentstream.JournalRun) subagentstream.RunJournal {
	c := (*Cluster)(j)
	key := runKey(run.Owner, run.RunID)
	rj := c.local.takeReserved(key)
	if rj == nil {
		rj = c.newRunJournal(key, RunRecord{RunID: run.RunID, Principal: run.Owner, Replica: c.cfg.Replica, StartedAt: time.Now()})
		c.local.add(rj)
	}
	rj.mu.Lock()
	rj.run = run
	rj.rec.ThreadID, rj.rec.SDKRunID = run.ThreadID, run.SDKRunID
	rj.served = subagentstream.NewMirror(run.ThreadID, run.RunID, c.cfg.Stream)
	rj.recordDue = true
	fenced := rj.state == stateFenced
	rj.mu.Unlock()
	if fenced {
		// Taken over between Reserve and the start: the run stops at once
		// and its client gets what the journal says.
		rj.afterFence()
	} else {
		rj.kick()
	}
	return rj
}

// Run states.
const (
	stateLive   = iota // journaled by this replica
	stateLocal         // not journaled (its runId's record belongs to another run): served by this replica only
	stateFenced        // another replica ended it: this replica writes nothing more and serves the journal
	stateDone          // ended (end marker and records written), cut, or released
)

// runJournal is one local run's journal: its frames wait in q, and the
// run's own publisher goroutine (running while there is work) sends them
// in order, each message conditional on the subject's last sequence being
// the one this replica wrote last (seq). A refused append means another
// replica wrote the run's journal: the run is fenced.
type runJournal struct {
	c       *Cluster
	key     string
	subject string
	wakeC   chan struct{}

	mu  sync.Mutex
	run subagentstream.JournalRun
	rec RunRecord
	// served is what this replica's clients of the run see: the frames
	// the journal committed, then, once fenced, the journal's own.
	served *subagentstream.Mirror

	state      int
	running    bool // the publisher goroutine runs
	reserved   bool // created by Reserve
	begun      bool // record, active entry and lease written
	recordDue  bool // the record must be rewritten with the run's SDK id
	recRev     uint64
	activeRev  uint64 // a reservation's active entry
	leaseRev   uint64
	lapsed     bool      // the lease was lost; renewed only after a claim check
	validUntil time.Time // publish only before this (lease - margin, own clock)

	q        []*subagentstream.Frame // appended, not in flight
	qBytes   int
	qSince   time.Time               // when q's oldest frame was appended
	inflight []*subagentstream.Frame // the batch being published (retried as is)
	inBytes  int
	inSince  time.Time
	inID     string // its message id

	seq       uint64 // the subject's sequence of this replica's last committed message
	lastID    uint64 // the last committed frame id
	ended     bool   // End was called
	complete  bool   // ... with the terminal event
	abandoned bool   // the buffer overflowed: the journal ends with journal_lost
	closing   bool   // journal_lost's closing frames were queued
}

func (c *Cluster) newRunJournal(key string, rec RunRecord) *runJournal {
	return &runJournal{c: c, key: key, subject: framesSubject(key), rec: rec, wakeC: make(chan struct{}, 1)}
}

// Served implements subagentstream.ServingJournal.
func (rj *runJournal) Served() *subagentstream.Stream {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	return rj.served.Stream()
}

// Append implements subagentstream.RunJournal; it never blocks.
func (rj *runJournal) Append(f *subagentstream.Frame) {
	c := rj.c
	rj.mu.Lock()
	switch {
	case rj.state == stateLocal:
		rj.mu.Unlock()
		_ = rj.served.AppendFrame(f)
		if isTerminal(f.Type) {
			rj.served.End(f.ID)
		}
		return
	case rj.state != stateLive || rj.abandoned || rj.ended:
		rj.mu.Unlock()
		return
	}
	if c.pending.Load() >= int64(c.cfg.BufferBytes) {
		// Beyond the buffer the run's journal is given up: the run stops
		// and its stream ends with journal_lost after what was committed.
		rj.abandoned = true
		dropped := rj.qBytes
		rj.q, rj.qBytes = nil, 0
		cancelRun := rj.run.Cancel
		rj.mu.Unlock()
		c.addPending(-dropped)
		c.log.Error("cluster: the publish buffer is full; this run is stopped and ends with journal_lost", "run_id", rj.rec.RunID)
		c.obs.RunLost(LostJournal)
		c.cancelRun(cancelRun)
		rj.kick()
		return
	}
	if len(rj.q) == 0 {
		rj.qSince = time.Now()
	}
	rj.q = append(rj.q, f)
	n := len(f.Data) + 64
	rj.qBytes += n
	rj.mu.Unlock()
	c.addPending(n)
	rj.kick()
}

// End implements subagentstream.RunJournal. A stream cut before its
// terminal event (the hub closed first) is left to its lease: what is
// queued is still published, then a survivor ends it when the lease
// expires.
func (rj *runJournal) End(complete bool) {
	rj.mu.Lock()
	rj.ended, rj.complete = true, complete
	local, fenced := rj.state == stateLocal, rj.state == stateFenced
	rj.mu.Unlock()
	switch {
	case fenced:
		// Its clients are served the journal, whatever the run did here.
	case local:
		rj.served.Stop() // ended by its terminal frame already, if it had one
		rj.c.local.remove(rj)
	case !complete:
		rj.c.local.remove(rj)
		rj.served.Stop()
		rj.kick()
	default:
		rj.kick()
	}
}

// kick makes sure the run's publisher goroutine runs (or wakes it).
func (rj *runJournal) kick() {
	rj.mu.Lock()
	if rj.running {
		rj.mu.Unlock()
		select {
		case rj.wakeC <- struct{}{}:
		default:
		}
		return
	}
	rj.running = true
	rj.mu.Unlock()
	rj.c.publishers.Add(1)
	if !rj.c.spawn(rj.publish) {
		rj.c.publishers.Add(-1)
		rj.mu.Lock()
		rj.running = false
		rj.mu.Unlock()
	}
}

// Actions of a run's publisher.
const (
	actNone = iota
	actBegin
	actFrames
	actEnd
)

// next picks the publisher's next action; actNone stops the goroutine.
func (rj *runJournal) next() int {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	if rj.state != stateLive {
		rj.running = false
		return actNone
	}
	switch {
	case !rj.begun || rj.recordDue && rj.run.SDKRunID != "":
		return actBegin
	case rj.inflight != nil:
		return actFrames
	case len(rj.q) > 0:
		rj.takeBatchLocked()
		return actFrames
	case rj.abandoned && !rj.closing:
		rj.closing, rj.ended, rj.complete = true, true, true
		if rj.served == nil {
			break
		}
		if frames := rj.served.Closing(CodeJournalLost, journalLostMessage, time.Now()); len(frames) > 0 {
			rj.setInflightLocked(frames, time.Now())
			return actFrames
		}
		return actEnd
	case rj.ended && rj.complete:
		return actEnd
	case rj.ended:
		rj.state = stateDone // cut: what was queued is out
	}
	rj.running = false
	return actNone
}

// takeBatchLocked moves the head of q into the in-flight batch.
func (rj *runJournal) takeBatchLocked() {
	n, size := 0, 0
	for n < len(rj.q) && n < maxBatchFrames {
		d := len(rj.q[n].Data)
		if n > 0 && size+d > maxBatchBytes {
			break
		}
		size += d
		n++
	}
	batch := rj.q[:n:n]
	bytes := 0
	for _, f := range batch {
		bytes += len(f.Data) + 64
	}
	rj.q = rj.q[n:]
	rj.qBytes -= bytes
	since := rj.qSince
	if len(rj.q) == 0 {
		rj.q = nil
	} else {
		rj.qSince = time.Now() // the next batch's frames came later; close enough
	}
	rj.setInflightLocked(batch, since)
	rj.inBytes = bytes
}

func (rj *runJournal) setInflightLocked(batch []*subagentstream.Frame, since time.Time) {
	rj.inflight, rj.inBytes, rj.inSince = batch, 0, since
	rj.inID = rj.key + ":" + strconv.FormatUint(batch[0].ID, 10) + "-" + strconv.FormatUint(batch[len(batch)-1].ID, 10)
}

// ready reports whether the run's publisher may write now: NATS is
// connected and, for frames, the run's lease is valid by this replica's
// clock.
func (rj *runJournal) ready(act int) bool {
	if !rj.c.connected.Load() {
		return false
	}
	if act == actBegin && !rj.begun {
		return true
	}
	rj.mu.Lock()
	defer rj.mu.Unlock()
	return time.Now().Before(rj.validUntil)
}

// publish is the run's publisher goroutine (owned by the Cluster): it
// performs the run's actions in order until there is nothing to do.
func (rj *runJournal) publish() {
	c := rj.c
	defer c.publishers.Add(-1)
	backoff := 50 * time.Millisecond
	for {
		act := rj.next()
		if act == actNone {
			return
		}
		if !rj.ready(act) {
			if !rj.wait(time.Second) {
				rj.stopRunning()
				return
			}
			continue
		}
		var err error
		switch act {
		case actBegin:
			err = rj.writeBegin()
		case actFrames:
			err = rj.writeFrames()
		case actEnd:
			err = rj.writeEnd()
		}
		switch {
		case errors.Is(err, errFenced):
			rj.fence("its journal holds another replica's frames")
		case err != nil:
			if c.ctx.Err() != nil {
				rj.stopRunning()
				return
			}
			c.log.Debug("cluster: publishing a run's journal; will retry", "run_id", rj.rec.RunID, "err", err)
			if !rj.wait(backoff) {
				rj.stopRunning()
				return
			}
			backoff = min(backoff*2, 2*time.Second)
		default:
			backoff = 50 * time.Millisecond
		}
	}
}

func (rj *runJournal) stopRunning() {
	rj.mu.Lock()
	rj.running = false
	rj.mu.Unlock()
}

// wait waits d, a wake-up or the cluster's close (false).
func (rj *runJournal) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-rj.wakeC:
		return true
	case <-t.C:
		return true
	case <-rj.c.ctx.Done():
		return false
	}
}

// writeBegin writes what makes the run known before its first frame: for
// a run without a reservation its record, lease and active entry; for a
// reserved one, its record again with the run's SDK id (compare-and-set on
// the reservation's revision: a record changed meanwhile was ended by
// another replica).
func (rj *runJournal) writeBegin() error {
	c := rj.c
	ctx, cancel := c.kvCtx(c.ctx)
	defer cancel()
	rj.mu.Lock()
	rec, begun, recRev := rj.rec, rj.begun, rj.recRev
	rj.mu.Unlock()
	data, _ := json.Marshal(rec)
	if begun {
		rev, err := c.runs.Update(ctx, rj.key, data, recRev)
		if isWrongLastSeq(err) || errors.Is(err, jetstream.ErrKeyExists) {
			return errFenced
		}
		if err != nil {
			return err
		}
		rj.mu.Lock()
		rj.recRev, rj.recordDue = rev, false
		rj.mu.Unlock()
		return nil
	}
	// In Reserve's order (record, lease, active entry): no replica finds
	// the run active without its record. A retry finds its own record.
	start := time.Now()
	rev, err := c.runs.Create(ctx, rj.key, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		cur, gerr := c.runs.Get(ctx, rj.key)
		if gerr != nil || !isOwnRecord(cur.Value(), rec) {
			c.log.Error("cluster: another run has this runId; this run is not journaled (its stream is served by this replica only)", "run_id", rec.RunID)
			rj.goLocal()
			return nil
		}
		rev, err = cur.Revision(), nil
	}
	if err != nil {
		return err
	}
	c.wroteStep("record")
	lrev, err := c.lleases.Put(ctx, rj.key, []byte(c.cfg.Replica))
	if err != nil {
		return err
	}
	c.wroteStep("lease")
	if _, err := c.active.Put(ctx, rj.key, []byte(rec.RunID)); err != nil {
		return err
	}
	c.wroteStep("active")
	rj.mu.Lock()
	rj.begun, rj.recordDue, rj.recRev = true, false, rev
	rj.leaseRev, rj.validUntil = lrev, start.Add(c.cfg.Lease-c.leaseMargin())
	rj.mu.Unlock()
	return nil
}

func isOwnRecord(data []byte, rec RunRecord) bool {
	var r RunRecord
	return json.Unmarshal(data, &r) == nil && r.Replica == rec.Replica && r.SDKRunID == rec.SDKRunID
}

// goLocal serves the run from this replica only: what was queued goes to
// its clients as is.
func (rj *runJournal) goLocal() {
	c := rj.c
	rj.mu.Lock()
	rj.state = stateLocal
	queued := append(rj.inflight, rj.q...)
	bytes := rj.qBytes + rj.inBytes
	rj.q, rj.inflight, rj.qBytes, rj.inBytes = nil, nil, 0, 0
	served := rj.served
	rj.mu.Unlock()
	c.addPending(-bytes)
	c.local.remove(rj)
	for _, f := range queued {
		_ = served.AppendFrame(f)
		if isTerminal(f.Type) {
			served.End(f.ID)
		}
	}
}

// writeFrames publishes the in-flight batch, expecting the subject's last
// sequence to be the one this replica wrote last. A refusal whose last
// message is this very batch (an earlier attempt went through, its ack was
// lost) counts as done; any other refusal fences the run.
func (rj *runJournal) writeFrames() error {
	c := rj.c
	rj.mu.Lock()
	batch, seq, msgID := rj.inflight, rj.seq, rj.inID
	rj.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.ctx, publishTimeout)
	defer cancel()
	m := frameMsg(rj.subject, batch)
	if len(m.Data) > int(c.nc.MaxPayload())-4096 {
		return rj.tooLarge(batch)
	}
	var newSeq uint64
	ack, err := c.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(seq), jetstream.WithMsgID(msgID))
	switch {
	case err == nil:
		newSeq = ack.Sequence
	case isWrongLastSeq(err):
		s, ours, lerr := c.lastWritten(ctx, rj.subject, msgID)
		if lerr != nil {
			return lerr
		}
		if !ours {
			return errFenced
		}
		newSeq = s
	default:
		return err
	}
	rj.commit(batch, newSeq)
	return nil
}

// tooLarge handles a lone frame larger than a NATS message: the journal
// cannot carry it, so the run ends with journal_lost there.
func (rj *runJournal) tooLarge(batch []*subagentstream.Frame) error {
	c := rj.c
	if len(batch) > 1 {
		// Send the batch's frames one by one.
		rj.mu.Lock()
		rest := batch[1:len(batch):len(batch)]
		for _, f := range rest {
			n := len(f.Data) + 64
			rj.qBytes += n
			rj.inBytes -= n
		}
		rj.q = append(rest, rj.q...)
		bytes := rj.inBytes
		rj.setInflightLocked(batch[:1], rj.inSince)
		rj.inBytes = bytes
		rj.mu.Unlock()
		return nil
	}
	c.log.Error("cluster: a frame is larger than a NATS message; this run is stopped and ends with journal_lost", "run_id", rj.rec.RunID, "bytes", len(batch[0].Data))
	rj.mu.Lock()
	dropped := rj.qBytes + rj.inBytes
	rj.q, rj.inflight, rj.qBytes, rj.inBytes = nil, nil, 0, 0
	rj.abandoned = true
	cancelRun := rj.run.Cancel
	rj.mu.Unlock()
	c.addPending(-dropped)
	c.obs.RunLost(LostJournal)
	c.cancelRun(cancelRun)
	return nil
}

// lastWritten reads the subject's last message: its sequence, and whether
// it carries msgID (this replica's attempt that was stored).
func (c *Cluster) lastWritten(ctx context.Context, subject, msgID string) (uint64, bool, error) {
	msg, err := c.frames.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		return 0, false, err
	}
	return msg.Sequence, msg.Header.Get(jetstream.MsgIDHeader) == msgID, nil
}

// commit records a batch the journal stored at seq and serves it to the
// run's clients on this replica.
func (rj *runJournal) commit(batch []*subagentstream.Frame, seq uint64) {
	c := rj.c
	rj.mu.Lock()
	if rj.state != stateLive {
		rj.mu.Unlock()
		return
	}
	rj.seq, rj.lastID = seq, batch[len(batch)-1].ID
	bytes, since := rj.inBytes, rj.inSince
	rj.inflight, rj.inBytes = nil, 0
	served := rj.served
	rj.mu.Unlock()
	c.addPending(-bytes)
	c.obs.JournalCommitted(time.Since(since))
	for _, f := range batch {
		_ = served.AppendFrame(f)
	}
	if last := batch[len(batch)-1]; isTerminal(last.Type) {
		served.End(last.ID)
	}
}

// writeEnd publishes the end marker after the run's last frame, then
// records the end and removes the run from the active runs and leases.
func (rj *runJournal) writeEnd() error {
	c := rj.c
	rj.mu.Lock()
	seq, last := rj.seq, rj.lastID
	rj.mu.Unlock()
	ctx, cancel := c.kvCtx(c.ctx)
	defer cancel()
	m := nats.NewMsg(rj.subject)
	m.Header.Set(hdrEnd, strconv.FormatUint(last, 10))
	msgID := rj.key + ":end"
	if _, err := c.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(seq), jetstream.WithMsgID(msgID)); err != nil {
		if !isWrongLastSeq(err) {
			return err
		}
		// Ours (a lost ack), or a survivor's end marker after our terminal
		// event: the journal holds the same history either way.
		lm, lerr := c.frames.GetLastMsgForSubject(ctx, rj.subject)
		if lerr != nil {
			return lerr
		}
		if n, ok := endOf(lm.Header); !ok || n != last {
			return errFenced
		}
	}
	rj.mu.Lock()
	rec, lrev := rj.rec, rj.leaseRev
	rj.mu.Unlock()
	rec.EndedAt, rec.End = time.Now(), EndFinished
	if cur, err := c.runs.Get(ctx, rj.key); err == nil {
		var r RunRecord
		if json.Unmarshal(cur.Value(), &r) == nil && r.End == EndLost {
			rec = r // a survivor ended it already
		}
	}
	data, _ := json.Marshal(rec)
	if _, err := c.runs.Put(ctx, rj.key, data); err != nil {
		return err
	}
	if err := c.active.Delete(ctx, rj.key); err != nil {
		return err
	}
	if err := c.lleases.Delete(ctx, rj.key, jetstream.LastRevision(lrev)); err != nil && !isWrongLastSeq(err) {
		return err
	}
	rj.mu.Lock()
	rj.state = stateDone
	rj.mu.Unlock()
	c.local.remove(rj)
	return nil
}

// fence stops writing the run: another replica ended it (its append was
// refused, its lease was taken, or its run claimed). The run is cancelled
// here (its remote tasks are cancelled by whichever replica claims each
// first: see ClaimCancel) and its clients on this replica are served the
// journal from this replica's last committed message on, so they see the
// same frames and the same single terminal as everyone else.
func (rj *runJournal) fence(why string) {
	c := rj.c
	rj.mu.Lock()
	if rj.state != stateLive {
		rj.mu.Unlock()
		return
	}
	rj.state = stateFenced
	bytes := rj.qBytes + rj.inBytes
	rj.q, rj.inflight, rj.qBytes, rj.inBytes = nil, nil, 0, 0
	begun := rj.served != nil
	rj.mu.Unlock()
	c.addPending(-bytes)
	c.local.remove(rj)
	c.obs.RunLost(LostFenced)
	c.log.Warn("cluster: another replica ended this replica's run ("+why+"); stopping it here and serving the journal's end", "run_id", rj.rec.RunID)
	if begun {
		rj.afterFence()
	}
}

// afterFence cancels the fenced run and feeds its served stream from the
// journal.
func (rj *runJournal) afterFence() {
	c := rj.c
	rj.mu.Lock()
	run, served, from := rj.run, rj.served, rj.seq+1
	rj.mu.Unlock()
	c.fenced.add(run.SDKRunID)
	c.cancelRun(run.Cancel)
	c.spawn(func() {
		backoff := 100 * time.Millisecond
		for !served.Ended() && c.ctx.Err() == nil {
			if _, err := c.readFrom(c.ctx, rj.subject, from, served, true, nil); err != nil && c.ctx.Err() == nil {
				c.log.Debug("cluster: reading a fenced run's journal; will retry", "run_id", rj.rec.RunID, "err", err)
				if !c.sleep(backoff) {
					break
				}
				backoff = min(backoff*2, 5*time.Second)
			}
		}
		if !served.Ended() {
			served.Stop()
		}
	})
}

// cancelRun cancels a run in the background (bounded); nil does nothing.
func (c *Cluster) cancelRun(cancel func(context.Context) error) {
	if cancel == nil {
		return
	}
	c.spawn(func() {
		ctx, stop := context.WithTimeout(c.ctx, 30*time.Second)
		defer stop()
		_ = cancel(ctx)
	})
}

// addPending adds n to the bytes waiting to be published.
func (c *Cluster) addPending(n int) {
	if n == 0 {
		return
	}
	c.obs.JournalPending(int(c.pending.Add(int64(n))))
}

// flushJournals waits until no run's publisher has work, or ctx ends.
func (c *Cluster) flushJournals(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for c.publishers.Load() > 0 {
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// localRuns are the runs this replica journals (by key), and the
// reservations no run has taken yet.
type localRuns struct {
	mu       sync.Mutex
	runs     map[string]*runJournal
	reserved map[string]*runJournal
}

func newLocalRuns() *localRuns {
	return &localRuns{runs: map[string]*runJournal{}, reserved: map[string]*runJournal{}}
}

func (l *localRuns) add(rj *runJournal) {
	l.mu.Lock()
	l.runs[rj.key] = rj
	l.mu.Unlock()
}

func (l *localRuns) remove(rj *runJournal) {
	l.mu.Lock()
	if l.runs[rj.key] == rj {
		delete(l.runs, rj.key)
	}
	l.mu.Unlock()
}

func (l *localRuns) get(key string) *runJournal {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[key]
}

func (l *localRuns) reserve(rj *runJournal) {
	l.mu.Lock()
	l.reserved[rj.key] = rj
	l.mu.Unlock()
}

// takeReserved hands the reservation under key to the run that begins.
func (l *localRuns) takeReserved(key string) *runJournal {
	l.mu.Lock()
	defer l.mu.Unlock()
	rj := l.reserved[key]
	delete(l.reserved, key)
	return rj
}

// unreserve removes a reservation no run took; false when one did.
func (l *localRuns) unreserve(rj *runJournal) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reserved[rj.key] != rj {
		return false
	}
	delete(l.reserved, rj.key)
	return true
}

func (l *localRuns) isReserved(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reserved[key] != nil
}

func (l *localRuns) snapshot() []*runJournal {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*runJournal, 0, len(l.runs))
	for _, rj := range l.runs {
		out = append(out, rj)
	}
	return out
}

// fencedRuns remembers (for an hour) the SDK run ids of this replica's
// runs that another replica ended: their audit records are that replica's
// to write.
type fencedRuns struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func (f *fencedRuns) add(sdkRunID string) {
	if sdkRunID == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]time.Time{}
	}
	now := time.Now()
	for id, at := range f.m {
		if now.Sub(at) > time.Hour {
			delete(f.m, id)
		}
	}
	f.m[sdkRunID] = now
}

func (f *fencedRuns) has(sdkRunID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.m[sdkRunID]
	return ok
}

// spawnGuard lets goroutines be added to the Cluster's WaitGroup only
// before Close waits for it.
type spawnGuard struct {
	sync.Mutex
	closed bool
}

// spawn runs f on a goroutine owned by the Cluster; false (f not run)
// once the cluster is closing.
func (c *Cluster) spawn(f func()) bool {
	c.spawnMu.Lock()
	defer c.spawnMu.Unlock()
	if c.spawnMu.closed {
		return false
	}
	c.wg.Go(f)
	return true
}
