package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// updateOrder keeps permission requests in order with the session updates
// the agent wrote before them. The ACP SDK handles notifications in order
// on one goroutine but each request on a goroutine of its own, so a
// permission request can reach the client before the text the agent sent
// just before it. The reader counts the session/update notifications it
// hands to the connection; the client counts those it mapped; a permission
// request first waits (bounded) until every update read before it was
// mapped.
type updateOrder struct {
	mu   sync.Mutex
	read uint64 // session/update lines handed to the connection
	done uint64 // session/update notifications mapped
	wake chan struct{}
}

// maxOrderWait bounds how long a permission request waits for earlier
// updates (one the SDK could not decode never arrives): never a hang.
const maxOrderWait = 2 * time.Second

func newUpdateOrder() *updateOrder { return &updateOrder{wake: make(chan struct{})} }

func (o *updateOrder) mapped() {
	o.mu.Lock()
	o.done++
	close(o.wake)
	o.wake = make(chan struct{})
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
			r.o.mu.Lock()
			r.o.read++
			r.o.mu.Unlock()
		}
		r.pending = line
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

func isUpdate(line []byte) bool {
	if !bytes.Contains(line, []byte(`"session/update"`)) {
		return false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	return json.Unmarshal(line, &m) == nil && m.Method == "session/update" && len(m.ID) == 0
}
