package a2a_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	client "github.com/seed0634/agentadaptor/pkg/clients/a2a"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

// hostile serves an agent card whose JSON-RPC interface answers every call
// with respond; it counts the bytes it managed to write.
func hostile(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, written *atomic.Int64)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var written atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/agent-card.json" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"hostile","description":"d","version":"1","supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}`, srv.URL+"/rpc")
			return
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		r.Header.Set("X-Request-Id", string(req.ID))
		respond(w, r, &written)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv, &written
}

// A remote that sends one never-ending SSE event (64 KiB data: lines, no
// blank line) fails the stream as soon as the event passes the bound, with
// a typed error; the client never buffers more than about the bound.
func TestNeverEndingEventFailsFast(t *testing.T) {
	leakCheck(t)
	line := "data: " + strings.Repeat("x", 64<<10) + "\n"
	srv, written := hostile(t, func(w http.ResponseWriter, r *http.Request, written *atomic.Int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for r.Context().Err() == nil {
			n, err := io.WriteString(w, line)
			written.Add(int64(n))
			if err != nil {
				return
			}
			w.(http.Flusher).Flush()
			if written.Load() > 512<<20 { // a guard for the test itself
				return
			}
		}
	})
	c, err := client.NewClient(testCtx(t), srv.URL+"/.well-known/agent-card.json", client.Options{MaxEventBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.SendStreaming(testCtx(t), client.SendRequest{Text: "hi"})
	if err == nil {
		for s.Next() {
		}
		err = s.Err()
		_ = s.Close()
	}
	if clienterr.KindOf(err) != clienterr.KindProtocol || !errors.Is(err, client.ErrEventTooLarge) {
		t.Fatalf("err = %v, want a protocol error wrapping ErrEventTooLarge", err)
	}
	if w := written.Load(); w > 64<<20 {
		t.Errorf("the client read on for %d bytes after the bound", w)
	}
}

// A JSON response larger than MaxResponseBytes is refused (GetTask of a
// hostile remote would otherwise be decoded whole).
func TestHugeJSONResponseIsRefused(t *testing.T) {
	leakCheck(t)
	srv, _ := hostile(t, func(w http.ResponseWriter, r *http.Request, _ *atomic.Int64) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"},"metadata":{"pad":"%s"}}}`, r.Header.Get("X-Request-Id"), strings.Repeat("x", 2<<20))
	})
	c, err := client.NewClient(testCtx(t), srv.URL+"/.well-known/agent-card.json", client.Options{MaxResponseBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.GetTask(testCtx(t), client.GetTaskRequest{TaskID: "t"})
	if clienterr.KindOf(err) != clienterr.KindProtocol || !errors.Is(err, client.ErrResponseTooLarge) {
		t.Fatalf("err = %v, want a protocol error wrapping ErrResponseTooLarge", err)
	}
}

// A ReadBudget bounds what several calls read together.
func TestReadBudgetBoundsCallsTogether(t *testing.T) {
	leakCheck(t)
	srv, _ := hostile(t, func(w http.ResponseWriter, r *http.Request, _ *atomic.Int64) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"},"metadata":{"pad":"%s"}}}`, r.Header.Get("X-Request-Id"), strings.Repeat("x", 300<<10))
	})
	c, err := client.NewClient(testCtx(t), srv.URL+"/.well-known/agent-card.json", client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	budget := client.NewReadBudget(1 << 20)
	ctx := client.WithReadBudget(testCtx(t), budget)
	var err2 error
	for i := 0; i < 5 && err2 == nil; i++ {
		_, err2 = c.GetTask(ctx, client.GetTaskRequest{TaskID: "t"})
	}
	if !errors.Is(err2, client.ErrResponseTooLarge) || budget.Used() < 1<<20 {
		t.Fatalf("err = %v after %d bytes", err2, budget.Used())
	}
	if _, err := c.GetTask(testCtx(t), client.GetTaskRequest{TaskID: "t"}); err != nil {
		t.Fatalf("a call outside the budget: %v", err)
	}
}
