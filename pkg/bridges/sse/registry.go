package sse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/seed0634/agentadaptor"
)

// ErrRunNotFound is returned by [Registry.Cancel] for a runId with no active
// run (never started, or already ended).
var ErrRunNotFound = errors.New("sse: no active run with that runId")

// ErrRunIDInUse is reported when a client sends the runId of a run that is
// still active (or still retained for replay, see [RunIDKeeper]).
var ErrRunIDInUse = errors.New("sse: a run with that runId is already active")

// ErrTooManyRuns is reported when a new run would exceed the handler's
// [WithMaxActiveRuns] limit.
var ErrTooManyRuns = errors.New("sse: too many active runs")

// Registry tracks a handler's active runs by run key ([RunKey]: the AG-UI
// runId of the stream's RUN_STARTED — the client's runId when it sent one,
// else the SDK's RunID — within the namespace of the principal that started
// it), so the host can cancel them from another request. A run is removed
// when it ends. Share one Registry between handlers with [WithRegistry].
// It is safe for concurrent use.
type Registry struct {
	mu       sync.Mutex
	runs     map[string]*agentadaptor.RunHandle // by run key; nil value: reserved, not started yet
	starting int                                // admitted runs without a client runId, not attached yet
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{runs: map[string]*agentadaptor.RunHandle{}}
}

// Lookup returns the active run with the given run key ([RunKey]; the
// AG-UI runId itself without a principal). A run that has ended is not
// active, even in the moment before the registry forgets it.
func (r *Registry) Lookup(key string) (*agentadaptor.RunHandle, bool) {
	r.mu.Lock()
	h := r.runs[key]
	r.mu.Unlock()
	if h == nil {
		return nil, false
	}
	select {
	case <-h.Done():
		return nil, false
	default:
		return h, true
	}
}

// Owner returns the principal that started the active (or reserved) run
// with this run key (see [WithOwner]; "" without one).
func (r *Registry) Owner(key string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.runs[key]; !ok {
		return "", false
	}
	owner, _ := SplitRunKey(key)
	return owner, true
}

// Len returns the number of active (or reserved, or starting) runs.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs) + r.starting
}

// admit claims a place for a new run: key (when the client chose a runId)
// is reserved, and the run counts against max (0: no limit) until it is
// attached or abandoned.
func (r *Registry) admit(key string, max int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if key != "" {
		if _, taken := r.runs[key]; taken {
			return fmt.Errorf("%w: %q", ErrRunIDInUse, key)
		}
	}
	if max > 0 && len(r.runs)+r.starting >= max {
		return fmt.Errorf("%w: %d runs are active, the limit is %d", ErrTooManyRuns, len(r.runs)+r.starting, max)
	}
	if key == "" {
		r.starting++
		return nil
	}
	r.runs[key] = nil
	return nil
}

// abandon drops an admission whose run did not start.
func (r *Registry) abandon(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if key == "" {
		r.starting--
		return
	}
	if r.runs[key] == nil {
		delete(r.runs, key)
	}
}

// Cancel cancels the run with the given run key ([RunKey]; the AG-UI runId
// itself without a principal) and waits until it has ended or ctx ends (see
// [agentadaptor.RunHandle.Cancel]). It returns [ErrRunNotFound] when no
// such run is active.
func (r *Registry) Cancel(ctx context.Context, key string) error {
	h, ok := r.Lookup(key)
	if !ok {
		return fmt.Errorf("%w: %q", ErrRunNotFound, key)
	}
	return h.Cancel(ctx)
}

// attach records the started run under key and starts a watcher
// goroutine, owned by the registry, that removes the entry when the run
// ends; the goroutine lives exactly as long as the run. admitted is the
// key the run was admitted with ("" when the runId is the SDK's).
func (r *Registry) attach(admitted, key string, h *agentadaptor.RunHandle) {
	r.mu.Lock()
	if admitted == "" {
		r.starting--
	}
	r.runs[key] = h
	r.mu.Unlock()
	go func() {
		<-h.Done()
		r.mu.Lock()
		if r.runs[key] == h {
			delete(r.runs, key)
		}
		r.mu.Unlock()
	}()
}

// CancelHandler returns an http.Handler for POST /agui/runs/{runId}/cancel:
// it reads the runId path wildcard (register it with a "{runId}" pattern),
// cancels the run and answers 200 {"runId":..., "cancelled":true} once the
// run has ended, 404 when no such run is active, 405 for other methods. Errors
// are JSON {"error":{"code","message"}}. It knows no principals (the runId
// is the run key): use [Handler.CancelHandler] for the handler's CORS
// policy and its [WithOwner] namespaces.
func (r *Registry) CancelHandler() http.Handler {
	return r.cancelHandler(func(_ *http.Request, runID string) string { return runID })
}

// cancelHandler is CancelHandler with the run key of a request's runId
// given by key.
func (r *Registry) cancelHandler(key func(req *http.Request, runID string) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use POST to cancel a run")
			return
		}
		id := req.PathValue("runId")
		if id == "" {
			writeError(w, http.StatusBadRequest, "missing_run_id", "no runId in the path: route this handler with a pattern such as \"POST /agui/runs/{runId}/cancel\"")
			return
		}
		if err := r.Cancel(req.Context(), key(req, id)); err != nil {
			if errors.Is(err, ErrRunNotFound) {
				writeError(w, http.StatusNotFound, "run_not_found", fmt.Sprintf("no active run %q (it may have ended already)", id))
				return
			}
			writeError(w, http.StatusServiceUnavailable, "cancel_incomplete", "the run was signalled but had not ended when the request ended: "+err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(map[string]any{"runId": id, "cancelled": true})
	})
}

// errorBody is the JSON shape of every error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: errorDetail{Code: code, Message: msg}})
}

// requestError is a client error detected before the stream starts.
type requestError struct {
	status int // 0 means 400
	code   string
	msg    string
}

func (e *requestError) Error() string { return e.code + ": " + e.msg }

// CancelAll cancels every active run and waits until they have ended or ctx
// ends. Hosts call it on shutdown before closing their HTTP server, so that
// every run's stream writes its terminal event.
func (r *Registry) CancelAll(ctx context.Context) error {
	r.mu.Lock()
	handles := make([]*agentadaptor.RunHandle, 0, len(r.runs))
	for _, h := range r.runs {
		if h != nil {
			handles = append(handles, h)
		}
	}
	r.mu.Unlock()
	var errs []error
	for _, h := range handles {
		if err := h.Cancel(ctx); err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", h.RunID(), err))
		}
	}
	return errors.Join(errs...)
}
