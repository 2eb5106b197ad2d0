package subagentstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// Defaults of HubOptions.
const (
	DefaultReconnectGrace = 30 * time.Second
	DefaultRetention      = 5 * time.Minute
	DefaultKeepAlive      = 15 * time.Second
	DefaultSourceLag      = 10 * time.Second
)

// HubOptions configure a Hub.
type HubOptions struct {
	Stream Options
	// ReconnectGrace is how long a run whose every client disconnected keeps
	// running, waiting for a reconnect, before it is cancelled.
	ReconnectGrace time.Duration
	// Retention is how long an ended run's stream stays available for
	// reconnects.
	Retention time.Duration
	// KeepAlive is the period of SSE keep-alive comments.
	KeepAlive time.Duration
	// AllowedOrigins are the browser origins allowed to reconnect (CORS).
	AllowedOrigins []string
	// Owner names the principal a request acts for (e.g. from the host's
	// authentication): a run's stream belongs to the principal whose
	// request started it, and EventsHandler answers 404 to everyone else.
	// Nil: every request may follow every run.
	Owner  func(*http.Request) string
	Logger *slog.Logger
	// Journal, when set, receives every frame of every run the hub merges
	// (docs/design.md#scale-out). Nil: nothing leaves the process.
	Journal Journal
	// Source, when set, serves EventsHandler the runs the hub does not
	// hold (runs of another process). Nil: only the hub's own runs.
	Source Source
	// SourceLag bounds how long EventsHandler waits for a Source's copy of
	// a live run to reach a client's cursor: a client that switches from
	// the run's process to this one may hold frames the journal has not
	// delivered here yet. After it, the cursor is unknown (404). Default
	// DefaultSourceLag.
	SourceLag time.Duration
	// NoHijack keeps every response on its http.ResponseWriter. By
	// default a client's SSE response over plain HTTP/1.1 is written on
	// its connection, hijacked (docs/design.md#backpressure): the
	// goroutine that produced a frame writes it without blocking, instead
	// of waking the response's goroutine, which writes only what a slow
	// client did not take. The response then ends with Connection: close;
	// the server's ConnState reports it StateHijacked; middleware that
	// wraps the ResponseWriter without Unwrap, TLS and HTTP/2 responses
	// keep the ResponseWriter. A hijacked connection is not one
	// http.Server.Shutdown waits for: Hub.Wait does, and Hub.Close closes
	// those still open.
	NoHijack bool
}

// Hub owns the merged streams of a host's runs: it implements
// sse.SubagentBus for POST /agui and serves GET /agui/runs/{runId}/events.
// Every stream's merge goroutine is owned by the Hub and stopped by Close
// (a publisher merging its own events holds the merge only while it does).
type Hub struct {
	bus  delegation.EventBus
	opts HubOptions

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	streams map[string]*hubStream
	// direct are the hijacked responses being written (direct.go);
	// directDone, when a Wait waits, is closed once there are none.
	direct     map[*directConn]struct{}
	directDone chan struct{}
}

type hubStream struct {
	*Stream
	// served is what the run's clients are served: the merged stream, or
	// what its journal chose (ServingJournal).
	served  *Stream
	owner   string
	clients int
	grace   *time.Timer
	// handle is the run, while it may still need cancelling (nil once
	// the stream ended); expire forgets the ended stream after Retention.
	handle *agentadaptor.RunHandle
	expire *time.Timer
}

// NewHub returns a Hub reading delegation events from bus.
func NewHub(bus delegation.EventBus, opts HubOptions) *Hub {
	if opts.ReconnectGrace <= 0 {
		opts.ReconnectGrace = DefaultReconnectGrace
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = DefaultKeepAlive
	}
	if opts.SourceLag <= 0 {
		opts.SourceLag = DefaultSourceLag
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Stream.Logger == nil {
		opts.Stream.Logger = opts.Logger
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{bus: bus, opts: opts, ctx: ctx, cancel: cancel, streams: map[string]*hubStream{}, direct: map[*directConn]struct{}{}}
}

// Close stops every stream's goroutine and waits for them, and closes the
// connections of the hijacked responses still open (HubOptions.NoHijack).
// Runs are not cancelled: that is the SSE handler's registry's job.
func (h *Hub) Close() {
	h.cancel()
	h.wg.Wait()
	h.closeDirect()
	h.mu.Lock()
	for _, st := range h.streams {
		if st.grace != nil {
			st.grace.Stop()
		}
		if st.expire != nil {
			st.expire.Stop()
		}
	}
	h.mu.Unlock()
}

// Wait blocks until every stream started so far has emitted its terminal
// event and every hijacked response (HubOptions.NoHijack) has been written
// to its end, or ctx ends. Hosts call it on shutdown after cancelling the
// runs and before Close, so that no stream is cut before its end.
func (h *Hub) Wait(ctx context.Context) error {
	h.mu.Lock()
	var pending []*hubStream
	for _, st := range h.streams {
		pending = append(pending, st)
	}
	h.mu.Unlock()
	for _, st := range pending {
		for _, s := range []*Stream{st.Stream, st.served} {
			select {
			case <-s.Done():
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return h.waitDirect(ctx)
}

// Stream returns the stream of the run with the given run key
// (sse.RunKey of its owner and its AG-UI runId: the runId itself for a hub
// without HubOptions.Owner or a run started by Start).
func (h *Hub) Stream(key string) (*Stream, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st, ok := h.streams[key]
	if !ok {
		return nil, false
	}
	return st.Stream, true
}

// Owner returns the principal that started the run with the given run key,
// while the hub holds its stream (see HubOptions.Owner).
func (h *Hub) Owner(key string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st, ok := h.streams[key]
	if !ok {
		return "", false
	}
	return st.owner, true
}

// RunIDInUse implements sse.RunIDKeeper: the hub holds (or retains for
// reconnects) a stream under the run key, which a new run must not
// replace. Another principal's run with the same runId has another key.
func (h *Hub) RunIDInUse(key string) bool {
	_, ok := h.Stream(key)
	if ok || h.opts.Source == nil {
		return ok
	}
	principal, runID := sse.SplitRunKey(key)
	return h.opts.Source.Known(principal, runID)
}

// Start begins merging a started run's stream under the AG-UI ids, without
// an owner: its run key is runID.
func (h *Hub) Start(handle *agentadaptor.RunHandle, threadID, runID string) *Stream {
	return h.start(handle, threadID, runID, "")
}

// start begins merging a run's stream; the hub keeps it under the run key
// sse.RunKey(owner, runID), and its frames carry runID.
func (h *Hub) start(handle *agentadaptor.RunHandle, threadID, runID, owner string) *Stream {
	key := sse.RunKey(owner, runID)
	opts := h.opts.Stream
	if h.opts.Journal != nil {
		opts.journal = h.opts.Journal.Begin(JournalRun{RunID: runID, ThreadID: threadID, SDKRunID: handle.RunID(), Owner: owner, Cancel: handle.Cancel})
	}
	st := &hubStream{Stream: newStream(handle, threadID, runID, opts), owner: owner, handle: handle}
	st.served = st.Stream
	if sj, ok := opts.journal.(ServingJournal); ok {
		if served := sj.Served(); served != nil {
			st.served = served
		}
	}
	h.mu.Lock()
	h.streams[key] = st
	h.mu.Unlock()
	h.wg.Add(1)
	st.start(h.ctx, handle, h.bus, func() {
		defer h.wg.Done()
		h.ended(key, st)
	})
	return st.served
}

// served returns the stream the hub serves the clients of the run with
// the given run key: the merged stream, or what its journal committed (a
// ServingJournal).
func (h *Hub) served(key string) (*Stream, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st, ok := h.streams[key]
	if !ok {
		return nil, false
	}
	return st.served, true
}

// ended runs on a stream's merge goroutine when it is done: the run's bus
// stream closes, the run handle is let go (an ended stream keeps only its
// replay log), and the stream is forgotten after Retention by a timer
// rather than a waiting goroutine (Close stops the timers).
func (h *Hub) ended(key string, st *hubStream) {
	if h.ctx.Err() != nil {
		return // Close: nothing to keep
	}
	h.bus.CloseRun(st.SDKRunID())
	h.mu.Lock()
	defer h.mu.Unlock()
	st.handle = nil
	st.expire = time.AfterFunc(h.opts.Retention, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.streams[key] == st {
			delete(h.streams, key)
		}
	})
}

// ServeRun implements sse.SubagentBus: it streams a freshly started run.
func (h *Hub) ServeRun(w http.ResponseWriter, r *http.Request, handle *agentadaptor.RunHandle, threadID, runID string) {
	owner := ""
	if h.opts.Owner != nil {
		owner = h.opts.Owner(r)
	}
	st := h.start(handle, threadID, runID, owner)
	sub, err := st.Subscribe(0)
	if err != nil { // cannot happen for a new stream
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h.serve(w, r, sse.RunKey(owner, runID), sub)
}

// EventsHandler serves GET /agui/runs/{runId}/events: with a Last-Event-ID
// header (or a lastEventId query parameter) it replays everything after that
// cursor, re-opening what was open there, then continues live. A malformed
// cursor is a 400, an unknown run or cursor a 404, and a stream the client
// already has completely a 204 (which tells EventSource to stop).
func (h *Hub) EventsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.cors(w, r) {
			return
		}
		if r.Method != http.MethodGet {
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use GET")
			return
		}
		runID := r.PathValue("runId")
		raw := r.Header.Get("Last-Event-ID")
		if raw == "" {
			raw = r.URL.Query().Get("lastEventId")
		}
		cursor, err := ParseLastEventID(raw)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_cursor", err.Error())
			return
		}
		// The runId is looked up in the caller's namespace: another
		// principal's run with this runId is not there.
		key := sse.RunKey(h.requester(r), runID)
		st, ok := h.served(key)
		if owner, known := h.Owner(key); ok && known && owner != h.requester(r) {
			ok = false // never another principal's run (defence in depth: the key says whose it is)
		}
		var fromSource *Stream
		if !ok && h.opts.Source != nil {
			src, release, err := h.openSource(r.Context(), h.requester(r), runID)
			if err != nil {
				// The source could not be read now (e.g. a cluster that lost
				// NATS): a documented, retryable answer.
				w.Header().Set("Retry-After", "1")
				writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
				return
			}
			if src != nil {
				defer release()
				st, ok, fromSource = src, true, src
				// A cursor ahead of this copy may only be in transit.
				wctx, cancel := context.WithTimeout(r.Context(), h.opts.SourceLag)
				st.waitID(wctx, cursor)
				cancel()
			}
		}
		if ok && fromSource == nil && h.opts.Journal != nil && cursor > 0 {
			// A journal-served stream shows only what its journal
			// committed: a client coming from another process may hold a
			// frame whose commit has not reached this one yet.
			lctx, cancel := context.WithTimeout(r.Context(), h.opts.SourceLag)
			st.waitID(lctx, cursor)
			cancel()
		}
		if !ok {
			writeError(w, http.StatusNotFound, "run_not_found", fmt.Sprintf("no stream for run %q: it never existed here or ended more than %s ago", runID, h.opts.Retention))
			return
		}
		sub, err := st.Subscribe(cursor)
		switch {
		case errors.Is(err, ErrComplete):
			w.WriteHeader(http.StatusNoContent)
			return
		case errors.Is(err, ErrUnknownCursor):
			writeError(w, http.StatusNotFound, "cursor_not_found", err.Error())
			return
		case err != nil:
			writeError(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
		h.serve(w, r, key, sub)
	})
}

// ParseLastEventID parses an SSE Last-Event-ID cursor: empty means 0 (from
// the start), otherwise a decimal id.
func ParseLastEventID(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if len(s) > 20 {
		return 0, fmt.Errorf("Last-Event-ID %.24q... is too long to be a cursor", s)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("Last-Event-ID %q is not a decimal event id", s)
	}
	return n, nil
}

func (h *Hub) cors(w http.ResponseWriter, r *http.Request) (handled bool) {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	for _, o := range h.opts.AllowedOrigins {
		if o == origin {
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Vary", "Origin")
			if r.Method == http.MethodOptions {
				w.Header().Set("Access-Control-Allow-Methods", "GET, OPTIONS")
				w.Header().Set("Access-Control-Allow-Headers", "Last-Event-ID, Content-Type")
				w.WriteHeader(http.StatusNoContent)
				return true
			}
			return false
		}
	}
	return false
}

// serve writes sub's frames until the stream ends or the client leaves: on
// the hijacked connection (direct.go) where it can, otherwise through w. A
// client that leaves detaches; when the last one has left a run that is
// still going, it gets ReconnectGrace to come back before it is cancelled.
func (h *Hub) serve(w http.ResponseWriter, r *http.Request, key string, sub *Subscriber) {
	h.attach(key)
	defer h.detach(key)
	defer sub.Close()
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Connection", "keep-alive")
	hd.Set("X-Accel-Buffering", "no")
	if d := h.hijack(w, r, sub); d != nil {
		h.serveDirect(r.Context(), d)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	// A client that falls behind its bound is cut: its response ends
	// without a terminal event, even while a write to it is blocked (a
	// client that stopped reading), and it resumes with Last-Event-ID
	// (docs/design.md#backpressure).
	sub.setOnCut(func() { _ = rc.SetWriteDeadline(time.Now()) })
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	enc := sse.NewEncoder(w)
	ctx := r.Context()
	tick := time.NewTicker(h.opts.KeepAlive)
	defer tick.Stop()
	// Through w, the request goroutine drains the subscriber itself (no
	// reader goroutine): each frame pushed wakes it; it writes every queued frame, then
	// flushes once. A frame is never held back: the flush happens as soon
	// as the queue is empty, so a batch costs one write system call and a
	// lone frame is as fast as before. The batch is bounded by the response
	// writer's buffer, which writes through when full
	// (docs/design.md#backpressure).
	obs := h.opts.Stream.Observer
	var lastID uint64
	for {
		wrote := false
		for {
			f, eof := sub.take()
			if f == nil {
				if sub.Cut() {
					h.logCut(sub, lastID)
					return
				}
				if wrote && rc.Flush() != nil {
					return
				}
				if eof {
					return
				}
				break
			}
			if enc.WriteFrame(f.ID, f.Data) != nil {
				if sub.Cut() {
					h.logCut(sub, lastID)
				}
				return
			}
			if f.ID > 0 {
				lastID = f.ID
			}
			if obs != nil && f.ID > sub.replayed && !f.received.IsZero() {
				obs.Relayed(f.received)
			}
			wrote = true
		}
		select {
		case <-sub.wake:
		case <-tick.C:
			if enc.WriteComment("keep-alive") != nil || rc.Flush() != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// logCut says that a client was disconnected for falling behind.
func (h *Hub) logCut(sub *Subscriber, lastWritten uint64) {
	h.opts.Logger.Info("subagentstream: a client fell too far behind the stream and was disconnected; it resumes with Last-Event-ID",
		"run_id", sub.s.RunID(), "last_written_id", lastWritten, "max_queued_frames", sub.maxQueued, "max_queued_bytes", sub.maxQueuedBytes)
}

func (h *Hub) attach(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.streams[key]; st != nil {
		st.clients++
		if st.grace != nil {
			st.grace.Stop()
			st.grace = nil
		}
	}
}

func (h *Hub) detach(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.streams[key]
	if st == nil {
		return
	}
	st.clients--
	if st.clients > 0 {
		return
	}
	select {
	case <-st.Done():
		return
	default:
	}
	handle := st.handle
	if handle == nil {
		return
	}
	st.grace = time.AfterFunc(h.opts.ReconnectGrace, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := handle.Cancel(ctx); err != nil {
			h.opts.Logger.Warn("subagentstream: cancelling an abandoned run", "run_id", st.RunID(), "err", err)
		}
	})
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
