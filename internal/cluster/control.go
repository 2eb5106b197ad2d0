package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Bounds of forwarded requests.
const (
	// MaxForwardBody bounds a forwarded request's body (NATS messages are
	// at most 1 MB by default).
	MaxForwardBody = 512 << 10
	// forwardTimeout bounds a forwarded request (a cancel waits for the run
	// to end).
	forwardTimeout = 40 * time.Second
)

// controlRequest is a request forwarded to a run's owner.
type controlRequest struct {
	// Op is "" for a forwarded HTTP request, "follow" for a follower's
	// heartbeat (Path is then the runId, Principal the run's principal).
	Op          string `json:"op,omitempty"`
	Method      string `json:"method"`
	Path        string `json:"path"`
	Principal   string `json:"principal,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	Body        []byte `json:"body,omitempty"`
}

// controlResponse is the owner's answer.
type controlResponse struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

// Forward sends r — a request on a run of another replica (cancel, input
// answer) — to the run's owner, which serves it as it serves its own
// requests, acting for principal, and writes the owner's answer (status,
// content type, body) to w. It returns false, leaving r as it was, when
// the run is not another live replica's: unknown, ended, this replica's,
// or its owner does not answer (dead); the caller then serves r itself.
func (c *Cluster) Forward(w http.ResponseWriter, r *http.Request, runID, principal string) bool {
	rec, err := c.Run(r.Context(), principal, runID)
	if err != nil || rec.Replica == c.cfg.Replica || !rec.EndedAt.IsZero() {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxForwardBody+1))
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil || len(body) > MaxForwardBody {
		return false
	}
	req, _ := json.Marshal(controlRequest{Method: r.Method, Path: r.URL.RequestURI(), Principal: principal,
		ContentType: r.Header.Get("Content-Type"), Body: body})
	ctx, cancel := context.WithTimeout(r.Context(), forwardTimeout)
	defer cancel()
	msg, err := c.nc.RequestWithContext(ctx, controlSubject(rec.Replica), req)
	if err != nil {
		if !errors.Is(err, nats.ErrNoResponders) {
			c.log.Warn("cluster: forwarding a request to the run's replica", "run_id", runID, "to", rec.Replica, "err", err)
			writeJSONError(w, http.StatusGatewayTimeout, "replica_unavailable", "the replica running this run did not answer in time; retry")
			return true
		}
		return false
	}
	var resp controlResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil || resp.Status == 0 {
		writeJSONError(w, http.StatusBadGateway, "replica_unavailable", "the replica running this run answered with something unreadable")
		return true
	}
	for _, k := range []string{"Content-Type", "Retry-After", "Allow", "Cache-Control"} {
		if v := resp.Header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
	return true
}

// onControl serves a forwarded request on its own goroutine (owned by the
// cluster, at most 64 at once).
func (c *Cluster) onControl(m *nats.Msg) {
	var op struct {
		Op        string `json:"op"`
		Path      string `json:"path"`
		Principal string `json:"principal"`
	}
	if json.Unmarshal(m.Data, &op) == nil && op.Op == "follow" {
		c.holds.touch(c, op.Principal, op.Path)
		return
	}
	select {
	case c.ctlSem <- struct{}{}:
	case <-c.ctx.Done():
		return
	}
	if !c.spawn(func() {
		defer func() { <-c.ctlSem }()
		c.serveControl(m)
	}) {
		<-c.ctlSem
	}
}

func (c *Cluster) serveControl(m *nats.Msg) {
	var req controlRequest
	rec := &recorder{header: http.Header{}}
	if err := json.Unmarshal(m.Data, &req); err != nil || c.handlers.Local == nil {
		writeJSONError(rec, http.StatusBadRequest, "bad_forward", "unreadable forwarded request")
	} else {
		ctx, cancel := context.WithTimeout(c.ctx, forwardTimeout)
		r, err := http.NewRequestWithContext(ctx, req.Method, req.Path, bytes.NewReader(req.Body))
		if err != nil {
			writeJSONError(rec, http.StatusBadRequest, "bad_forward", "unreadable forwarded request")
		} else {
			if req.ContentType != "" {
				r.Header.Set("Content-Type", req.ContentType)
			}
			c.handlers.Local(req.Principal, rec, r)
		}
		cancel()
	}
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	data, _ := json.Marshal(controlResponse{Status: rec.status, Header: rec.header, Body: rec.body.Bytes()})
	_ = m.Respond(data)
}

// recorder is a minimal http.ResponseWriter that keeps the answer.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.body.Len()+len(p) > MaxForwardBody {
		return 0, errors.New("cluster: forwarded answer too large")
	}
	return r.body.Write(p)
}

func writeJSONError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// Followers: a replica serving another replica's run to a client tells the
// run's replica every followEvery, which then counts the client as
// attached (Handlers.Hold) until holdFor after the last heartbeat: the
// run's reconnect grace does not cancel a run followed elsewhere.
const (
	followEvery = 3 * time.Second
	holdFor     = 10 * time.Second
)

type holds struct {
	mu sync.Mutex
	m  map[string]*hold
}

type hold struct {
	release func()
	until   time.Time
}

func (hs *holds) touch(c *Cluster, principal, runID string) {
	if c.handlers.Hold == nil {
		return
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.m == nil {
		hs.m = map[string]*hold{}
	}
	key := runKey(principal, runID)
	if h := hs.m[key]; h != nil {
		h.until = time.Now().Add(holdFor)
		return
	}
	if len(hs.m) >= 100000 {
		return
	}
	release, ok := c.handlers.Hold(principal, runID)
	if !ok {
		return
	}
	hs.m[key] = &hold{release: release, until: time.Now().Add(holdFor)}
}

// expire releases the holds without a recent heartbeat (all with all).
func (hs *holds) expire(all bool) {
	hs.mu.Lock()
	var done []func()
	for id, h := range hs.m {
		if all || time.Now().After(h.until) {
			done = append(done, h.release)
			delete(hs.m, id)
		}
	}
	hs.mu.Unlock()
	for _, f := range done {
		f()
	}
}

// follow is the goroutine (owned by the cluster) that sends this replica's
// heartbeats and expires the holds others asked for.
func (c *Cluster) follow() {
	defer c.holds.expire(true)
	for c.sleep(followEvery) {
		for _, f := range c.mirrors.followed() {
			data, _ := json.Marshal(controlRequest{Op: "follow", Path: f.runID, Principal: f.principal})
			_ = c.nc.Publish(controlSubject(f.replica), data)
		}
		c.holds.expire(false)
	}
}
