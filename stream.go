package agentadaptor

import (
	"sync"
	"time"
)

// payloadQueue decouples the producer (the run's parser) from the consumer of
// StreamEvents. Push never blocks. A dispatcher goroutine, owned by the
// queue, moves payloads to out, assigns Seq in delivery order, and is the
// only closer of out. It runs only while there is something to deliver:
// push starts it (once start has been called), and it returns when the
// queue is empty, so a run whose reader keeps up holds no goroutine for its
// stream between payloads.
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
	started      bool // start was called: push may start the dispatcher
	running      bool // a dispatcher goroutine is running
	closed       bool // out is closed (set by the last dispatcher)
	seq          uint64
	lingerC      <-chan time.Time // the linger, once the run ended with payloads undelivered
	lingerT      *time.Timer

	ended   chan struct{} // closed when the run has ended (starts the linger)
	endOnce sync.Once
	out     chan StreamPayload
	stopped chan struct{} // closed when the last dispatcher returned
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
		ended:   make(chan struct{}),
		out:     make(chan StreamPayload, 8), // the queue above it holds the backlog: a small hand-over buffer per active run
		stopped: make(chan struct{}),
	}
	return q
}

// start lets payloads flow: until then pushed payloads only queue.
func (q *payloadQueue) start() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.started = true
	q.wakeLocked()
}

// wakeLocked starts the dispatcher when there is something to deliver and
// none is running.
func (q *payloadQueue) wakeLocked() {
	if q.started && !q.running && !q.closed && len(q.items) > 0 {
		q.running = true
		go q.dispatch()
	}
}

// discardAll makes the queue keep nothing and closes out; used instead of
// start when the stream has no reader.
func (q *payloadQueue) discardAll() {
	q.mu.Lock()
	q.discard = true
	q.items = nil
	q.closed = true
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
	q.wakeLocked()
}

// end marks the run as ended: undelivered payloads wait at most linger.
func (q *payloadQueue) end() { q.endOnce.Do(func() { close(q.ended) }) }

// pop takes the next payload. When there is none, the calling dispatcher
// must return: last reports that it is the last one (the terminal payload
// was delivered) and must close out.
func (q *payloadQueue) pop() (p StreamPayload, ok, last bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		q.running = false
		if q.terminal {
			q.closed = true
			return StreamPayload{}, false, true
		}
		return StreamPayload{}, false, false
	}
	p = q.items[0]
	q.items[0] = StreamPayload{}
	q.items = q.items[1:]
	if len(q.items) == 0 {
		q.items = nil // let the backing array go
	}
	q.seq++
	p.Seq = q.seq
	p.RunID = q.runID
	return p, true, false
}

// lingerOver stops delivery: the run ended and nobody read the rest in
// time. The rest is discarded and out is closed.
func (q *payloadQueue) lingerOver() {
	q.mu.Lock()
	q.items = nil
	q.running = false
	q.closed = true
	q.mu.Unlock()
	q.close()
}

func (q *payloadQueue) close() {
	q.mu.Lock()
	if q.lingerT != nil {
		q.lingerT.Stop()
	}
	q.mu.Unlock()
	close(q.out)
	close(q.stopped)
}

func (q *payloadQueue) dispatch() {
	for {
		p, ok, last := q.pop()
		if !ok {
			if last {
				q.close()
			}
			return
		}
		for sent := false; !sent; {
			q.mu.Lock()
			ended, lingerC := q.ended, q.lingerC
			if lingerC != nil {
				ended = nil
			}
			q.mu.Unlock()
			select {
			case q.out <- p:
				sent = true
			case <-ended:
				q.mu.Lock()
				if q.lingerC == nil {
					q.lingerT = time.NewTimer(q.linger)
					q.lingerC = q.lingerT.C
				}
				q.mu.Unlock()
			case <-lingerC:
				q.lingerOver()
				return
			}
		}
	}
}
