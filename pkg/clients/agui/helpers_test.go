package agui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"go.uber.org/goleak"

	aguiclient "github.com/seed0634/agentadaptor/pkg/clients/agui"
)

// leakCheck must be called first in a test: its cleanup then runs after the
// servers' and clients' cleanups and fails the test on leaked goroutines.
func leakCheck(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// captured is one request a fake remote received.
type captured struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// remote is a loopback HTTP server running a script per request. It records
// every request and notices when a client goes away.
type remote struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []captured
	// gone receives once per request whose client disconnected while the
	// script was waiting (see hold).
	gone chan struct{}
}

// script writes a response. w flushes after every write.
type script func(w *flushWriter, r *http.Request)

func newRemote(t *testing.T, s script) *remote {
	t.Helper()
	rm := &remote{gone: make(chan struct{}, 16)}
	rm.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rm.mu.Lock()
		rm.reqs = append(rm.reqs, captured{r.Method, r.URL.Path, r.Header.Clone(), body})
		rm.mu.Unlock()
		s(&flushWriter{w: w, rm: rm}, r)
	}))
	t.Cleanup(rm.Close)
	return rm
}

func (rm *remote) requests() []captured {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return append([]captured(nil), rm.reqs...)
}

// waitGone waits until a held request saw its client disconnect.
func (rm *remote) waitGone(t *testing.T) {
	t.Helper()
	select {
	case <-rm.gone:
	case <-time.After(20 * time.Second):
		t.Fatal("the remote never saw the client disconnect")
	}
}

type flushWriter struct {
	w  http.ResponseWriter
	rm *remote
}

// sse writes the SSE response headers.
func (f *flushWriter) sse() {
	f.w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	f.w.Header().Set("Cache-Control", "no-cache")
	f.w.WriteHeader(http.StatusOK)
	f.w.(http.Flusher).Flush()
}

// raw writes s as is and flushes.
func (f *flushWriter) raw(s string) {
	_, _ = io.WriteString(f.w, s)
	f.w.(http.Flusher).Flush()
}

// data writes one frame per JSON event.
func (f *flushWriter) data(evs ...string) {
	for _, ev := range evs {
		f.raw("data: " + ev + "\n\n")
	}
}

// hold blocks until the client goes away and reports it on rm.gone.
func (f *flushWriter) hold(r *http.Request) {
	<-r.Context().Done()
	f.rm.gone <- struct{}{}
}

// sseScript answers with the given raw SSE text and ends the response.
func sseScript(body string) script {
	return func(w *flushWriter, _ *http.Request) {
		w.sse()
		w.raw(body)
	}
}

func newClient(t *testing.T, opts aguiclient.Options) *aguiclient.Client {
	t.Helper()
	c, err := aguiclient.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func run(t *testing.T, c *aguiclient.Client, in aguiclient.Input) *aguiclient.Stream {
	t.Helper()
	s, err := c.Run(testCtx(t), in)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// drain reads a stream to its end.
func drain(s *aguiclient.Stream) []events.Event {
	var evs []events.Event
	for s.Next() {
		evs = append(evs, s.Event())
	}
	return evs
}

func typesOf(evs []events.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = string(ev.Type())
	}
	return out
}

// Raw AG-UI event JSON used by the tests.
const (
	evRunStarted  = `{"type":"RUN_STARTED","threadId":"t1","runId":"r1"}`
	evRunFinished = `{"type":"RUN_FINISHED","threadId":"t1","runId":"r1","result":{"ok":true}}`
	evRunError    = `{"type":"RUN_ERROR","message":"remote failed","code":"boom","runId":"r1"}`
	evMsgStart    = `{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}`
	evMsgContent  = `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Hello"}`
	evMsgEnd      = `{"type":"TEXT_MESSAGE_END","messageId":"m1"}`
)

func mustJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

// pipeClient returns a client whose one connection is an in-memory
// net.Pipe, and serves one request on the other end: it reads the request,
// answers 200 text/event-stream with Connection: close, and lets respond
// write the body; the response ends when respond returns. No socket is
// involved, so the test can run in a testing/synctest bubble (a goroutine
// blocked on a real socket is never durably blocked, so the bubble's clock
// would not advance).
func pipeClient(t *testing.T, opts aguiclient.Options, respond func(w io.Writer)) *aguiclient.Client {
	t.Helper()
	srv, cli := net.Pipe()
	var dialed atomic.Bool
	tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		if dialed.Swap(true) {
			return nil, errors.New("pipeClient serves one connection")
		}
		return cli, nil
	}}
	served := make(chan struct{})
	// Runs after the client's and the stream's cleanups: unblock the
	// remote if the test failed before reading the response, and wait for it
	// (in a bubble, a goroutine left behind is a deadlock panic that would
	// bury the test's own failure).
	t.Cleanup(func() {
		_ = srv.Close()
		<-served
	})
	go func() {
		defer close(served)
		defer srv.Close()
		req, err := http.ReadRequest(bufio.NewReader(srv))
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if writeSSE(srv, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n") {
			respond(srv)
		}
	}()
	opts.EndpointURL, opts.HTTPClient = "http://127.0.0.1/agent", &http.Client{Transport: tr}
	c := newClient(t, opts)
	t.Cleanup(tr.CloseIdleConnections)
	return c
}

// writeSSE writes s to a pipeClient connection and reports whether the client
// still reads it.
func writeSSE(w io.Writer, s string) bool {
	_, err := io.WriteString(w, s)
	return err == nil
}
