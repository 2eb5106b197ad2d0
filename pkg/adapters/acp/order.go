package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// updateOrder keeps permission requests in order with the session updates
// the agent wrote before them, and keeps the ACP SDK's notification queue
// from overflowing.
//
// The ACP SDK handles notifications in order on one goroutine but each
// request on a goroutine of its own, so a permission request can reach the
// client before the text the agent sent just before it. The reader counts
// the session/update notifications it hands to the connection (those the
// SDK will decode and deliver); the client counts those it mapped; a
// permission request first waits (bounded) until every update read before
// it was mapped.
//
// The SDK queues at most 1024 notifications and closes the connection when
// an agent gets further ahead of the client than that (a fast agent on a
// starved machine): the reader therefore hands over no further update
// while maxUnmapped are read but not yet mapped. The agent then waits on
// its stdout pipe, as with any slow reader.
type updateOrder struct {
	mu   sync.Mutex
	read uint64 // session/update lines handed to the connection
	done uint64 // session/update notifications mapped
	wake chan struct{}
	stop chan struct{} // closed when the conversation is over
	once sync.Once
}

// maxOrderWait bounds how long a permission request waits for earlier
// updates: never a hang.
const maxOrderWait = 2 * time.Second

// maxUnmapped is how far the reader lets session updates run ahead of the
// mapping (well below the SDK's queue of 1024).
const maxUnmapped = 256

func newUpdateOrder() *updateOrder {
	return &updateOrder{wake: make(chan struct{}), stop: make(chan struct{})}
}

func (o *updateOrder) mapped() {
	o.mu.Lock()
	o.done++
	close(o.wake)
	o.wake = make(chan struct{})
	o.mu.Unlock()
}

// close releases a reader waiting for the mapping to catch up.
func (o *updateOrder) close() { o.once.Do(func() { close(o.stop) }) }

// admit counts one session update handed to the connection, first waiting
// while maxUnmapped are read but not yet mapped (or until close).
func (o *updateOrder) admit() {
	o.mu.Lock()
	for o.read >= o.done+maxUnmapped {
		wake := o.wake
		o.mu.Unlock()
		select {
		case <-wake:
		case <-o.stop:
			o.mu.Lock()
			o.read++
			o.mu.Unlock()
			return
		}
		o.mu.Lock()
	}
	o.read++
	o.mu.Unlock()
}

// waitEarlier waits until the updates read so far are mapped, ctx ends, or
// maxOrderWait passes.
func (o *updateOrder) waitEarlier(ctx context.Context) {
	o.mu.Lock()
	target := o.read
	o.mu.Unlock()
	t := time.NewTimer(maxOrderWait)
	defer t.Stop()
	for {
		o.mu.Lock()
		done, wake := o.done, o.wake
		o.mu.Unlock()
		if done >= target {
			return
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return
		case <-t.C:
			return
		}
	}
}

// replayQuiet and replayMax bound the wait for a loaded session's late
// history replay (see settle).
const (
	replayQuiet = 250 * time.Millisecond
	replayMax   = 2 * time.Second
)

// settle waits until no session update has been read for quiet and every
// one read is mapped, or max passes, or ctx ends. After a session/load it
// lets an agent that replays the history after answering (Gemini CLI
// 0.61.0 does) finish before the prompt goes out.
func (o *updateOrder) settle(ctx context.Context, quiet, max time.Duration) {
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		read := o.read
		o.mu.Unlock()
		t := time.NewTimer(quiet)
		select {
		case <-t.C:
		case <-deadline.C:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
		o.mu.Lock()
		quietNow := o.read == read && o.done >= o.read
		o.mu.Unlock()
		if quietNow {
			return
		}
	}
}

// reader hands the connection one line per Read and counts the
// session/update notifications among them.
func (o *updateOrder) reader(r io.Reader) io.Reader {
	return &orderReader{o: o, br: bufio.NewReaderSize(r, 64<<10)}
}

type orderReader struct {
	o       *updateOrder
	br      *bufio.Reader
	pending []byte
}

func (r *orderReader) Read(p []byte) (int, error) {
	if len(r.pending) == 0 {
		line, err := r.br.ReadBytes('\n')
		if len(line) == 0 {
			return 0, err
		}
		if isUpdate(line) {
			r.o.admit()
		}
		r.pending = line
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// isUpdate reports whether line is a session/update notification the SDK
// will deliver to the client: it decodes and validates it as the SDK does
// (one it cannot decode is logged, never delivered, so never mapped).
func isUpdate(line []byte) bool {
	if !bytes.Contains(line, []byte(`"session/update"`)) {
		return false
	}
	var m struct {
		ID     *json.RawMessage `json:"id"` // as the SDK reads it: "id": null is a notification
		Method string           `json:"method"`
		Params json.RawMessage  `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != sdk.ClientMethodSessionUpdate || m.ID != nil {
		return false
	}
	var n sdk.SessionNotification
	return json.Unmarshal(m.Params, &n) == nil && n.Validate() == nil
}
