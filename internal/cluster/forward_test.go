package cluster

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor/internal/testkit/natstest"
)

// A cancel or input answer that reaches another replica than the run's is
// served by the run's replica acting for the caller's principal, with the
// request's method, path, content type and body; another principal's
// request for the same runId is not forwarded (its run is not there)
// (docs/design.md#scale-out, "Requests for the run's replica").
func TestForwardActsForTheCaller(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ns := natstest.New(t)
	a, b := newCluster(t, ns, "a"), newCluster(t, ns, "b")
	type served struct{ principal, method, path, contentType, body string }
	var mu sync.Mutex
	var got []served
	if err := a.Start(Handlers{Local: func(principal string, w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, served{principal, r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"), string(body)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(Handlers{}); err != nil {
		t.Fatal(err)
	}
	beginRun(t, a, "run-f", true) // alice's run, on a

	req := httptest.NewRequest(http.MethodPost, "/runs/run-f/input?x=1", strings.NewReader(`{"answer":"2024"}`))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	if !b.Forward(w, req, "run-f", "alice") {
		t.Fatal("alice's request on b was not forwarded to a")
	}
	if w.Code != http.StatusAccepted || w.Body.String() != `{"ok":true}` || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("answer %d %q %v", w.Code, w.Body.String(), w.Header())
	}
	mu.Lock()
	want := served{"alice", http.MethodPost, "/runs/run-f/input?x=1", "application/json", `{"answer":"2024"}`}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("a served %+v, want %+v", got, want)
	}
	mu.Unlock()

	// bob names alice's runId: there is no run of bob's to forward to.
	w = httptest.NewRecorder()
	if b.Forward(w, httptest.NewRequest(http.MethodPost, "/runs/run-f/cancel", nil), "run-f", "bob") {
		t.Fatalf("bob's request for alice's runId was forwarded: %d %s", w.Code, w.Body.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("a served %+v", got)
	}
}
