package host

import (
	"net/http"
	"strings"

	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
)

// byAGUIRunID rewrites /agui/runs/{runId}/... from the stream's AG-UI runId
// (the client's) to the SDK run id the delegation service keys on. The
// runId is resolved in the caller's namespace (sse.RunKey): with
// authentication, a run belongs to the principal that started it, and
// other principals (and runs the host does not know) get 404.
func (h *Host) byAGUIRunID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("runId")
		if h.guard.AuthRequired() {
			if e, ok := h.runOwner(principal(r), id); !ok || e.principal != principal(r) {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"error":{"code":"run_not_found","message":"no run with this id for you"}}` + "\n"))
				return
			}
		}
		if sdkID, ok := h.sdkRunID(principal(r), id); ok && sdkID != id {
			r = r.Clone(r.Context())
			r.URL.Path = strings.Replace(r.URL.Path, "/agui/runs/"+id+"/", "/agui/runs/"+sdkID+"/", 1)
			r.URL.RawPath = ""
			r.SetPathValue("runId", sdkID)
		}
		next.ServeHTTP(w, r)
	})
}

// runOwner returns who started a run (the caller's runId) and its SDK id:
// this replica's own runs (by run key), else (scaled out) what the cluster
// knows of another replica's.
func (h *Host) runOwner(principal, aguiRunID string) (ownerEntry, bool) {
	if e, ok := h.owners.get(sse.RunKey(principal, aguiRunID)); ok {
		return e, true
	}
	return h.cl.owner(principal, aguiRunID)
}

func (h *Host) sdkRunID(principal, aguiRunID string) (string, bool) {
	key := sse.RunKey(principal, aguiRunID)
	if e, ok := h.owners.get(key); ok {
		return e.sdkRunID, true
	}
	if st, ok := h.hub.Stream(key); ok {
		return st.SDKRunID(), true
	}
	if hd, ok := h.registry.Lookup(key); ok {
		return hd.RunID(), true
	}
	if e, ok := h.cl.owner(principal, aguiRunID); ok && e.sdkRunID != "" {
		return e.sdkRunID, true
	}
	return "", false
}
