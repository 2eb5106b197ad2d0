package agentadaptor

import (
	"sync"
	"time"
)

// payloadQueue decouples the producer (the run's parser) from the consumer of
// StreamEvents. Push never blocks. One dispatcher goroutine, owned by the
// queue and started by start, moves payloads to out, assigns Seq in
// delivery order, and is the only closer of out.
type payloadQueue struct {
	runID   string
	buffer  int
	hardCap int
	linger  time.Duration

	mu           sync.Mutex
	items        []StreamPayload
	pendingDrops int
	gone         bool // hard cap reached: the consumer stopped reading
	terminal     bool // the terminal payload has been pushed
	discard      bool // nobody will read: keep nothing, out is closed

	wake    chan struct{} // capacity 1: "items changed"
	ended   chan struct{} // closed when the run has ended (starts the linger)
	endOnce sync.Once
	out     chan StreamPayload
	stopped chan struct{} // closed when the dispatcher returned
}

func newPayloadQueue(runID string, buffer, hardCap int, linger time.Duration) *payloadQueue {
	if buffer < 1 {
		buffer = 1
	}
	if hardCap < buffer {
		hardCap = buffer
	}
	q := &payloadQueue{
		runID: runID, buffer: buffer, hardCap: hardCap, linger: linger,
		wake:    make(chan struct{}, 1),
		ended:   make(chan struct{}),
		out:     make(chan StreamPayload, 8), // the queue above it holds the backlog: a small hand-over buffer per active run
		stopped: make(chan struct{}),
	}
	return q
}

// start launches the dispatcher. Until then pushed payloads only queue.
func (q *payloadQueue) start() { go q.dispatch() }

// discardAll makes the queue keep nothing and closes out; used instead of
// start when the stream has no reader.
func (q *payloadQueue) discardAll() {
	q.mu.Lock()
	q.discard = true
	q.items = nil
	q.mu.Unlock()
	close(q.out)
	close(q.stopped)
}

// push enqueues p according to the backpressure policy. After the terminal
// payload, nothing more is accepted.
func (q *payloadQueue) push(p StreamPayload) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.terminal || q.discard {
		return
	}
	term := p.Kind.Terminal()
	switch {
	case term:
	case q.gone:
		q.pendingDrops++
		return
	case p.Kind.Droppable() && len(q.items) >= q.buffer:
		q.pendingDrops++
		return
	case len(q.items) >= q.hardCap:
		q.gone = true
		q.pendingDrops++
		return
	}
	if q.pendingDrops > 0 {
		q.items = append(q.items, StreamPayload{Kind: KindStreamDropped, Dropped: q.pendingDrops, Time: time.Now()})
		q.pendingDrops = 0
	}
	if p.Time.IsZero() {
		p.Time = time.Now()
	}
	q.items = append(q.items, p)
	q.terminal = term
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// end marks the run as ended: undelivered payloads wait at most linger.
func (q *payloadQueue) end() { q.endOnce.Do(func() { close(q.ended) }) }

func (q *payloadQueue) pop() (StreamPayload, bool, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return StreamPayload{}, false, q.terminal
	}
	p := q.items[0]
	q.items[0] = StreamPayload{}
	q.items = q.items[1:]
	if len(q.items) == 0 {
		q.items = nil // let the backing array go
	}
	return p, true, false
}

func (q *payloadQueue) dispatch() {
	defer close(q.stopped)
	defer close(q.out)
	var seq uint64
	ended := q.ended
	var lingerC <-chan time.Time
	for {
		p, ok, done := q.pop()
		if done {
			return
		}
		if !ok {
			select {
			case <-q.wake:
			case <-ended:
				ended = nil
				t := time.NewTimer(q.linger)
				defer t.Stop()
				lingerC = t.C
			case <-lingerC:
				return
			}
			continue
		}
		seq++
		p.Seq = seq
		p.RunID = q.runID
		for sent := false; !sent; {
			select {
			case q.out <- p:
				sent = true
			case <-ended:
				ended = nil
				t := time.NewTimer(q.linger)
				defer t.Stop()
				lingerC = t.C
			case <-lingerC:
				// Nobody read the rest in time: discard it and close.
				return
			}
		}
	}
}
