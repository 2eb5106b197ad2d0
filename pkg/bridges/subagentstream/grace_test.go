package subagentstream_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/ssetest"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"go.uber.org/goleak"
)

// A run whose last client left is cancelled after reconnect_grace only if
// no client reattached by then: a client that comes back within the grace
// keeps the run going to its own end, however long after the grace that
// is (docs/design.md#replay-and-reconnect).
//
// No clock is read: a second run on the same hub, left by its client after
// the first run's client came back and cancelled by its own grace, is the
// event that says the first run's grace is over.
func TestReattachedClientKeepsTheRunPastTheGrace(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	// The grace only has to outlast one loopback request (the reattach),
	// also on a loaded machine under -race: generous.
	const grace = 5 * time.Second
	bus := delegation.NewMemoryBus()
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{ReconnectGrace: grace})
	t.Cleanup(hub.Close)
	// served receives a run's id when its events handler has returned:
	// the client it served is detached from the run.
	served := make(chan string, 8)
	mux := http.NewServeMux()
	mux.HandleFunc("/agui/runs/{runId}/events", func(w http.ResponseWriter, r *http.Request) {
		hub.EventsHandler().ServeHTTP(w, r)
		served <- r.PathValue("runId")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(http.DefaultClient.CloseIdleConnections)

	// open follows a run; leave ends the client and waits until the hub
	// has detached it.
	open := func(runID string, cursor uint64) (*ssetest.Reader, context.CancelFunc) {
		rctx, cancel := context.WithCancel(ctx(t))
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, srv.URL+"/agui/runs/"+runID+"/events", nil)
		if cursor > 0 {
			req.Header.Set("Last-Event-ID", strconv.FormatUint(cursor, 10))
		}
		return ssetest.Open(t, req), cancel
	}
	leave := func(runID string, cancel context.CancelFunc) {
		cancel()
		select {
		case id := <-served:
			if id != runID {
				t.Fatalf("the handler of %s returned, want %s's", id, runID)
			}
		case <-ctx(t).Done():
			t.Fatalf("the client of %s was never detached", runID)
		}
	}

	a := &shellParent{dir: t.TempDir()}
	h := startParent(t, a, a.script(
		P{Kind: agentadaptor.KindTextStart, MessageID: "m1"},
		"wait:go",
		P{Kind: agentadaptor.KindTextEnd, MessageID: "m1"},
	))
	hub.Start(h, "th", "run-r")
	canaryParent := &shellParent{dir: t.TempDir()}
	canary := startParent(t, canaryParent, canaryParent.script("wait:never"))
	hub.Start(canary, "th", "run-canary")

	first, cancelFirst := open("run-r", 0)
	seen := first.Until(t, `"TEXT_MESSAGE_START"`)
	leave("run-r", cancelFirst) // the run's last client left: its grace starts
	again, _ := open("run-r", ssetest.LastID(seen))

	_, cancelCanary := open("run-canary", 0)
	leave("run-canary", cancelCanary)
	select {
	case <-canary.Done(): // cancelled by its grace, which started after run-r's client came back
	case <-ctx(t).Done():
		t.Fatal("the run whose client left was not cancelled after the grace")
	}

	a.release(t, "go")
	var got []string
	for _, f := range again.Rest() {
		for _, typ := range []string{"TEXT_MESSAGE_END", "RUN_FINISHED", "RUN_ERROR"} {
			if strings.Contains(f.Data, `"type":"`+typ+`"`) {
				got = append(got, typ)
			}
		}
	}
	if strings.Join(got, ",") != "TEXT_MESSAGE_END,RUN_FINISHED" {
		t.Fatalf("the reattached client's run ended with %v, want TEXT_MESSAGE_END, RUN_FINISHED: it was cancelled although a client came back within the grace", got)
	}
	leave("run-r", func() {})
}
