package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/seed0634/agentadaptor/internal/cluster"
	"github.com/seed0634/agentadaptor/internal/httpguard"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
)

// clustered is what a replica of a scaled-out host (config cluster.nats_url)
// shares with the others (docs/design.md#scale-out); the zero value, for a
// single process, shares nothing.
type clustered struct {
	c *cluster.Cluster
}

// openCluster connects to NATS when the config has a cluster: an
// unreachable NATS fails New with one clear error.
func (h *Host) openCluster(ctx context.Context, cfg Cluster) error {
	if cfg.NATSURL == "" {
		return nil
	}
	if cfg.CredsRef == "" {
		h.log.Warn("cluster: no cluster.creds_ref: the replicas connect to NATS without credentials; any process that can reach " +
			"the NATS server can then read every principal's frames, audit records and artifacts and cancel or answer their runs. " +
			"Give the replicas a NATS user of their own (README: Running several replicas)")
	}
	c, err := cluster.New(ctx, cluster.Config{URL: cfg.NATSURL, Replica: cfg.Replica, Lease: cfg.Lease,
		CredsRef: cfg.CredsRef, Logger: h.log, Observer: h.tel.Cluster(), Stream: subagentstream.Options{Observer: h.tel}})
	if err != nil {
		return err
	}
	h.cl.c = c
	return nil
}

// cancelClaim is the delegator's CancelClaim: the cluster's, nil for one
// process.
func (cl clustered) cancelClaim() func(context.Context, string, string) (delegator.CancelTurn, error) {
	if cl.c == nil {
		return nil
	}
	return cl.c.ClaimCancel
}

// stores returns the audit, artifact and sticky context stores: the
// cluster's when there is one, else nil (the defaults).
func (cl clustered) stores() (audit.Store, artifact.Store, delegator.ContextStore) {
	if cl.c == nil {
		return nil, artifact.NewMemoryStore(0), nil
	}
	return cl.c.Audit(), cl.c.Artifacts(), cl.c.Contexts()
}

// hubOptions adds the cluster's journal and source to the hub's options.
func (cl clustered) hubOptions(o subagentstream.HubOptions) subagentstream.HubOptions {
	if cl.c != nil {
		o.Journal, o.Source = cl.c.Journal(), cl.c.Source(httpguard.Principal)
	}
	return o
}

// startCluster serves the other replicas: forwarded requests on h's routes, and
// the delegations of runs whose replica died.
func (h *Host) startCluster() error {
	if h.cl.c == nil {
		return nil
	}
	return h.cl.c.Start(cluster.Handlers{
		Local: func(p string, w http.ResponseWriter, r *http.Request) {
			if !forwardable(r) {
				writeHostError(w, http.StatusNotFound, "not_forwardable", "only cancel and input requests are forwarded between replicas")
				return
			}
			h.mux.ServeHTTP(w, r.WithContext(httpguard.WithPrincipal(r.Context(), p)))
		},
		Hold: func(principal, runID string) (func(), bool) { return h.hub.Hold(sse.RunKey(principal, runID)) },
		EndOrphan: func(ctx context.Context, rec audit.Record) error {
			h.deleg.EndOrphan(ctx, rec, delegation.FailureCode(cluster.CodeHostLost), "The host replica running the parent run stopped; the remote task was cancelled.")
			return nil
		},
	})
}

// forwardable reports whether r is a request another replica may forward:
// POST .../cancel or POST .../delegations/{id}/input of a run, nothing else.
func forwardable(r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/agui/runs/")
	if r.Method != http.MethodPost || !ok {
		return false
	}
	parts := strings.Split(rest, "/")
	return len(parts) == 2 && parts[1] == "cancel" || len(parts) == 4 && parts[1] == "delegations" && parts[3] == "input"
}

// admitRun refuses new runs (503) while the replica has lost NATS (their
// streams could not be shared), and reserves a client-chosen runId across
// the cluster before the run starts: the second of two POSTs with the same
// new runId, on any replicas, gets 409 (docs/design.md#scale-out). The
// reservation is keyed by the requester's principal and the runId.
func (h *Host) admitRun(next http.Handler) http.Handler {
	if h.cl.c == nil {
		return next
	}
	unavailable := func(w http.ResponseWriter, err error) {
		w.Header().Set("Retry-After", "5")
		writeHostError(w, http.StatusServiceUnavailable, "cluster_unavailable", "this replica cannot share new runs with the others right now ("+err.Error()+"); retry, or use another replica")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		if err := h.cl.c.Err(); err != nil {
			unavailable(w, err)
			return
		}
		in, ok := peekRunIDs(r)
		if !ok || in.RunID == "" {
			next.ServeHTTP(w, r) // the handler answers a bad body; a run without runId gets a fresh id
			return
		}
		res, err := h.cl.c.Reserve(r.Context(), principal(r), in.RunID, in.ThreadID)
		switch {
		case errors.Is(err, cluster.ErrRunIDInUse):
			writeHostError(w, http.StatusConflict, "run_id_in_use", fmt.Sprintf("run %q is taken in this cluster: send a new runId for a new run", in.RunID))
			return
		case err != nil:
			unavailable(w, err)
			return
		}
		defer res.Release()
		next.ServeHTTP(w, r)
	})
}

// maxPeekBytes bounds the part of a POST /agui body read for its runId
// (the SSE handler's default request bound).
const maxPeekBytes = 1 << 20

// peekRunIDs reads the runId and threadId of a POST /agui body, leaving
// the body for the handler; ok is false when it is not a JSON object
// within maxPeekBytes.
func peekRunIDs(r *http.Request) (in struct {
	RunID    string `json:"runId"`
	ThreadID string `json:"threadId"`
}, ok bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPeekBytes+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || len(body) > maxPeekBytes {
		return in, false
	}
	return in, json.Unmarshal(body, &in) == nil
}

// forwarded sends a POST on a run another replica runs (cancel, input
// answer) to that replica.
func (h *Host) forwarded(next http.Handler) http.Handler {
	if h.cl.c == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := sse.RunKey(principal(r), r.PathValue("runId"))
		if r.Method == http.MethodPost {
			if _, local := h.registry.Lookup(key); !local && h.cl.c.Forward(w, r, r.PathValue("runId"), principal(r)) {
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// owner returns what the cluster knows of a run of any replica, started by
// principal.
func (cl clustered) owner(principal, runID string) (ownerEntry, bool) {
	if cl.c == nil {
		return ownerEntry{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, err := cl.c.Run(ctx, principal, runID)
	if err != nil {
		return ownerEntry{}, false
	}
	return ownerEntry{principal: rec.Principal, sdkRunID: rec.SDKRunID, at: time.Now()}, true
}

// health adds the cluster's state to /healthz.
func (cl clustered) health(body map[string]any) {
	if cl.c == nil {
		return
	}
	st := map[string]any{"replica": cl.c.Replica(), "nats": "connected"}
	if err := cl.c.Err(); err != nil {
		st["nats"] = err.Error()
		body["status"] = "degraded"
	}
	body["cluster"] = st
}

func (cl clustered) close(ctx context.Context) error {
	if cl.c == nil {
		return nil
	}
	return cl.c.Close(ctx)
}

func writeHostError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
