package a2adelegation

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
)

// aguiBridge is a remote AG-UI agent nobody in this package wrote: the
// real pkg/bridges/sse handler over an SDK running the scripted agent (a
// real child process) with a fixed scenario. It records the RunHandle of
// every run and the Authorization header of every request.
type aguiBridge struct {
	srv *httptest.Server

	mu      sync.Mutex
	handles map[string]*agentadaptor.RunHandle
	auth    []string
}

func newAGUIBridge(t *testing.T, scenario string) *aguiBridge {
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
	b := &aguiBridge{handles: map[string]*agentadaptor.RunHandle{}}
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
		// Every remote run must have ended (cancelled or finished).
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

func (b *aguiBridge) URL() string { return b.srv.URL + "/agui" }

// waitRun waits for the remote run runID to end and returns its result.
func (b *aguiBridge) waitRun(t *testing.T, runID string) *agentadaptor.RunResult {
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

func (b *aguiBridge) authHeaders() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.auth...)
}
