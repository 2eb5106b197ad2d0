package sse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	"github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
)

// Handler serves one run per POST request as a server-sent event stream. It
// is safe for concurrent use.
type Handler struct {
	sdk *agentadaptor.SDK
	cfg config
}

// NewHandler returns a Handler that starts runs on sdk.
func NewHandler(sdk *agentadaptor.SDK, opts ...Option) *Handler {
	cfg := config{
		origins:   map[string]bool{},
		maxBytes:  DefaultMaxRequestBytes,
		keepAlive: DefaultKeepAlive,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.registry == nil {
		cfg.registry = NewRegistry()
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	if cfg.maxBytes <= 0 {
		cfg.maxBytes = DefaultMaxRequestBytes
	}
	return &Handler{sdk: sdk, cfg: cfg}
}

// Registry returns the registry of the handler's active runs.
func (h *Handler) Registry() *Registry { return h.cfg.registry }

// CancelHandler is [Registry.CancelHandler] behind the handler's CORS policy
// (preflight included), for POST /agui/runs/{runId}/cancel. The runId is
// looked up in the caller's namespace ([WithOwner], [RunKey]): another
// principal's run with that runId is not found (404).
func (h *Handler) CancelHandler() http.Handler {
	inner := h.cfg.registry.cancelHandler(func(r *http.Request, runID string) string { return RunKey(h.principal(r), runID) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.cors(w, r) {
			return
		}
		if r.Method == http.MethodOptions {
			h.preflight(w, r)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// principal is the principal r acts for ("" without [WithOwner]).
func (h *Handler) principal(r *http.Request) string {
	if h.cfg.owner == nil {
		return ""
	}
	return h.cfg.owner(r)
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.cors(w, r) {
		return
	}
	switch r.Method {
	case http.MethodPost:
	case http.MethodOptions:
		h.preflight(w, r)
		return
	default:
		w.Header().Set("Allow", "POST, OPTIONS")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s is not supported: POST an AG-UI RunAgentInput", r.Method))
		return
	}
	in, prompt, opts, err := h.parse(r)
	if err != nil {
		var re *requestError
		if !errors.As(err, &re) {
			re = &requestError{code: "bad_request", msg: err.Error()}
		}
		status := re.status
		if status == 0 {
			status = http.StatusBadRequest
		}
		writeError(w, status, re.code, re.msg)
		return
	}

	// A client's runId lives in its principal's namespace: another
	// principal's run with the same runId is neither seen nor in the way.
	runID, owner := in.RunID, h.principal(r)
	key := ""
	if runID != "" {
		key = RunKey(owner, runID)
	}
	if k, ok := h.cfg.subagents.(RunIDKeeper); ok && key != "" && k.RunIDInUse(key) {
		writeError(w, http.StatusConflict, "run_id_in_use", fmt.Sprintf("run %q is retained for reconnects: send a new runId for a new run", runID))
		return
	}
	if err := h.cfg.registry.admit(key, h.cfg.maxActive); err != nil {
		if errors.Is(err, ErrTooManyRuns) {
			w.Header().Set("Retry-After", "5")
			writeError(w, http.StatusTooManyRequests, "too_many_runs", fmt.Sprintf("the host already runs %d chats, its max_active_runs; retry later", h.cfg.maxActive))
			return
		}
		writeError(w, http.StatusConflict, "run_id_in_use", fmt.Sprintf("run %q is still active: send a new runId for a new run", runID))
		return
	}
	ctx := r.Context()
	if h.cfg.detach || (h.cfg.subagents != nil && h.cfg.protocol == ProtocolAGUI) {
		// A SubagentBus decides itself what a disconnect does (it may keep
		// the run for a reconnect).
		ctx = context.WithoutCancel(ctx)
	}
	var started func(string, *agentadaptor.RunHandle, error)
	if h.cfg.runHook != nil {
		var extra []agentadaptor.RunOption
		extra, started = h.cfg.runHook(r)
		opts = append(opts, extra...)
	}
	handle, err := h.sdk.Start(ctx, prompt, opts...)
	if err != nil {
		if started != nil {
			started("", nil, err)
		}
		h.cfg.registry.abandon(key)
		h.startFailed(w, in.ThreadID, runID, err)
		return
	}
	admitted := key
	if runID == "" {
		runID = handle.RunID()
		key = RunKey(owner, runID)
	}
	if started != nil {
		started(runID, handle, nil)
	}
	h.cfg.registry.attach(admitted, key, handle)
	if h.cfg.onRunStart != nil {
		h.cfg.onRunStart(runID, handle)
	}
	if h.cfg.subagents != nil && h.cfg.protocol == ProtocolAGUI {
		h.cfg.subagents.ServeRun(w, r, handle, in.ThreadID, runID)
		return
	}
	h.stream(w, r, handle, in.ThreadID, runID)
}

// parse validates the request and returns the input, prompt and run options.
func (h *Handler) parse(r *http.Request) (*types.RunAgentInput, string, []agentadaptor.RunOption, error) {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return nil, "", nil, &requestError{code: "unsupported_content_type", msg: fmt.Sprintf("Content-Type must be application/json, got %q", ct)}
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, h.cfg.maxBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, "", nil, &requestError{status: http.StatusRequestEntityTooLarge, code: "request_too_large",
				msg: fmt.Sprintf("the request body exceeds %d bytes; send less history or raise the handler's WithMaxRequestBytes", h.cfg.maxBytes)}
		}
		return nil, "", nil, &requestError{code: "bad_body", msg: "reading the request body: " + err.Error()}
	}
	in, err := decodeInput(body)
	if err != nil {
		return nil, "", nil, err
	}
	prompt, err := Prompt(in, h.cfg.policy)
	if err != nil {
		return nil, "", nil, err
	}
	var opts []agentadaptor.RunOption
	if !h.cfg.noStreamingOpt {
		opts = append(opts, agentadaptor.WithStreaming())
	}
	key := in.ThreadID
	if h.cfg.sessionKey != nil {
		key = h.cfg.sessionKey(r, in.ThreadID)
	}
	if key != "" {
		opts = append(opts, agentadaptor.WithSessionKey(key))
	}
	opts = append(opts, h.cfg.runOpts...)
	if h.cfg.forwarded != nil && in.ForwardedProps != nil {
		extra, err := h.cfg.forwarded(r.Context(), in.ForwardedProps)
		if err != nil {
			return nil, "", nil, &requestError{code: "bad_forwarded_props", msg: err.Error()}
		}
		opts = append(opts, extra...)
	}
	return in, prompt, opts, nil
}

// cors applies the origin policy; it writes 403 and returns false for a
// disallowed origin.
func (h *Handler) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	w.Header().Add("Vary", "Origin")
	if h.cfg.origins[origin] {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		return true
	}
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return true // same origin
	}
	writeError(w, http.StatusForbidden, "origin_not_allowed", fmt.Sprintf("origin %q is not allowed; add it to the handler's WithAllowedOrigins", origin))
	return false
}

func (h *Handler) preflight(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Allow", "POST, OPTIONS")
	if r.Header.Get("Origin") != "" {
		hd.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
			hd.Set("Access-Control-Allow-Headers", req)
		} else {
			hd.Set("Access-Control-Allow-Headers", "Content-Type, Accept, Authorization, Last-Event-ID")
		}
		hd.Set("Access-Control-Max-Age", "600")
	}
	w.WriteHeader(http.StatusNoContent)
}

func setStreamHeaders(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Connection", "keep-alive")
	hd.Set("X-Accel-Buffering", "no")
}

// startFailed answers a run that could not start with a complete, valid
// stream: RUN_STARTED + RUN_ERROR with the failure's code (AG-UI), or one
// run.failed payload (raw).
func (h *Handler) startFailed(w http.ResponseWriter, threadID, runID string, err error) {
	f := &agentadaptor.Failure{Code: agentadaptor.FailureStart, Message: err.Error()}
	sdkRunID := ""
	var se *agentadaptor.StartError
	var ce *agentadaptor.ConfigError
	switch {
	case errors.As(err, &se) && se.Failure != nil:
		f, sdkRunID = se.Failure, se.RunID
	case errors.As(err, &ce), errors.Is(err, agentadaptor.ErrUnknownAdapter), errors.Is(err, agentadaptor.ErrNoAdapter):
		f = &agentadaptor.Failure{Code: agentadaptor.FailureInvalidConfig, Message: err.Error()}
	}
	if runID == "" {
		runID = sdkRunID
	}
	setStreamHeaders(w)
	w.WriteHeader(http.StatusOK)
	enc := NewEncoder(w)
	p := agentadaptor.StreamPayload{RunID: sdkRunID, Seq: 1, Kind: agentadaptor.KindRunFailed, Time: time.Now(), Failure: f}
	if h.cfg.protocol == ProtocolRaw {
		_ = enc.WriteValue(p)
	} else {
		tr := agui.NewTranslator(h.translatorOptions(threadID, runID))
		for _, ev := range tr.Translate(p) {
			if err := enc.WriteEvent(ev); err != nil {
				h.cfg.logger.Error("sse: writing the start-failure stream", "err", err)
				break
			}
		}
	}
	_ = http.NewResponseController(w).Flush()
}

func (h *Handler) translatorOptions(threadID, runID string) agui.Options {
	o := h.cfg.agui
	o.ThreadID, o.RunID = threadID, runID
	return o
}

// maxUnflushed bounds the payloads written between two flushes while more
// are waiting.
const maxUnflushed = 32

// stream writes the run's events until its terminal event, the end of its
// payload stream, or the client's disconnect.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, handle *agentadaptor.RunHandle, threadID, runID string) {
	setStreamHeaders(w)
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a server WriteTimeout must not cut the stream
	w.WriteHeader(http.StatusOK)
	enc := NewEncoder(w)

	var (
		write  func(p agentadaptor.StreamPayload) (done bool, err error)
		finish func() error
	)
	if h.cfg.protocol == ProtocolRaw {
		var last uint64
		write = func(p agentadaptor.StreamPayload) (bool, error) {
			last = p.Seq
			return p.Kind.Terminal(), enc.WriteValue(p)
		}
		finish = func() error {
			return enc.WriteValue(agentadaptor.StreamPayload{RunID: handle.RunID(), Seq: last + 1, Kind: agentadaptor.KindRunFailed, Time: time.Now(),
				Failure: &agentadaptor.Failure{Code: agui.CodeStreamEnded, Message: "the run's event stream ended without a terminal payload"}})
		}
	} else {
		tr := agui.NewTranslator(h.translatorOptions(threadID, runID))
		var buf []events.Event
		writeAll := func(evs []events.Event) error {
			for _, ev := range evs {
				if err := enc.WriteEvent(ev); err != nil {
					var werr *writeErr
					if errors.As(err, &werr) {
						return err
					}
					// Never reached for the translator's own events; logged, not sent.
					h.cfg.logger.Error("sse: dropping an invalid AG-UI event", "run_id", runID, "err", err)
				}
			}
			return nil
		}
		enc.w = &errWrapWriter{w: w}
		write = func(p agentadaptor.StreamPayload) (bool, error) {
			buf = tr.AppendTranslate(buf[:0], p)
			err := writeAll(buf)
			clear(buf)
			return tr.Done(), err
		}
		finish = func() error { return writeAll(tr.Close(agui.CodeStreamEnded, "")) }
	}

	var tick <-chan time.Time
	if h.cfg.keepAlive > 0 {
		t := time.NewTicker(h.cfg.keepAlive)
		defer t.Stop()
		tick = t.C
	}
	flush := func() error {
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		return nil
	}
	payloads := handle.StreamEvents()
	unflushed, flushedOnce := 0, false
	for {
		select {
		case p, ok := <-payloads:
			if !ok {
				if finish() != nil || flush() != nil {
					h.disconnected(handle, runID)
				}
				return
			}
			done, err := write(p)
			if err != nil {
				h.disconnected(handle, runID)
				return
			}
			// Coalesce bursts into one flush, but flush the first frame at
			// once (the client sees the headers and RUN_STARTED) and never
			// hold more than maxUnflushed payloads back.
			unflushed++
			if len(payloads) == 0 || done || !flushedOnce || unflushed >= maxUnflushed {
				unflushed, flushedOnce = 0, true
				if flush() != nil {
					h.disconnected(handle, runID)
					return
				}
			}
			if done {
				return
			}
		case <-tick:
			if enc.WriteComment("keep-alive") != nil || flush() != nil {
				h.disconnected(handle, runID)
				return
			}
		case <-r.Context().Done():
			h.disconnected(handle, runID)
			return
		}
	}
}

// disconnected handles a client that went away: the run (runID, its
// AG-UI runId) is cancelled and awaited (bounded), unless the handler
// detaches runs.
func (h *Handler) disconnected(handle *agentadaptor.RunHandle, runID string) {
	if h.cfg.detach {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cancelWait)
	defer cancel()
	if err := handle.Cancel(ctx); err != nil {
		h.cfg.logger.Warn("sse: cancelled run did not end in time", "run_id", runID, "sdk_run_id", handle.RunID(), "err", err)
	}
}

// writeErr marks errors of the underlying connection, as opposed to invalid
// events.
type writeErr struct{ err error }

func (e *writeErr) Error() string { return e.err.Error() }
func (e *writeErr) Unwrap() error { return e.err }

type errWrapWriter struct{ w io.Writer }

func (e *errWrapWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil {
		return n, &writeErr{err}
	}
	return n, nil
}
