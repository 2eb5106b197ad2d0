package host

import (
	"context"
	"net/http"
	"sync"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// admission is the host's gate for new runs: until Shutdown it admits
// POST /agui and remembers every run a request starts; from Shutdown on it
// refuses new ones (503), so that cancelling the runs it knows cancels
// them all. A request between admission and its run's start is pending:
// Shutdown waits for it, and cancels the run it starts.
type admission struct {
	mu       sync.Mutex
	closing  bool
	pending  int
	idle     chan struct{} // closed and replaced when pending drops to 0 while closing
	runs     map[*agentadaptor.RunHandle]struct{}
	admitted int // runs started so far, to prune ended ones now and then
}

func newAdmission() *admission {
	return &admission{idle: make(chan struct{}), runs: map[*agentadaptor.RunHandle]struct{}{}}
}

type ticketKey struct{}

// ticket is one admitted request: done once its run has started (or it
// will not start one).
type ticket struct {
	a    *admission
	once sync.Once
}

// gate admits POST requests to next (a new run each) while the host is
// not shutting down; other methods (the CORS preflight) pass.
func (a *admission) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		a.mu.Lock()
		if a.closing {
			a.mu.Unlock()
			w.Header().Set("Retry-After", "5")
			writeHostError(w, http.StatusServiceUnavailable, "shutting_down", "this host is shutting down and starts no new run; retry on another replica or once it is back")
			return
		}
		a.pending++
		a.mu.Unlock()
		t := &ticket{a: a}
		defer t.done(nil)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ticketKey{}, t)))
	})
}

// runStarted records the run a request of the gate started (rh nil: none):
// the request is no longer pending. A run that starts while the host
// shuts down is cancelled at once.
func runStarted(r *http.Request, rh *agentadaptor.RunHandle) {
	if t, ok := r.Context().Value(ticketKey{}).(*ticket); ok {
		t.done(rh)
	}
}

func (t *ticket) done(rh *agentadaptor.RunHandle) {
	t.once.Do(func() {
		a := t.a
		a.mu.Lock()
		defer a.mu.Unlock()
		if rh != nil {
			a.runs[rh] = struct{}{}
			if a.admitted++; a.admitted%64 == 0 {
				a.pruneLocked()
			}
			if a.closing {
				done, cancel := context.WithCancel(context.Background())
				cancel()
				_ = rh.Cancel(done) // signal only: Shutdown waits for it
			}
		}
		if a.pending--; a.pending == 0 && a.closing {
			close(a.idle)
			a.idle = make(chan struct{})
		}
	})
}

// pruneLocked forgets the runs that ended.
func (a *admission) pruneLocked() {
	for rh := range a.runs {
		select {
		case <-rh.Done():
			delete(a.runs, rh)
		default:
		}
	}
}

// close stops admitting, waits (bounded by ctx) until no admitted request
// is still starting its run, and returns the runs that may still be
// active.
func (a *admission) close(ctx context.Context) ([]*agentadaptor.RunHandle, error) {
	a.mu.Lock()
	a.closing = true
	var err error
	for a.pending > 0 && err == nil {
		idle := a.idle
		a.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			err = ctx.Err()
		}
		a.mu.Lock()
	}
	a.pruneLocked()
	runs := make([]*agentadaptor.RunHandle, 0, len(a.runs))
	for rh := range a.runs {
		runs = append(runs, rh)
	}
	a.mu.Unlock()
	return runs, err
}

// closed reports whether the host stopped admitting runs.
func (a *admission) closed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closing
}
