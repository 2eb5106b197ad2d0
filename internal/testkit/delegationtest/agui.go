package delegationtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
)

// SSERemote is a programmable remote AG-UI agent: a loopback HTTP server
// whose script writes raw SSE for each run. It records every request and
// reports (WaitGone) when a client disconnected while the script held the
// response open.
type SSERemote struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []RemoteRequest
	gone chan struct{}
}

// RemoteRequest is one request an SSERemote received.
type RemoteRequest struct {
	Auth  string
	Input types.RunAgentInput
}

// SSEWriter writes one run's response.
type SSEWriter struct {
	w  http.ResponseWriter
	r  *http.Request
	In types.RunAgentInput
	rm *SSERemote
}

// NewSSERemote starts a remote whose every run is script.
func NewSSERemote(t testing.TB, script func(w *SSEWriter)) *SSERemote {
	t.Helper()
	rm := &SSERemote{gone: make(chan struct{}, 16)}
	rm.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var in types.RunAgentInput
		_ = json.Unmarshal(body, &in)
		rm.mu.Lock()
		rm.reqs = append(rm.reqs, RemoteRequest{Auth: r.Header.Get("Authorization"), Input: in})
		rm.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		script(&SSEWriter{w: w, r: r, In: in, rm: rm})
	}))
	t.Cleanup(func() {
		rm.srv.CloseClientConnections()
		rm.srv.Close()
	})
	return rm
}

// URL is the remote's AG-UI endpoint.
func (rm *SSERemote) URL() string { return rm.srv.URL + "/agui" }

// Requests returns the requests received so far.
func (rm *SSERemote) Requests() []RemoteRequest {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return append([]RemoteRequest(nil), rm.reqs...)
}

// WaitGone waits until a held response saw its client go away.
func (rm *SSERemote) WaitGone(t testing.TB) {
	t.Helper()
	select {
	case <-rm.gone:
	case <-time.After(20 * time.Second):
		t.Fatal("the remote never saw the request aborted")
	}
}

// Raw writes s and flushes.
func (w *SSEWriter) Raw(s string) {
	_, _ = io.WriteString(w.w, s)
	w.w.(http.Flusher).Flush()
}

// Ev writes one event per JSON object; "$RUN" and "$THREAD" are replaced
// by the run's ids.
func (w *SSEWriter) Ev(evs ...string) {
	for _, e := range evs {
		e = strings.ReplaceAll(e, "$RUN", w.In.RunID)
		e = strings.ReplaceAll(e, "$THREAD", w.In.ThreadID)
		w.Raw("data: " + e + "\n\n")
	}
}

// Started writes RUN_STARTED.
func (w *SSEWriter) Started() { w.Ev(`{"type":"RUN_STARTED","threadId":"$THREAD","runId":"$RUN"}`) }

// Finished writes RUN_FINISHED.
func (w *SSEWriter) Finished() { w.Ev(`{"type":"RUN_FINISHED","threadId":"$THREAD","runId":"$RUN"}`) }

// Text writes one text message of chunks.
func (w *SSEWriter) Text(id string, chunks ...string) {
	w.Ev(fmt.Sprintf(`{"type":"TEXT_MESSAGE_START","messageId":%q,"role":"assistant"}`, id))
	for _, c := range chunks {
		w.Ev(fmt.Sprintf(`{"type":"TEXT_MESSAGE_CONTENT","messageId":%q,"delta":%q}`, id, c))
	}
	w.Ev(fmt.Sprintf(`{"type":"TEXT_MESSAGE_END","messageId":%q}`, id))
}

// Hold keeps the response open until the client goes away.
func (w *SSEWriter) Hold() {
	<-w.r.Context().Done()
	w.rm.gone <- struct{}{}
}

// AGUIBridge is a remote AG-UI agent nobody in the delegation packages
// wrote: the real pkg/bridges/sse handler over an SDK running the scripted
// agent (a real child process; the test binary must call
// scripted.MaybeRunAgent in TestMain) with a fixed scenario. It records the
// RunHandle of every run and the Authorization header of every request.
type AGUIBridge struct {
	srv *httptest.Server

	mu      sync.Mutex
	handles map[string]*agentadaptor.RunHandle
	auth    []string
}

// NewAGUIBridge starts the bridge; every remote run must have ended when
// the test ends.
func NewAGUIBridge(t testing.TB, scenario string) *AGUIBridge {
	t.Helper()
	dir := t.TempDir()
	a, err := scripted.New(scripted.Config{ScenarioData: []byte(scenario), StateDir: dir + "/state"})
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(a), agentadaptor.WithRunDefaults(
		agentadaptor.WithTempRoot(t.TempDir()), agentadaptor.WithWorkDir(t.TempDir()), agentadaptor.WithCancelGrace(5*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	b := &AGUIBridge{handles: map[string]*agentadaptor.RunHandle{}}
	h := sse.NewHandler(sdk, sse.WithOnRunStart(func(id string, rh *agentadaptor.RunHandle) {
		b.mu.Lock()
		b.handles[id] = rh
		b.mu.Unlock()
	}))
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.auth = append(b.auth, r.Header.Get("Authorization"))
		b.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		b.srv.CloseClientConnections()
		b.srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		b.mu.Lock()
		hs := make([]*agentadaptor.RunHandle, 0, len(b.handles))
		for _, h := range b.handles {
			hs = append(hs, h)
		}
		b.mu.Unlock()
		for _, h := range hs {
			_, _ = h.Wait(ctx)
		}
	})
	return b
}

// URL is the bridge's AG-UI endpoint.
func (b *AGUIBridge) URL() string { return b.srv.URL + "/agui" }

// WaitRun waits for the remote run runID to end and returns its result.
func (b *AGUIBridge) WaitRun(t testing.TB, runID string) *agentadaptor.RunResult {
	t.Helper()
	b.mu.Lock()
	h := b.handles[runID]
	b.mu.Unlock()
	if h == nil {
		t.Fatalf("remote run %s was never started", runID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := h.Wait(ctx)
	if err != nil {
		t.Fatalf("remote run %s did not end: %v", runID, err)
	}
	return res
}

// AuthHeaders returns the Authorization header of every request.
func (b *AGUIBridge) AuthHeaders() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.auth...)
}
