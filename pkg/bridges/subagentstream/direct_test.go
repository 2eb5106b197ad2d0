package subagentstream_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// A client's SSE response over plain HTTP/1.1 is written on its hijacked
// connection (docs/design.md#backpressure): HTTP/1.1 chunked framing,
// Connection: close, the handler's headers (CORS included), the body's end
// written, then the connection closed.

func hubServer(t *testing.T, hub *subagentstream.Hub, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	var h http.Handler = hub.EventsHandler()
	if wrap != nil {
		h = wrap(h)
	}
	mux.Handle("/agui/runs/{runId}/events", h)
	return httptest.NewUnstartedServer(mux)
}

// finishRun lets the stream of openStream end: its delegation starts and
// finishes, and the parent completes.
func finishRun(t *testing.T, parent *shellParent, p *pub) {
	t.Helper()
	p.send(delegation.DelegationStarted)
	p.send(delegation.DelegationFinished)
	parent.release(t, "go")
}

func TestHijackedResponseIsChunkedAndClosed(t *testing.T) {
	defer goleak.VerifyNone(t)
	hub, st, parent, p := openStream(t, subagentstream.HubOptions{AllowedOrigins: []string{"http://app.example"}})
	defer hub.Close()
	srv := hubServer(t, hub, nil)
	srv.Start()
	defer srv.Close()
	conn := dialTinyReceiveBuffer(t, srv.Listener.Addr().String())
	defer conn.Close()
	fmt.Fprintf(conn, "GET /agui/runs/run-r/events HTTP/1.1\r\nHost: %s\r\nOrigin: http://app.example\r\n\r\n", srv.Listener.Addr())
	finishRun(t, parent, p)
	<-st.Done()

	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache",
		"Access-Control-Allow-Origin": "http://app.example", "X-Accel-Buffering": "no",
	} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if resp.StatusCode != http.StatusOK || !resp.Close || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" || resp.Header.Get("Date") == "" {
		t.Fatalf("status %d, close %v, transfer encoding %v, date %q: want 200, a chunked body, Connection: close",
			resp.StatusCode, resp.Close, resp.TransferEncoding, resp.Header.Get("Date"))
	}
	body, err := io.ReadAll(resp.Body) // the chunked body to its end chunk
	if err != nil {
		t.Fatalf("the chunked body did not end cleanly: %v", err)
	}
	if !strings.Contains(string(body), `"RUN_FINISHED"`) {
		t.Fatalf("the body has no RUN_FINISHED:\n%s", body)
	}
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after the body: %d bytes, %v; want the connection closed", n, err)
	}
}

// flushOnly is middleware's ResponseWriter that neither unwraps nor
// hijacks.
type flushOnly struct{ http.ResponseWriter }

func (f flushOnly) Flush() { f.ResponseWriter.(http.Flusher).Flush() }

// Where the connection is not the hub's to take, the response is written
// through its ResponseWriter as before: the same stream, and the connection
// stays the server's (no Connection: close).
func TestResponsesThatKeepTheirResponseWriter(t *testing.T) {
	for _, c := range []struct {
		name  string
		opts  subagentstream.HubOptions
		wrap  func(http.Handler) http.Handler
		tls   bool
		proto int
	}{
		{name: "NoHijack", opts: subagentstream.HubOptions{NoHijack: true}, proto: 1},
		{name: "HTTP/2 over TLS", tls: true, proto: 2},
		{name: "HTTP/1.1 over TLS", tls: true, proto: 1},
		{name: "a wrapper without Unwrap", proto: 1, wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { next.ServeHTTP(flushOnly{w}, r) })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			hub, st, parent, p := openStream(t, c.opts)
			defer hub.Close()
			srv := hubServer(t, hub, c.wrap)
			if c.tls {
				srv.EnableHTTP2 = c.proto == 2
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			client := srv.Client()
			defer client.CloseIdleConnections()
			finishRun(t, parent, p)
			<-st.Done()
			resp, err := client.Get(srv.URL + "/agui/runs/run-r/events")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.ProtoMajor != c.proto || resp.Close || !strings.Contains(string(body), `"RUN_FINISHED"`) {
				t.Fatalf("HTTP/%d, Connection: close %v, RUN_FINISHED in the body %v: want HTTP/%d, the connection kept, the whole stream",
					resp.ProtoMajor, resp.Close, strings.Contains(string(body), `"RUN_FINISHED"`), c.proto)
			}
		})
	}
}

// A hijacked response is not one the HTTP server's Shutdown waits for, so
// the hub does: Wait returns only once a client that stopped reading has
// been written the stream's end, and Close closes a hijacked response that
// is still open.
func TestWaitAndCloseCoverHijackedResponses(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 3000 // far more than the client's and the server's socket buffers hold
	opts := subagentstream.Options{ReplayFrames: 2 * n, SubscriberMaxQueued: 2 * n, SubscriberMaxQueuedBytes: 64 << 20}
	hub, st, parent, p := openStream(t, subagentstream.HubOptions{Stream: opts})
	defer hub.Close()
	srv := hubServer(t, hub, nil)
	srv.Listener = smallBufListener{Listener: srv.Listener}
	srv.Start()
	defer srv.Close()

	stalled := dialTinyReceiveBuffer(t, srv.Listener.Addr().String())
	defer stalled.Close()
	fmt.Fprintf(stalled, "GET /agui/runs/run-r/events HTTP/1.1\r\nHost: %s\r\n\r\n", srv.Listener.Addr())
	for deadline := time.Now().Add(time.Minute); len(st.Attached()) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the client's subscriber is not attached")
		}
	}
	p.send(delegation.DelegationStarted)
	for i := range n {
		p.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status, e.Text = "working", fmt.Sprint("update ", i) })
	}
	p.send(delegation.DelegationFinished)
	parent.release(t, "go")
	<-st.Done()

	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := hub.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait returned %v while a stalled client's response was still being written", err)
	}
	read := make(chan error, 1)
	go func() {
		_ = stalled.SetReadDeadline(time.Now().Add(2 * time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(stalled), nil)
		if err == nil {
			var body []byte
			body, err = io.ReadAll(resp.Body)
			if err == nil && !strings.Contains(string(body), `"RUN_FINISHED"`) {
				err = errors.New("the body has no RUN_FINISHED")
			}
		}
		read <- err
	}()
	long, cancelLong := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelLong()
	if err := hub.Wait(long); err != nil {
		t.Fatalf("Wait, once the client reads: %v", err)
	}
	if err := <-read; err != nil {
		t.Fatalf("the client that read late: %v", err)
	}

	// A second client that follows a run that is still going: Close ends
	// its response (the stream ends with the hub, or its connection is
	// closed first).
	hub2, st2, parent2, _ := openStream(t, subagentstream.HubOptions{})
	srv2 := hubServer(t, hub2, nil)
	srv2.Start()
	defer srv2.Close()
	resp, err := http.Get(srv2.URL + "/agui/runs/run-r/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for deadline := time.Now().Add(time.Minute); len(st2.Attached()) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second client's subscriber is not attached")
		}
	}
	hub2.Close()
	parent2.release(t, "go")
	if _, err := io.ReadAll(resp.Body); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("reading the response Close ended: %v", err)
	}
}

// A client that follows a quiet run is sent SSE keep-alive comments every
// HubOptions.KeepAlive, however its response is written, so that proxies
// and browsers do not give up on an idle stream.
func TestQuietStreamIsKeptAlive(t *testing.T) {
	for _, c := range []struct {
		name     string
		noHijack bool
	}{{"hijacked", false}, {"ResponseWriter", true}} {
		t.Run(c.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			hub, st, parent, p := openStream(t, subagentstream.HubOptions{KeepAlive: 10 * time.Millisecond, NoHijack: c.noHijack})
			defer hub.Close()
			srv := hubServer(t, hub, nil)
			srv.Start()
			defer srv.Close()
			client := srv.Client()
			client.Timeout = time.Minute // a stream without keep-alives fails here, not at the test binary's timeout
			defer client.CloseIdleConnections()
			resp, err := client.Get(srv.URL + "/agui/runs/run-r/events")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("the stream ended before a keep-alive: %v", err)
				}
				if line == ": keep-alive\n" {
					break
				}
			}
			finishRun(t, parent, p)
			<-st.Done()
			if _, err := io.ReadAll(resp.Body); err != nil {
				t.Fatal(err)
			}
		})
	}
}
