package subagentstream

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
)

// Direct writes (docs/design.md#backpressure): a subscriber's response on a
// plain HTTP/1.1 connection is written on the connection itself, hijacked,
// so that the goroutine that pushed a frame can write it to the socket at
// once, without waking the response's own goroutine, and yet never blocks
// on a client that does not read.

// directBatchBytes bounds the bytes of frames one write carries (a resumed
// client's replay is written in several).
const directBatchBytes = 32 << 10

// chunkHead is the room kept before a batch for its chunk size line
// (HTTP/1.1 chunked framing: hex digits, CR LF).
const chunkHead = 10

// directConn is a subscriber's SSE response on a hijacked connection.
// Whoever holds mu writes: the request goroutine that owns the response
// (serveDirect, which alone may block on the client), or a goroutine that
// just pushed frames to the subscriber (written), which writes what the
// socket takes at once and leaves the rest, and everything after it, to
// the owner.
type directConn struct {
	conn net.Conn
	raw  syscall.RawConn // nil: no write without blocking here, the owner writes all
	sub  *Subscriber
	obs  Observer

	mu     sync.Mutex
	buf    []byte // the batch being built, reused
	out    []byte // what a producer's write left unwritten (in buf): the owner's to write first
	lastID uint64 // the last frame id taken for the client
	err    error  // the connection failed: nothing more is written
	closed bool   // the owner has finished: nothing more is written
}

// hijack takes over the connection of a plain HTTP/1.1 response and writes
// the response's head (status, w's headers, chunked framing, Connection:
// close). It returns nil, and w is used as it is, when the hub may not
// (HubOptions.NoHijack), for TLS and HTTP/2, and when the ResponseWriter
// cannot be hijacked (a wrapper without Unwrap, a recorder).
func (h *Hub) hijack(w http.ResponseWriter, r *http.Request, sub *Subscriber) *directConn {
	if h.opts.NoHijack || r.TLS != nil || r.ProtoMajor != 1 || r.ProtoMinor < 1 {
		return nil
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil
	}
	// What the client sends from now on is read and dropped (watch), never
	// parsed: a pipelined request is not served on this connection.
	_ = conn.SetDeadline(time.Time{}) // the server's timeouts must not cut the stream
	d := &directConn{conn: conn, sub: sub, obs: h.opts.Stream.Observer}
	if sc, ok := conn.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			d.raw = raw
		}
	}
	hd := w.Header()
	hd.Set("Connection", "close")
	hd.Set("Transfer-Encoding", "chunked")
	hd.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 200 OK\r\n")
	_ = hd.Write(&head)
	head.WriteString("\r\n")
	d.mu.Lock()
	d.writeAll(head.Bytes())
	d.mu.Unlock()
	return d
}

// serveDirect writes sub's frames on d until the stream ends, the client
// leaves or it is cut for falling behind (which it logs). It owns d: it
// writes what producers could not, the keep-alives and the end of the body,
// then closes the connection.
func (h *Hub) serveDirect(ctx context.Context, d *directConn) {
	sub := d.sub
	h.addDirect(d)
	defer h.removeDirect(d)
	gone := make(chan struct{})
	go d.watch(gone)
	sub.setDirect(d)
	defer func() {
		d.mu.Lock()
		d.closed = true
		d.mu.Unlock()
		_ = d.conn.Close()
		<-gone
	}()
	sub.setOnCut(func() { _ = d.conn.SetWriteDeadline(time.Now()) })
	tick := time.NewTicker(h.opts.KeepAlive)
	defer tick.Stop()
	for {
		d.mu.Lock()
		stop := d.flush(true)
		last := d.lastID
		d.mu.Unlock()
		if stop {
			if sub.Cut() {
				h.logCut(sub, last)
			}
			return
		}
		select {
		case <-sub.wake:
		case <-tick.C:
			d.mu.Lock()
			ok := !d.flush(true) && d.writeAll(appendChunk(d.buf[:0], ": keep-alive\n\n"))
			d.mu.Unlock()
			if !ok {
				return
			}
		case <-gone:
			return
		case <-ctx.Done():
			return
		}
	}
}

// watch reads (and drops) what the client sends until its connection ends,
// then closes gone: the client left, or serveDirect closed the connection.
func (d *directConn) watch(gone chan<- struct{}) {
	defer close(gone)
	var b [512]byte
	for {
		if _, err := d.conn.Read(b[:]); err != nil {
			return
		}
	}
}

// written writes what was just pushed to the subscriber, from the
// goroutine that pushed it, without blocking: when another goroutine is
// writing, or the socket does not take everything, the response's owner
// is woken to do the rest.
func (d *directConn) written() {
	if !d.mu.TryLock() {
		d.sub.signal()
		return
	}
	stop := d.flush(false)
	d.mu.Unlock()
	if stop {
		d.sub.signal()
	}
}

// flush writes the subscriber's queued frames, in batches of at most
// directBatchBytes, each one chunk. The owner blocks until they are
// written; a producer writes only what the socket takes at once. It
// reports stop when the caller must leave the rest to the owner (for a
// producer) or the response is over (for the owner: the stream ended and
// its end was written, the subscriber was cut, or the connection failed).
// Called with d.mu held.
func (d *directConn) flush(owner bool) (stop bool) {
	if d.err != nil || d.closed {
		return true
	}
	if len(d.out) > 0 {
		if !owner || !d.writeAll(d.out) {
			return true
		}
		d.out = nil
	}
	for {
		b := append(d.buf[:0], make([]byte, chunkHead)...)
		eof := false
		for len(b) < directBatchBytes {
			f, end := d.sub.take()
			if f == nil {
				eof = end
				break
			}
			b = sse.AppendFrame(b, f.ID, f.Data)
			if f.ID > 0 {
				d.lastID = f.ID
			}
			if d.obs != nil && f.ID > d.sub.replayed && !f.received.IsZero() {
				d.obs.Relayed(f.received)
			}
		}
		d.buf = b
		if len(b) > chunkHead {
			chunk := sealChunk(b)
			if owner {
				if !d.writeAll(chunk) {
					return true
				}
			} else {
				n, err := writeNow(d.raw, chunk)
				if err != nil {
					d.err = err
					return true
				}
				if n < len(chunk) {
					d.out = chunk[n:]
					return true
				}
			}
			if len(b) >= directBatchBytes {
				continue // there may be more
			}
		}
		if !eof {
			return false
		}
		if owner && !d.sub.Cut() {
			d.writeAll([]byte("0\r\n\r\n")) // the end of the body
		}
		return true
	}
}

// writeAll writes p, blocking; a failure ends the response. Called with
// d.mu held.
func (d *directConn) writeAll(p []byte) bool {
	if d.err != nil {
		return false
	}
	if _, err := d.conn.Write(p); err != nil {
		d.err = err
		return false
	}
	return true
}

// sealChunk frames b, whose first chunkHead bytes are room for it, as one
// HTTP/1.1 chunk and returns the chunk (a suffix of b, grown by CR LF).
func sealChunk(b []byte) []byte {
	size := len(b) - chunkHead
	var hex [chunkHead]byte
	line := append(strconv.AppendInt(hex[:0], int64(size), 16), '\r', '\n')
	start := chunkHead - len(line)
	copy(b[start:], line)
	return append(b, '\r', '\n')[start:]
}

// appendChunk appends text to b as one chunk.
func appendChunk(b []byte, text string) []byte {
	b = append(b, make([]byte, chunkHead)...)
	return sealChunk(append(b, text...))
}

// addDirect and removeDirect track the hub's hijacked responses, which the
// HTTP server no longer does: Wait waits for them, Close closes them.
func (h *Hub) addDirect(d *directConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.direct[d] = struct{}{}
}

func (h *Hub) removeDirect(d *directConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.direct, d)
	if len(h.direct) == 0 && h.directDone != nil {
		close(h.directDone)
		h.directDone = nil
	}
}

// waitDirect waits until the hub writes no hijacked response, or ctx ends.
func (h *Hub) waitDirect(ctx context.Context) error {
	h.mu.Lock()
	if len(h.direct) == 0 {
		h.mu.Unlock()
		return nil
	}
	if h.directDone == nil {
		h.directDone = make(chan struct{})
	}
	done := h.directDone
	h.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// closeDirect closes the connections of the hijacked responses still
// written: their owners return.
func (h *Hub) closeDirect() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for d := range h.direct {
		_ = d.conn.Close()
	}
}
