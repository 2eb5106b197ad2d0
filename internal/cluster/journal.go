package cluster

import (
	"context"
	"encoding/json"
	"errors"
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

// Journal returns the hub's Journal: every frame of this replica's runs
// goes to the frames stream, with its id and type, through the publisher.
func (c *Cluster) Journal() subagentstream.Journal { return (*journal)(c) }

type journal Cluster

// Begin implements subagentstream.Journal.
func (j *journal) Begin(run subagentstream.JournalRun) subagentstream.RunJournal {
	c := (*Cluster)(j)
	rj := &runJournal{c: c, run: run, key: token(run.RunID), subject: framesSubject(run.RunID),
		rec: RunRecord{RunID: run.RunID, ThreadID: run.ThreadID, SDKRunID: run.SDKRunID, Principal: run.Owner, Replica: c.cfg.Replica, StartedAt: time.Now()}}
	c.local.add(rj)
	c.pub.enqueue(&item{kind: itemBegin, rj: rj})
	return rj
}

// runJournal is one local run's journal.
type runJournal struct {
	c       *Cluster
	run     subagentstream.JournalRun
	key     string // token(runId): KV key
	subject string
	rec     RunRecord

	mu        sync.Mutex
	begun     bool // its record and lease were written
	overflow  bool // the buffer overflowed: no more frames are journaled
	gone      bool // not ours any more (duplicate runId, taken over): nothing more is written
	lastQueue uint64
}

// Append implements subagentstream.RunJournal; it never blocks.
func (rj *runJournal) Append(f *subagentstream.Frame) {
	rj.mu.Lock()
	if rj.overflow || rj.gone {
		rj.mu.Unlock()
		return
	}
	if rj.c.pub.full() {
		// Beyond the buffer, the run's journal is abandoned: other
		// replicas serve it up to here, then end it (journal_lost).
		rj.overflow = true
		last := rj.lastQueue
		rj.mu.Unlock()
		rj.c.log.Error("cluster: the publish buffer is full; other replicas will see this run end here", "run_id", rj.run.RunID, "last_id", last)
		rj.c.pub.enqueue(&item{kind: itemLost, rj: rj, id: last})
		return
	}
	rj.lastQueue = f.ID
	rj.mu.Unlock()
	rj.c.pub.enqueue(&item{kind: itemFrame, rj: rj, id: f.ID, typ: string(f.Type), data: f.Data})
}

// End implements subagentstream.RunJournal. A stream cut before its
// terminal event (the hub closed first) is left to its lease: a survivor
// ends it when the lease expires.
func (rj *runJournal) End(complete bool) {
	if !complete {
		rj.c.local.remove(rj)
		return
	}
	rj.mu.Lock()
	last := rj.lastQueue
	rj.mu.Unlock()
	rj.c.pub.enqueue(&item{kind: itemEnd, rj: rj, id: last})
}

// leased reports whether the run's lease is to be refreshed.
func (rj *runJournal) leased() bool {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	return rj.begun && !rj.gone
}

// disown stops writing anything of the run (another replica owns its
// records now).
func (rj *runJournal) disown() {
	rj.mu.Lock()
	rj.gone = true
	rj.mu.Unlock()
}

// isGone reports whether the run's journal was disowned.
func (rj *runJournal) isGone() bool {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	return rj.gone
}

// localRuns are the runs this replica journals.
type localRuns struct {
	mu   sync.Mutex
	runs map[*runJournal]struct{}
}

func newLocalRuns() *localRuns { return &localRuns{runs: map[*runJournal]struct{}{}} }

func (l *localRuns) add(rj *runJournal) {
	l.mu.Lock()
	l.runs[rj] = struct{}{}
	l.mu.Unlock()
}

func (l *localRuns) remove(rj *runJournal) {
	l.mu.Lock()
	delete(l.runs, rj)
	l.mu.Unlock()
}

func (l *localRuns) snapshot() []*runJournal {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*runJournal, 0, len(l.runs))
	for rj := range l.runs {
		out = append(out, rj)
	}
	return out
}

func (l *localRuns) has(runID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for rj := range l.runs {
		if rj.run.RunID == runID {
			return true
		}
	}
	return false
}

// Items of the publisher's queue.
const (
	itemBegin = iota // write the run record, lease and active entry
	itemFrame        // publish a frame
	itemEnd          // publish the end marker, record the end, drop the lease
	itemLost         // publish an end marker for an abandoned journal
)

type item struct {
	kind int
	rj   *runJournal
	id   uint64
	typ  string
	data []byte
}

// publisher sends the journal to JetStream in order, from a bounded queue:
// frames in pipelined batches (async publishes, each with a message id so
// a retry is never stored twice), run records as KV writes. Its goroutine
// is owned by the Cluster.
type publisher struct {
	c     *Cluster
	wakeC chan struct{}

	mu    sync.Mutex
	q     []*item
	bytes int
	idle  chan struct{} // closed when q is empty; nil while it is not
}

func newPublisher(c *Cluster) *publisher {
	return &publisher{c: c, wakeC: make(chan struct{}, 1)}
}

func (p *publisher) wake() {
	if p == nil {
		return
	}
	select {
	case p.wakeC <- struct{}{}:
	default:
	}
}

func (p *publisher) enqueue(it *item) {
	p.mu.Lock()
	p.q = append(p.q, it)
	p.bytes += len(it.data) + 64
	if p.idle == nil {
		p.idle = make(chan struct{})
	}
	p.mu.Unlock()
	p.wake()
}

func (p *publisher) full() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes >= p.c.cfg.BufferBytes
}

func (p *publisher) pendingBytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}

// flush waits until the queue is empty or ctx ends.
func (p *publisher) flush(ctx context.Context) error {
	p.mu.Lock()
	idle := p.idle
	p.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// batch returns the head of the queue: consecutive frames (at most 256),
// or one other item.
func (p *publisher) batch() []*item {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.q) == 0 {
		return nil
	}
	if p.q[0].kind != itemFrame {
		return p.q[:1:1]
	}
	n := 0
	for n < len(p.q) && n < 256 && p.q[n].kind == itemFrame {
		n++
	}
	return p.q[:n:n]
}

func (p *publisher) pop(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, it := range p.q[:n] {
		p.bytes -= len(it.data) + 64
	}
	clear(p.q[:n])
	p.q = p.q[n:]
	if len(p.q) == 0 {
		p.q = nil
		if p.idle != nil {
			close(p.idle)
			p.idle = nil
		}
	}
}

func (p *publisher) run() {
	c := p.c
	backoff := 100 * time.Millisecond
	for {
		b := p.batch()
		if b == nil || !c.connected.Load() {
			select {
			case <-p.wakeC:
			case <-c.ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		var err error
		switch b[0].kind {
		case itemFrame:
			err = p.frames(b)
		case itemBegin:
			err = p.begin(b[0].rj)
		case itemEnd:
			err = p.end(b[0].rj, b[0].id)
		case itemLost:
			if !b[0].rj.isGone() {
				err = p.marker(b[0].rj, b[0].id, true)
			}
		}
		if err != nil {
			c.log.Debug("cluster: publishing; will retry", "err", err)
			if !c.sleep(backoff) {
				return
			}
			backoff = min(backoff*2, 2*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		p.pop(len(b))
	}
}

// frames publishes a batch of frames and waits for every ack; on any
// failure the whole batch is published again (message ids deduplicate it,
// and mirrors apply each frame id once).
func (p *publisher) frames(b []*item) error {
	c := p.c
	futures := make([]jetstream.PubAckFuture, 0, len(b))
	for _, it := range b {
		if it.rj.isGone() {
			continue
		}
		m := nats.NewMsg(it.rj.subject)
		m.Header.Set(hdrID, strconv.FormatUint(it.id, 10))
		m.Header.Set(hdrType, it.typ)
		m.Data = it.data
		f, err := c.js.PublishMsgAsync(m, jetstream.WithMsgID(it.rj.key+":"+strconv.FormatUint(it.id, 10)))
		if err != nil {
			return err
		}
		futures = append(futures, f)
	}
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	var first error
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			first = cmpErr(first, err)
		case <-timeout.C:
			return errors.New("cluster: publish acks timed out")
		case <-c.ctx.Done():
			return ErrClosed
		}
	}
	return first
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// begin writes the run's lease, record and active entry (lease first: a
// scanner that sees the active entry finds the lease).
func (p *publisher) begin(rj *runJournal) error {
	c := p.c
	ctx, cancel := c.kvCtx(c.ctx)
	defer cancel()
	if _, err := c.leases.Put(ctx, rj.key, []byte(c.cfg.Replica)); err != nil {
		return err
	}
	data, _ := json.Marshal(rj.rec)
	if _, err := c.runs.Create(ctx, rj.key, data); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			if cur, gerr := c.runs.Get(ctx, rj.key); gerr == nil && isOwnRecord(cur.Value(), rj) {
				// Our own earlier attempt went through.
			} else {
				c.log.Error("cluster: another replica has a run with this runId; this run is not journaled (its stream is served by this replica only)", "run_id", rj.run.RunID)
				rj.disown()
				c.local.remove(rj)
				return nil
			}
		} else {
			return err
		}
	}
	if _, err := c.active.Put(ctx, rj.key, []byte(rj.run.RunID)); err != nil {
		return err
	}
	rj.mu.Lock()
	rj.begun = true
	rj.mu.Unlock()
	return nil
}

func isOwnRecord(data []byte, rj *runJournal) bool {
	var r RunRecord
	return json.Unmarshal(data, &r) == nil && r.Replica == rj.rec.Replica && r.SDKRunID == rj.rec.SDKRunID
}

// end publishes the end marker, then records the end and removes the run
// from the active runs and leases.
func (p *publisher) end(rj *runJournal, last uint64) error {
	c := p.c
	rj.mu.Lock()
	begun, gone := rj.begun, rj.gone
	rj.mu.Unlock()
	if !begun || gone {
		c.local.remove(rj)
		return nil
	}
	if err := p.marker(rj, last, false); err != nil {
		return err
	}
	ctx, cancel := c.kvCtx(c.ctx)
	defer cancel()
	rec := rj.rec
	rec.EndedAt, rec.End = time.Now(), EndFinished
	if cur, err := c.runs.Get(ctx, rj.key); err == nil {
		var r RunRecord
		if json.Unmarshal(cur.Value(), &r) == nil && r.End == EndLost {
			rec = r // a survivor ended it already (this replica was cut off)
		}
	}
	data, _ := json.Marshal(rec)
	if _, err := c.runs.Put(ctx, rj.key, data); err != nil {
		return err
	}
	if err := c.active.Delete(ctx, rj.key); err != nil {
		return err
	}
	if err := c.leases.Delete(ctx, rj.key); err != nil {
		return err
	}
	c.local.remove(rj)
	return nil
}

// marker publishes an end marker after frame last; lost marks a journal
// abandoned before the run's end.
func (p *publisher) marker(rj *runJournal, last uint64, lost bool) error {
	m := nats.NewMsg(rj.subject)
	m.Header.Set(hdrEnd, strconv.FormatUint(last, 10))
	id := rj.key + ":end"
	if lost {
		m.Header.Set(hdrLost, "journal")
		id = rj.key + ":lost"
	}
	ctx, cancel := p.c.kvCtx(p.c.ctx)
	defer cancel()
	_, err := p.c.js.PublishMsg(ctx, m, jetstream.WithMsgID(id))
	return err
}
