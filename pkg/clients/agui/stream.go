package agui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

// Stream reads the AG-UI events of one run.
//
//	s, err := c.Run(ctx, aguiclient.Input{Text: "..."})
//	if err != nil { ... }             // the request failed: no stream
//	defer s.Close()
//	for s.Next() {
//		switch ev := s.Event().(type) {
//		case *events.TextMessageContentEvent: ...
//		case *aguiclient.UnknownEvent: ... // e.g. SUBAGENT_* from a 1.x remote
//		}
//	}
//	if err := s.Err(); err != nil { ... } // e.g. errors.Is(err, aguiclient.ErrInterrupted)
//
// Next returns true for each event, including exactly one terminal event
// (RUN_FINISHED or RUN_ERROR), after which it returns false and Err is nil;
// anything the remote sends after the terminal is ignored, and the request
// is closed. A RUN_ERROR is a remote outcome, not a Go error: inspect the
// event (or [Stream.Terminal]). When the stream ends any other way Next
// returns false and Err returns an [*clienterr.Error] with Op "stream": clienterr.KindProtocol
// for a malformed or oversized frame or an oversized stream, clienterr.KindInterrupted
// for an end of stream or broken connection before the terminal event,
// clienterr.KindTimeout for IdleTimeout or the caller's deadline, clienterr.KindCanceled for a
// cancelled context or Close.
//
// Event order is not checked beyond the terminal rule: validating the
// sequence (RUN_STARTED first, message pairing) is the consumer's choice.
// Frames whose data is only white space are skipped like keep-alives.
//
// Next, Event, Err, Terminal and LastEventID are for one consumer
// goroutine; Close may be called from any goroutine, also while Next blocks.
// The Stream starts no goroutine.
type Stream struct {
	callerCtx context.Context
	cancel    context.CancelCauseFunc
	ctx       context.Context
	resp      *http.Response
	body      *meteredBody
	frames    *frameReader
	secret    string

	closed      atomic.Bool
	releaseOnce sync.Once

	cur      events.Event
	terminal events.Event
	err      error
	done     bool
	lastID   string
	count    int
}

func newStream(callerCtx, sctx context.Context, cancel context.CancelCauseFunc, resp *http.Response, c *Client, secret string) *Stream {
	s := &Stream{callerCtx: callerCtx, ctx: sctx, cancel: cancel, resp: resp, secret: secret}
	s.body = &meteredBody{r: resp.Body, max: c.maxStream}
	if c.idleTimeout > 0 {
		cause := timeoutCause(fmt.Sprintf("no data from the remote for %s (IdleTimeout)", c.idleTimeout))
		s.body.idle, s.body.idleFor = time.AfterFunc(c.idleTimeout, func() { cancel(cause) }), c.idleTimeout
		s.body.idle.Stop() // armed only while Next waits for data
	}
	s.frames = newFrameReader(s.body, c.maxFrame)
	return s
}

// Next advances to the next event. It blocks until an event arrives or the
// stream ends.
func (s *Stream) Next() bool {
	if s.done {
		s.cur = nil
		return false
	}
	// The idle clock runs only while the consumer waits here, so a slow
	// consumer is never mistaken for a silent remote.
	s.body.arm()
	defer s.body.stop()
	for {
		if s.closed.Load() {
			s.fail(NewError(clienterr.KindCanceled, "stream", errStreamClosed))
			return false
		}
		fr, err := s.frames.next()
		if err != nil {
			s.fail(s.readError(err))
			return false
		}
		if len(bytes.TrimSpace(fr.Data)) == 0 {
			continue
		}
		ev, err := DecodeEvent(fr.Data)
		if err != nil {
			s.fail(statusError(clienterr.KindProtocol, "stream", s.resp.StatusCode,
				redactErr(fmt.Errorf("frame %d (id %q): %w", s.count+1, fr.ID, err), s.secret)))
			return false
		}
		s.count++
		s.cur, s.lastID = ev, fr.ID
		if IsTerminal(ev) {
			s.terminal = ev
			s.done = true
			s.release(errStreamDone)
		}
		return true
	}
}

// Event returns the event Next advanced to; nil once Next returned false.
func (s *Stream) Event() events.Event { return s.cur }

// Err returns why the stream ended without a terminal event, or nil.
func (s *Stream) Err() error { return s.err }

// Terminal returns the run's RUN_FINISHED or RUN_ERROR event once Next has
// delivered it, else nil.
func (s *Stream) Terminal() events.Event { return s.terminal }

// LastEventID returns the SSE id in effect for the current event ("" if
// the remote sends none).
func (s *Stream) LastEventID() string { return s.lastID }

// Close aborts the request if the stream has not ended (the remote sees
// the client disconnect) and releases it. It is idempotent, safe from any
// goroutine, and always returns nil. A Next blocked in another goroutine
// returns false with a clienterr.KindCanceled error.
func (s *Stream) Close() error {
	s.closed.Store(true)
	s.release(errStreamClosed)
	return nil
}

func (s *Stream) fail(err *clienterr.Error) {
	s.err, s.cur, s.done = err, nil, true
	s.release(errStreamDone)
}

// release aborts the request (the cause is kept for classification) and
// closes the body, once.
func (s *Stream) release(cause error) {
	s.releaseOnce.Do(func() {
		s.body.stop()
		s.cancel(cause)
		_ = s.resp.Body.Close()
	})
}

// readError classifies a failure to read the next frame.
func (s *Stream) readError(err error) *clienterr.Error {
	status := s.resp.StatusCode
	if s.callerCtx.Err() != nil {
		return ctxError(s.callerCtx, "stream", s.secret)
	}
	if s.ctx.Err() != nil {
		cause := context.Cause(s.ctx)
		switch {
		case cause == errStreamClosed:
			return statusError(clienterr.KindCanceled, "stream", status, cause)
		case errors.Is(cause, context.DeadlineExceeded):
			return statusError(clienterr.KindTimeout, "stream", status, cause)
		}
	}
	switch {
	case errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrStreamTooLarge):
		return statusError(clienterr.KindProtocol, "stream", status, err)
	case errors.Is(err, io.EOF):
		return statusError(clienterr.KindInterrupted, "stream", status,
			fmt.Errorf("the remote closed the stream after %d events without RUN_FINISHED or RUN_ERROR", s.count))
	}
	return statusError(clienterr.KindInterrupted, "stream", status, fmt.Errorf("after %d events: %w", s.count, redactErr(err, s.secret)))
}

// meteredBody counts the response bytes against MaxStreamBytes and, while
// Next is waiting, pushes the idle deadline back on every byte received.
// Only the consumer goroutine reads it.
type meteredBody struct {
	r       io.Reader
	max     int64
	n       int64
	idle    *time.Timer
	idleFor time.Duration
}

func (b *meteredBody) Read(p []byte) (int, error) {
	if b.max > 0 {
		if b.n > b.max {
			return 0, ErrStreamTooLarge
		}
		if rest := b.max - b.n + 1; int64(len(p)) > rest {
			p = p[:rest] // read one byte past the limit to detect overflow
		}
	}
	n, err := b.r.Read(p)
	if n > 0 {
		if b.idle != nil {
			b.idle.Reset(b.idleFor)
		}
		b.n += int64(n)
		if b.max > 0 && b.n > b.max {
			return n - int(b.n-b.max), ErrStreamTooLarge
		}
	}
	return n, err
}

func (b *meteredBody) arm() {
	if b.idle != nil {
		b.idle.Reset(b.idleFor)
	}
}

func (b *meteredBody) stop() {
	if b.idle != nil {
		b.idle.Stop()
	}
}
