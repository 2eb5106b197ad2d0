package subagentstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
)

// Errors of Subscribe.
var (
	// ErrUnknownCursor: the cursor is newer than anything the run emitted.
	ErrUnknownCursor = errors.New("subagentstream: cursor is not in this run's stream")
	// ErrComplete: the client already has the whole stream, terminal
	// event included; there is nothing to resume.
	ErrComplete = errors.New("subagentstream: the stream is complete up to this cursor")
	// ErrTooSlow: the subscriber fell behind its bound
	// (Options.SubscriberMaxQueued, SubscriberMaxQueuedBytes) and was
	// disconnected; resume with Subscribe(last frame id received).
	ErrTooSlow = errors.New("subagentstream: the subscriber fell too far behind and was disconnected; resume from its last frame id")
)

// Subscriber is one client's view of a Stream. Critical and structural
// frames are never dropped; when the client is slow its subagent text deltas
// are coalesced per (delegation, message), keeping their order; beyond
// SubscriberMaxBytes of queued delta text, deltas are dropped and a
// stream.dropped marker says so. What it holds of the frames that arrived
// while it was attached is bounded (SubscriberMaxQueued frames,
// SubscriberMaxQueuedBytes): a frame beyond that which may not be dropped
// disconnects it (ErrTooSlow), its queue is let go, and its client resumes
// from the replay log. Next is not safe for concurrent use.
type Subscriber struct {
	s              *Stream
	buffer         int
	maxBytes       int
	maxQueued      int
	maxQueuedBytes int
	// replayed is the last frame id in the log when the subscriber
	// joined: frames up to it are replayed, not relayed live.
	replayed uint64

	mu sync.Mutex
	// A subscriber reads pre, then tail, then queue. pre are the frames
	// that re-open what was open at its cursor; tail is what it still has
	// to read of the log's packed prefix (its frames are made as they are
	// taken); queue holds the frames of the log's unpacked tail when it
	// joined, then those pushed live.
	pre   []*Frame
	tail  *replayTail
	queue []*Frame
	// volBytes is the delta text queued live (replayed frames are the
	// log's and not counted), bounded by maxBytes.
	volBytes int
	dropped  map[string]int // delegation id -> dropped deltas not yet reported
	ended    bool           // the stream ended: no more frames will be pushed
	closed   bool
	wake     chan struct{}
	// live and liveBytes count the queued frames pushed live (id after
	// replayed) and their JSON bytes, bounded by maxQueued and
	// maxQueuedBytes; peakLive and peakBytes are their largest values.
	live, liveBytes     int
	peakLive, peakBytes int
	// cut: disconnected for falling behind; onCut, set by the writer of
	// the subscriber's response, ends that response (once).
	cut   bool
	onCut func()
	// direct is the subscriber's response when it is written on its own
	// connection (direct.go): the stream has the goroutine that pushed a
	// frame write it, after releasing the stream's lock, instead of
	// waking the response's goroutine.
	direct *directConn
}

// Subscribe returns a subscriber that receives every frame after the
// cursor (0: from the start), preceded, for a resumed stream, by frames
// (without ids) that re-open what was open at the cursor, and by a
// stream.replay_gap marker when the cursor is older than the replay buffer.
// Whether the frames are in the log's packed prefix, its tail, or packed
// since the stream ended, the answer is the same.
func (s *Stream) Subscribe(after uint64) (*Subscriber, error) {
	s.mu.Lock()
	if after > s.lastID {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %d is beyond the last event %d of run %s", ErrUnknownCursor, after, s.lastID, s.runID)
	}
	if s.ended && after == s.lastID {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: run %s ended at event %d", ErrComplete, s.runID, s.lastID)
	}
	sub := &Subscriber{s: s, buffer: s.opts.SubscriberBuffer, maxBytes: s.opts.SubscriberMaxBytes, maxQueued: s.opts.SubscriberMaxQueued,
		maxQueuedBytes: s.opts.SubscriberMaxQueuedBytes, replayed: s.lastID, dropped: map[string]int{}, wake: make(chan struct{}, 1)}
	// The subscriber reads the log from id from on, after the re-opening
	// of what is open before id reopenAt (none for 0), and a gap marker.
	from, reopenAt, gap := after+1, after+1, false
	switch {
	case after == 0 && s.firstID == 1:
		reopenAt = 0 // a fresh subscriber: everything, as it was emitted
	case after+1 < s.firstID:
		from, reopenAt, gap = s.firstID, s.firstID, true // older than the log
	}
	tailID := s.lastID + 1 - uint64(len(s.log))
	first := s.firstID
	var (
		cur *packedCursor // the packed prefix from the block holding from
		st  *openState    // the state there, or at reopenAt when it is in the tail
	)
	if from < tailID {
		cur, st = s.packed.cursorAt(from)
	} else if reopenAt != 0 {
		st = s.tailBase.clone()
		for _, f := range s.log[:reopenAt-tailID] {
			st.applyFrame(f)
		}
		sub.pre = s.preamble(st, after, first, gap)
	}
	sub.queue = append(sub.queue, s.log[max(from, tailID)-tailID:]...)
	if s.ended {
		sub.ended = true
	} else {
		s.subs[sub] = struct{}{}
	}
	s.mu.Unlock()
	if cur == nil {
		return sub, nil
	}
	// The packed prefix: the state at the cursor and the frames after it
	// are read without the stream's lock. The subscriber is not handed out
	// yet: only push, which queues after them, may touch it meanwhile.
	if err := cur.applyTo(st, from); err != nil {
		sub.Close()
		return nil, fmt.Errorf("subagentstream: replaying run %s: %w", s.runID, err)
	}
	var pre []*Frame
	if reopenAt != 0 {
		pre = s.preamble(st, after, first, gap)
	}
	sub.mu.Lock()
	if !sub.cut {
		sub.pre, sub.tail = pre, &replayTail{packedCursor: cur, s: s}
	}
	sub.mu.Unlock()
	return sub, nil
}

// preamble returns the frames, without ids, that re-open the state st for
// a subscriber resuming after the cursor, with a stream.replay_gap marker
// (the log starting at first) when gap is set.
func (s *Stream) preamble(st *openState, after, first uint64, gap bool) []*Frame {
	at := s.opts.Clock()
	var out []*Frame
	for _, ev := range st.reopen(at, s.threadID, s.runID) {
		if f := s.frame(ev); f != nil {
			out = append(out, f)
		}
	}
	if gap {
		marker := agui.NewCustomEvent(EventReplayGap, map[string]any{"from": after + 1, "to": first - 1}, at)
		if f := s.frame(marker); f != nil {
			out = append(out, f)
		}
	}
	return out
}

// push queues a live frame, coalescing or dropping deltas under pressure.
// It reports cut when f does not fit the subscriber's bound and it may not
// be dropped: the subscriber is then cut (its queue let go; the caller
// detaches it and calls disconnect). It reports direct when the caller is
// to write what it queued (writeDirect) rather than the response's own
// goroutine, which push then does not wake. Called with the stream's lock
// held.
func (sub *Subscriber) push(f *Frame) (cut, direct bool) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.closed || sub.cut {
		return false, false
	}
	full := sub.live >= sub.maxQueued || sub.liveBytes+len(f.Data) > sub.maxQueuedBytes
	if d := f.delta; d != nil {
		if sub.pendingLocked() >= sub.buffer && sub.coalesce(f) {
			if sub.direct != nil {
				return false, true
			}
			sub.signal()
			return false, false
		}
		if sub.volBytes+len(d.text) > sub.maxBytes || full {
			sub.dropped[d.delegationID]++
			if o := sub.s.opts.Observer; o != nil {
				o.Dropped(DropMux, 1)
			}
			return false, false
		}
		sub.volBytes += len(d.text)
	} else if full {
		sub.cut = true
		sub.pre, sub.queue, sub.tail, sub.live, sub.liveBytes, sub.volBytes = nil, nil, nil, 0, 0, 0
		clear(sub.dropped)
		sub.signal()
		return true, false
	} else if len(sub.dropped) > 0 {
		for id, n := range sub.dropped {
			if ev := agui.NewCustomEvent(EventStreamDropped, map[string]any{"dropped": n, "delegationId": id}, sub.s.opts.Clock()); ev != nil {
				if mf := sub.s.frame(ev); mf != nil {
					sub.queue = append(sub.queue, mf)
				}
			}
		}
		clear(sub.dropped)
	}
	sub.queue = append(sub.queue, f)
	sub.live++
	sub.liveBytes += len(f.Data)
	sub.peakLive, sub.peakBytes = max(sub.peakLive, sub.live), max(sub.peakBytes, sub.liveBytes)
	if sub.direct != nil {
		return false, true
	}
	sub.signal()
	return false, false
}

// setDirect makes d the subscriber's response: push leaves the writing of
// a frame to the goroutine that pushed it (writeDirect).
func (sub *Subscriber) setDirect(d *directConn) {
	sub.mu.Lock()
	sub.direct = d
	sub.mu.Unlock()
}

// writeDirect writes what was pushed to a subscriber whose push reported
// direct; called without the stream's lock.
func (sub *Subscriber) writeDirect() {
	sub.mu.Lock()
	d := sub.direct
	sub.mu.Unlock()
	if d != nil {
		d.written()
	} else {
		sub.signal()
	}
}

// disconnect ends the response of a subscriber that was cut (onCut), once
// its writer has set it; called without the stream's lock.
func (sub *Subscriber) disconnect() {
	sub.mu.Lock()
	f := sub.onCut
	sub.onCut = nil
	sub.mu.Unlock()
	if f != nil {
		f()
	}
}

// setOnCut installs what ends the subscriber's response when it is cut
// (at once if it already was).
func (sub *Subscriber) setOnCut(f func()) {
	sub.mu.Lock()
	if !sub.cut {
		sub.onCut = f
		f = nil
	}
	sub.mu.Unlock()
	if f != nil {
		f()
	}
}

// Cut reports whether the subscriber was disconnected for falling behind
// (ErrTooSlow).
func (sub *Subscriber) Cut() bool {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.cut
}

// coalesce merges the newest queued delta of the same delegation and message
// into f and moves it to the tail (f keeps its newer id, so ids still
// increase). It refuses when another event of the delegation lies between,
// and when it finds none in queue (frames still to be read from the log's
// packed prefix are not coalesced).
func (sub *Subscriber) coalesce(f *Frame) bool {
	d := f.delta
	for i := len(sub.queue) - 1; i >= 0; i-- {
		q := sub.queue[i]
		if q.delta == nil {
			if q.ID != 0 && q.delegation == d.delegationID {
				return false
			}
			continue
		}
		if q.delta.delegationID != d.delegationID {
			continue
		}
		if q.delta.messageID != d.messageID {
			return false
		}
		merged := q.delta.text + d.text
		nf := d.reframe(sub.s, merged)
		if nf == nil {
			return false
		}
		nf.ID, nf.received = f.ID, q.received
		sub.volBytes += len(d.text)
		if q.ID <= sub.replayed {
			// q was replayed from the log, not counted: the merged frame
			// is the client's own now.
			sub.volBytes += len(q.delta.text)
		} else {
			sub.live--
			sub.liveBytes -= len(q.Data)
		}
		sub.live++
		sub.liveBytes += len(nf.Data)
		sub.peakLive, sub.peakBytes = max(sub.peakLive, sub.live), max(sub.peakBytes, sub.liveBytes)
		sub.queue = append(sub.queue[:i], sub.queue[i+1:]...)
		sub.queue = append(sub.queue, nf)
		return true
	}
	return false
}

// eventDelegation returns the delegation id a subagent event belongs to
// ("" for parent events).
func eventDelegation(ev events.Event) string {
	switch e := ev.(type) {
	case *SubagentStartedEvent:
		return e.SubagentRunID
	case *SubagentFinishedEvent:
		return e.SubagentRunID
	case *SubagentErrorEvent:
		return e.SubagentRunID
	case *AttributedCustomEvent:
		return e.SubagentRunID
	}
	if v, ok := customValue(ev); ok {
		if id, ok := v["delegationId"].(string); ok {
			return id
		}
	}
	return ""
}

func (sub *Subscriber) signal() {
	select {
	case sub.wake <- struct{}{}:
	default:
	}
}

func (sub *Subscriber) end() {
	sub.mu.Lock()
	sub.ended = true
	sub.mu.Unlock()
	sub.signal()
}

// Pending returns how many frames wait for this subscriber.
func (sub *Subscriber) Pending() int {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.pendingLocked()
}

func (sub *Subscriber) pendingLocked() int {
	n := len(sub.pre) + len(sub.queue)
	if sub.tail != nil {
		n += sub.tail.remaining()
	}
	return n
}

// take returns the next queued frame without blocking; nil when there is
// none, with eof when none will come any more. After a nil frame without
// eof, sub.wake fires when there may be one. A block of the log's packed
// prefix is decompressed without the subscriber's lock, which the stream
// takes to push a frame.
func (sub *Subscriber) take() (f *Frame, eof bool) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	for {
		if sub.cut {
			return nil, true
		}
		if len(sub.pre) > 0 {
			f = sub.pre[0]
			sub.pre[0] = nil
			sub.pre = sub.pre[1:]
			return f, false
		}
		t := sub.tail
		if t == nil {
			break
		}
		if t.needsBlock() {
			// Only this reader moves t: Close and a cut let go of it.
			sub.mu.Unlock()
			err := t.load()
			sub.mu.Lock()
			if err != nil {
				t.buf = nil // next reports it
			}
			if sub.tail != t {
				continue
			}
		}
		if f = t.next(); f != nil {
			return f, false
		}
		sub.tail = nil
	}
	if len(sub.queue) == 0 {
		return nil, sub.ended || sub.closed
	}
	f = sub.queue[0]
	sub.queue[0] = nil
	if len(sub.queue) == 1 {
		sub.queue = sub.queue[:0] // emptied: reuse the backing array from its start
	} else {
		sub.queue = sub.queue[1:]
	}
	if f.delta != nil && f.ID > sub.replayed {
		sub.volBytes -= len(f.delta.text) // pushed live: counted by push or coalesce
	}
	if f.ID > sub.replayed {
		sub.live--
		sub.liveBytes -= len(f.Data)
	}
	return f, false
}

// Next returns the next frame, blocking until there is one. It returns
// io.EOF after the stream's last frame, ErrTooSlow once the subscriber was
// disconnected for falling behind, and ctx's error if ctx ends first.
func (sub *Subscriber) Next(ctx context.Context) (*Frame, error) {
	for {
		f, eof := sub.take()
		if f != nil {
			return f, nil
		}
		if eof {
			if sub.Cut() {
				return nil, ErrTooSlow
			}
			return nil, io.EOF
		}
		select {
		case <-sub.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close detaches the subscriber from its stream.
func (sub *Subscriber) Close() {
	sub.s.mu.Lock()
	delete(sub.s.subs, sub)
	sub.s.mu.Unlock()
	sub.mu.Lock()
	sub.closed = true
	sub.pre, sub.queue, sub.tail = nil, nil, nil
	sub.mu.Unlock()
	sub.signal()
}

func customValue(ev events.Event) (map[string]any, bool) {
	if c, ok := ev.(*events.CustomEvent); ok {
		m, ok := c.Value.(map[string]any)
		return m, ok
	}
	return nil, false
}
