package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
)

// mirrorIdle is how long a mirror nobody reads is kept.
const mirrorIdle = 30 * time.Second

// Run returns the record of the run with this AG-UI runId, started by
// principal ("" when run ids are global; see Reserve).
func (c *Cluster) Run(ctx context.Context, principal, runID string) (RunRecord, error) {
	r, err := c.record(ctx, runKey(principal, runID))
	if err == nil && r.RunID != runID {
		err = subagentstream.ErrNoRun
	}
	if errors.Is(err, subagentstream.ErrNoRun) {
		return RunRecord{}, fmt.Errorf("%w: %q", subagentstream.ErrNoRun, runID)
	}
	return r, err
}

// record reads the run record under key.
func (c *Cluster) record(ctx context.Context, key string) (RunRecord, error) {
	kctx, cancel := c.kvCtx(ctx)
	defer cancel()
	e, err := c.runs.Get(kctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return RunRecord{}, subagentstream.ErrNoRun
	}
	if err != nil {
		return RunRecord{}, fmt.Errorf("cluster: reading a run record: %w", err)
	}
	var r RunRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return RunRecord{}, subagentstream.ErrNoRun
	}
	return r, nil
}

// retained reports whether a run is active or ended within the retention.
func (c *Cluster) retained(r RunRecord) bool {
	return r.EndedAt.IsZero() || time.Since(r.EndedAt) <= c.cfg.Retention
}

// Source returns the hub's Source: other replicas' runs, mirrored from the
// frames stream. principal names the principal a request's context acts
// for (the host's authentication), nil when run ids are global: a run is
// looked up under the requester's own principal, as Reserve stored it.
func (c *Cluster) Source(principal func(context.Context) string) subagentstream.Source {
	if principal == nil {
		principal = func(context.Context) string { return "" }
	}
	return &source{ms: c.mirrors, principal: principal}
}

type source struct {
	ms        *mirrors
	principal func(context.Context) string
}

func (s *source) Open(ctx context.Context, runID string) (*subagentstream.Stream, string, func(), error) {
	return s.ms.open(ctx, s.principal(ctx), runID)
}

// Known implements subagentstream.Source for run ids without a principal:
// a record of another run exists and is active or retained. A runId this
// replica has just reserved is not "known" (Reserve decided it).
func (s *source) Known(runID string) bool {
	c := s.ms.c
	key := runKey("", runID)
	if c.local.isReserved(key) {
		return false
	}
	r, err := c.record(c.ctx, key)
	return err == nil && r.RunID == runID && c.retained(r)
}

// mirrors caches the mirrors this replica serves.
type mirrors struct {
	c *Cluster

	mu sync.Mutex
	m  map[string]*mirrorEntry // by run key
}

type mirrorEntry struct {
	replica   string // the run's replica
	principal string // the principal that started the run ("" without tokens)
	m         *subagentstream.Mirror
	refs      int
	stop      context.CancelFunc
	caught    chan struct{} // closed when the mirror caught up with the stream
	err       error         // set before caught is closed when reading failed
	idle      *time.Timer
}

func newMirrors(c *Cluster) *mirrors { return &mirrors{c: c, m: map[string]*mirrorEntry{}} }

// openRetry bounds how long open retries a lookup or read that failed
// (NATS slow or briefly away) before it reports the source unavailable.
const openRetry = 5 * time.Second

// open serves Source.Open: a lookup or read that fails for another reason
// than an unknown run is retried (within openRetry and ctx): a KV timeout
// under load is not an answer.
func (ms *mirrors) open(ctx context.Context, principal, runID string) (*subagentstream.Stream, string, func(), error) {
	deadline := time.Now().Add(openRetry)
	for {
		st, owner, release, err := ms.openOnce(ctx, principal, runID)
		if err == nil || errors.Is(err, subagentstream.ErrNoRun) || errors.Is(err, ErrClosed) || ctx.Err() != nil || time.Now().After(deadline) {
			return st, owner, release, err
		}
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, "", nil, ctx.Err()
		}
	}
}

func (ms *mirrors) openOnce(ctx context.Context, principal, runID string) (*subagentstream.Stream, string, func(), error) {
	c := ms.c
	key := runKey(principal, runID)
	r, err := c.Run(ctx, principal, runID)
	if err != nil {
		return nil, "", nil, err
	}
	if !c.retained(r) {
		return nil, "", nil, fmt.Errorf("%w: %q ended more than %s ago", subagentstream.ErrNoRun, runID, c.cfg.Retention)
	}
	ms.mu.Lock()
	if c.ctx.Err() != nil {
		ms.mu.Unlock()
		return nil, "", nil, ErrClosed
	}
	e := ms.m[key]
	if e == nil {
		e = &mirrorEntry{replica: r.Replica, principal: r.Principal, m: subagentstream.NewMirror(r.ThreadID, r.RunID, mirrorOptions(c.cfg.Stream)), caught: make(chan struct{})}
		fctx, stop := context.WithCancel(c.ctx)
		e.stop = stop
		if !c.spawn(func() { ms.feed(fctx, e, key) }) {
			ms.mu.Unlock()
			stop()
			return nil, "", nil, ErrClosed
		}
		ms.m[key] = e
	}
	e.refs++
	if e.idle != nil {
		e.idle.Stop()
		e.idle = nil
	}
	ms.mu.Unlock()
	release := sync.OnceFunc(func() { ms.release(key, e) })
	select {
	case <-e.caught:
	case <-ctx.Done():
		release()
		return nil, "", nil, ctx.Err()
	}
	if e.err != nil {
		release()
		return nil, "", nil, e.err
	}
	return e.m.Stream(), r.Principal, release, nil
}

func (ms *mirrors) release(runID string, e *mirrorEntry) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	e.refs--
	if e.refs > 0 || ms.m[runID] != e {
		return
	}
	e.idle = time.AfterFunc(mirrorIdle, func() {
		ms.mu.Lock()
		defer ms.mu.Unlock()
		if e.refs == 0 && ms.m[runID] == e {
			delete(ms.m, runID)
			e.stop()
		}
	})
}

type followed struct{ runID, principal, key, replica string }

// followed lists the live runs of other replicas this replica serves to a
// client now.
func (ms *mirrors) followed() []followed {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	var out []followed
	for key, e := range ms.m {
		if e.refs > 0 && e.replica != ms.c.cfg.Replica && !e.m.Ended() {
			out = append(out, followed{e.m.Stream().RunID(), e.principal, key, e.replica})
		}
	}
	return out
}

func (ms *mirrors) closeAll() {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for id, e := range ms.m {
		if e.idle != nil {
			e.idle.Stop()
		}
		e.stop()
		delete(ms.m, id)
	}
}

// mirrorOptions are the options of a mirror of another replica's run: the
// stream's, without its Observer (a mirror relays no remote event itself;
// its frames' delivery is measured as the follower lag).
func mirrorOptions(o subagentstream.Options) subagentstream.Options {
	o.Observer = nil
	return o
}

// feed reads the run's frames into its mirror until the run ends or ctx
// ends; a failure to read ends the mirror where it is.
func (ms *mirrors) feed(ctx context.Context, e *mirrorEntry, key string) {
	c := ms.c
	caught := sync.OnceFunc(func() { close(e.caught) })
	defer caught()
	live := false
	_, err := c.readSubject(ctx, framesSubject(key), 1, e.m, readOpts{follow: true, caught: func() { live = true; caught() },
		onMsg: func(stored time.Time, n int) {
			if live && e.replica != c.cfg.Replica {
				lag := time.Since(stored)
				for range n {
					c.obs.FollowerLag(lag)
				}
			}
		}})
	if err != nil && ctx.Err() == nil {
		c.log.Warn("cluster: reading a run's frames", "key", key, "err", err)
		select {
		case <-e.caught:
		default:
			e.err = err
		}
	}
	if ctx.Err() != nil || err != nil {
		// Stopped, not ended: forget it so that the next reader starts over.
		ms.mu.Lock()
		if ms.m[key] == e {
			delete(ms.m, key)
		}
		ms.mu.Unlock()
		e.m.Stop()
	}
}

// readOpts tune readSubject.
type readOpts struct {
	// follow: keep reading live after catching up, until the stream ends.
	follow bool
	// caught is called once everything the subject held when reading
	// started was applied.
	caught func()
	// onFrame sees every frame read.
	onFrame func(wireFrame)
	// onMsg sees every frame message: when the server stored it, and how
	// many frames it carried.
	onMsg func(stored time.Time, frames int)
}

// readFrom applies the subject's messages from sequence from on to m (see
// readSubject); it returns the stream sequence of the last message read.
func (c *Cluster) readFrom(ctx context.Context, subject string, from uint64, m *subagentstream.Mirror, follow bool, onFrame func(wireFrame)) (uint64, error) {
	return c.readSubject(ctx, subject, from, m, readOpts{follow: follow, onFrame: onFrame})
}

// readSubject applies the subject's messages from sequence from on to m
// and returns the stream sequence of the last message read. Without
// follow it returns once it applied what the subject held when it started
// (0 and nil when that was nothing); with follow it returns when the
// mirror ended, ctx ended, or reading failed.
func (c *Cluster) readSubject(ctx context.Context, subject string, from uint64, m *subagentstream.Mirror, o readOpts) (uint64, error) {
	if o.caught == nil {
		o.caught = func() {}
	}
	var last uint64
	kctx, cancel := c.kvCtx(ctx)
	msg, err := c.frames.GetLastMsgForSubject(kctx, subject)
	cancel()
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		return 0, err
	default:
		last = msg.Sequence
	}
	if last < from {
		o.caught()
		if !o.follow {
			return 0, nil
		}
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}}
	if from > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	cons, err := c.js.OrderedConsumer(ctx, FramesStream, cfg)
	if err != nil {
		return 0, err
	}
	it, err := cons.Messages()
	if err != nil {
		return 0, err
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	var seq uint64
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return seq, ctx.Err()
			}
			return seq, err
		}
		md, err := msg.Metadata()
		if err == nil {
			seq = md.Sequence.Stream
		}
		frames, err := applyMsg(m, msg.Headers(), msg.Data())
		if err != nil {
			c.log.Warn("cluster: a message of a run's journal cannot be applied", "subject", subject, "seq", seq, "err", err)
		}
		if o.onFrame != nil {
			for _, f := range frames {
				o.onFrame(f)
			}
		}
		if o.onMsg != nil && len(frames) > 0 && md != nil {
			o.onMsg(md.Timestamp, len(frames))
		}
		if seq >= last {
			o.caught()
			if !o.follow {
				return seq, nil
			}
		}
		if m.Ended() {
			return seq, nil
		}
	}
}
