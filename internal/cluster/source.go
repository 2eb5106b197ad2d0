package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
)

// mirrorIdle is how long a mirror nobody reads is kept.
const mirrorIdle = 30 * time.Second

// Run returns the record of the run with this AG-UI runId.
func (c *Cluster) Run(ctx context.Context, runID string) (RunRecord, error) {
	kctx, cancel := c.kvCtx(ctx)
	defer cancel()
	e, err := c.runs.Get(kctx, token(runID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return RunRecord{}, fmt.Errorf("%w: %q", subagentstream.ErrNoRun, runID)
	}
	if err != nil {
		return RunRecord{}, fmt.Errorf("cluster: reading run %q: %w", runID, err)
	}
	var r RunRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil || r.RunID != runID {
		return RunRecord{}, fmt.Errorf("%w: %q", subagentstream.ErrNoRun, runID)
	}
	return r, nil
}

// retained reports whether a run is active or ended within the retention.
func (c *Cluster) retained(r RunRecord) bool {
	return r.EndedAt.IsZero() || time.Since(r.EndedAt) <= c.cfg.Retention
}

// Source returns the hub's Source: other replicas' runs, mirrored from the
// frames stream.
func (c *Cluster) Source() subagentstream.Source { return c.mirrors }

// mirrors caches the mirrors this replica serves.
type mirrors struct {
	c *Cluster

	mu sync.Mutex
	m  map[string]*mirrorEntry
}

type mirrorEntry struct {
	replica string // the run's replica
	m       *subagentstream.Mirror
	refs    int
	stop    context.CancelFunc
	caught  chan struct{} // closed when the mirror caught up with the stream
	err     error         // set before caught is closed when reading failed
	idle    *time.Timer
}

func newMirrors(c *Cluster) *mirrors { return &mirrors{c: c, m: map[string]*mirrorEntry{}} }

// Known implements subagentstream.Source: the run has a record in the
// cluster and is active or retained.
func (ms *mirrors) Known(runID string) bool {
	r, err := ms.c.Run(ms.c.ctx, runID)
	return err == nil && ms.c.retained(r)
}

// Open implements subagentstream.Source.
func (ms *mirrors) Open(ctx context.Context, runID string) (*subagentstream.Stream, string, func(), error) {
	c := ms.c
	r, err := c.Run(ctx, runID)
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
	e := ms.m[runID]
	if e == nil {
		e = &mirrorEntry{replica: r.Replica, m: subagentstream.NewMirror(r.ThreadID, r.RunID, c.cfg.Stream), caught: make(chan struct{})}
		fctx, stop := context.WithCancel(c.ctx)
		e.stop = stop
		ms.m[runID] = e
		c.wg.Go(func() { ms.feed(fctx, e, runID) })
	}
	e.refs++
	if e.idle != nil {
		e.idle.Stop()
		e.idle = nil
	}
	ms.mu.Unlock()
	release := sync.OnceFunc(func() { ms.release(runID, e) })
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

type followed struct{ runID, replica string }

// followed lists the live runs of other replicas this replica serves to a
// client now.
func (ms *mirrors) followed() []followed {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	var out []followed
	for id, e := range ms.m {
		if e.refs > 0 && e.replica != ms.c.cfg.Replica && !e.m.Ended() {
			out = append(out, followed{id, e.replica})
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

// feed reads the run's frames into its mirror until the run ends or ctx
// ends; a failure to read ends the mirror where it is.
func (ms *mirrors) feed(ctx context.Context, e *mirrorEntry, runID string) {
	caught := sync.OnceFunc(func() { close(e.caught) })
	defer caught()
	err := ms.c.read(ctx, runID, e.m, caught)
	if err != nil && ctx.Err() == nil {
		ms.c.log.Warn("cluster: reading a run's frames", "run_id", runID, "err", err)
		select {
		case <-e.caught:
		default:
			e.err = err
		}
	}
	if ctx.Err() != nil || err != nil {
		// Stopped, not ended: forget it so that the next reader starts over.
		ms.mu.Lock()
		if ms.m[runID] == e {
			delete(ms.m, runID)
		}
		ms.mu.Unlock()
		e.m.Stop()
	}
}

// read applies the run's frames stream to m, from its first message, and
// calls caught once it has applied everything the stream held when reading
// started; it returns when the run's stream ended (nil), ctx ended, or
// reading failed. It returns the stream sequence of the last message read.
func (c *Cluster) read(ctx context.Context, runID string, m *subagentstream.Mirror, caught func()) error {
	_, err := c.readSeq(ctx, runID, m, caught, true, nil)
	return err
}

// readSeq is read; without follow it returns once caught up. onFrame, when
// not nil, sees the id and type of every frame message read.
func (c *Cluster) readSeq(ctx context.Context, runID string, m *subagentstream.Mirror, caught func(), follow bool, onFrame func(id uint64, typ events.EventType)) (uint64, error) {
	subject := framesSubject(runID)
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
	if last == 0 {
		caught()
		if !follow {
			return 0, nil
		}
	}
	cons, err := c.js.OrderedConsumer(ctx, FramesStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
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
		if md, err := msg.Metadata(); err == nil {
			seq = md.Sequence.Stream
		}
		if onFrame != nil && msg.Headers().Get(hdrEnd) == "" {
			if n, err := strconv.ParseUint(msg.Headers().Get(hdrID), 10, 64); err == nil && n > 0 {
				onFrame(n, events.EventType(msg.Headers().Get(hdrType)))
			}
		}
		applyMsg(m, msg.Headers().Get(hdrID), msg.Headers().Get(hdrType), msg.Headers().Get(hdrEnd), msg.Headers().Get(hdrLost), msg.Data())
		if seq >= last {
			caught()
			if !follow {
				return seq, nil
			}
		}
		if m.Ended() {
			return seq, nil
		}
	}
}

// applyMsg applies one message of the frames stream to a mirror.
func applyMsg(m *subagentstream.Mirror, id, typ, end, lost string, data []byte) {
	if end != "" {
		n, err := strconv.ParseUint(end, 10, 64)
		if err != nil {
			return
		}
		if lost != "" {
			if m.LastID() >= n {
				m.Abort("journal_lost", "the replica running this run could not publish all of its stream; see that replica's log")
			}
			return
		}
		m.End(n)
		return
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil || n == 0 {
		return
	}
	_ = m.Append(n, events.EventType(typ), data)
}
