//go:build linux

package subagentstream_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// smallBufListener shrinks the kernel send buffer of every accepted
// connection, so that a client that stops reading blocks the server's
// writes after a few KiB instead of after megabytes of autotuned buffer.
// With closed set, each connection's first Close is reported there, whether
// the HTTP server or the hub (a hijacked response) closes it.
type smallBufListener struct {
	net.Listener
	closed chan<- struct{}
}

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, err
	}
	_ = tc.SetWriteBuffer(8 << 10)
	if l.closed == nil {
		return c, err
	}
	return &closeReporter{TCPConn: tc, closed: l.closed}, err
}

// closeReporter is a TCP connection (its SyscallConn included) that reports
// its first Close.
type closeReporter struct {
	*net.TCPConn
	closed chan<- struct{}
	once   sync.Once
}

func (c *closeReporter) Close() error {
	c.once.Do(func() { c.closed <- struct{}{} })
	return c.TCPConn.Close()
}

// dialTinyReceiveBuffer connects with a 4 KiB receive buffer, set before
// the connection is made so that the window it advertises is tiny too.
func dialTinyReceiveBuffer(t testing.TB, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
		}); err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sseFrame is one complete SSE frame as a client parses it.
type sseFrame struct {
	id   uint64
	data string
}

// readFrame reads the next complete frame (an event without a blank line
// after it at the end of the stream is incomplete: SSE discards it).
func readFrame(br *bufio.Reader) (sseFrame, error) {
	var f sseFrame
	seen := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return sseFrame{}, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if seen {
				return f, nil
			}
		case strings.HasPrefix(line, "id: "):
			f.id, _ = strconv.ParseUint(line[4:], 10, 64)
			seen = true
		case strings.HasPrefix(line, "data: "):
			f.data = line[6:]
			seen = true
		}
	}
}

// statusText returns the "update N" text of a subagent.status frame.
func statusText(f sseFrame) (string, bool) {
	if !strings.Contains(f.data, `"name":"subagent.status"`) {
		return "", false
	}
	i := strings.Index(f.data, `"text":"`)
	if i < 0 {
		return "", false
	}
	rest := f.data[i+8:]
	return rest[:strings.IndexByte(rest, '"')], true
}

// A browser client that stops reading (a real TCP connection with a tiny
// receive buffer) while a remote sends 100,000 status updates does not grow
// the host: its subscriber never holds more than its bound
// (SubscriberMaxQueued frames, SubscriberMaxQueuedBytes), and past it the
// client is disconnected — its response ends without a terminal event, even
// though the server's write to it was blocked. Its merge and the replay log
// lose nothing: reconnecting with Last-Event-ID, it receives every update
// exactly once and in order, then the run's end (docs/design.md#backpressure).
//
// Both ways a response is written: on its hijacked connection (HTTP/1.1,
// the default) and through its ResponseWriter (HubOptions.NoHijack, as for
// TLS and HTTP/2).
func TestStalledClientIsCutAndResumesLosslessly(t *testing.T) {
	for _, c := range []struct {
		name     string
		noHijack bool
	}{{"hijacked", false}, {"ResponseWriter", true}} {
		t.Run(c.name, func(t *testing.T) { testStalledClient(t, c.noHijack) })
	}
}

func testStalledClient(t *testing.T, noHijack bool) {
	defer goleak.VerifyNone(t)
	const n = 100_000
	// A replay log that keeps the whole run, so the resume can be checked
	// event by event; the subscriber's bound is far below it.
	opts := subagentstream.Options{ReplayFrames: 2 * n, ReplayBytes: 512 << 20, SubscriberMaxQueued: 2000, SubscriberMaxQueuedBytes: 1 << 20}
	hub, st, parent, p := openStream(t, subagentstream.HubOptions{Stream: opts, NoHijack: noHijack})
	defer hub.Close()
	mux := http.NewServeMux()
	mux.Handle("/agui/runs/{runId}/events", hub.EventsHandler())
	srv := httptest.NewUnstartedServer(mux)
	closed := make(chan struct{}, 8)
	srv.Listener = smallBufListener{Listener: srv.Listener, closed: closed}
	srv.Start()
	defer func() {
		srv.CloseClientConnections()
		srv.Close()
		http.DefaultClient.CloseIdleConnections()
	}()

	conn := dialTinyReceiveBuffer(t, srv.Listener.Addr().String())
	defer conn.Close()
	fmt.Fprintf(conn, "GET /agui/runs/run-r/events HTTP/1.1\r\nHost: %s\r\n\r\n", srv.Listener.Addr())
	br := bufio.NewReaderSize(conn, 512)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "\r\n" {
			break
		}
	}
	// The client uses HTTP/1.1 chunked framing: read through it.
	body := bufio.NewReaderSize(httpChunked(br), 512)
	var first []sseFrame
	for {
		f, err := readFrame(body)
		if err != nil {
			t.Fatalf("before stalling: %v", err)
		}
		first = append(first, f)
		if strings.Contains(f.data, `"TOOL_CALL_START"`) {
			break
		}
	}
	var sub *subagentstream.Subscriber
	for deadline := time.Now().Add(time.Minute); sub == nil; time.Sleep(time.Millisecond) {
		if subs := st.Attached(); len(subs) == 1 {
			sub = subs[0]
		} else if time.Now().After(deadline) {
			t.Fatal("the client's subscriber is not attached")
		}
	}

	// The client reads nothing more while the remote sends its updates.
	p.send(delegation.DelegationStarted)
	for i := range n {
		p.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status, e.Text = "working", fmt.Sprint("update ", i) })
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	p.send(delegation.DelegationFinished)
	parent.release(t, "go")
	<-st.Done()
	frames, bytes, maxFrames, maxBytes := sub.Peak()
	t.Logf("after %d updates to a client that stopped reading: heap in use %.1f MiB (the replay log keeps the whole run here); "+
		"the client's queue peaked at %d frames / %d bytes (bound %d / %d)", n, float64(ms.HeapInuse)/(1<<20), frames, bytes, maxFrames, maxBytes)
	if !sub.Cut() {
		t.Fatal("the client that stopped reading was not disconnected")
	}
	if frames > maxFrames || bytes > maxBytes {
		t.Fatalf("the client's queue reached %d frames / %d bytes, beyond its bound %d / %d", frames, bytes, maxFrames, maxBytes)
	}

	// The server let the connection go although the client still reads
	// nothing (its write to the client was blocked when it was cut).
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("the server still holds the connection of the client it cut")
	}

	// The client reads what had reached it: the response ends without a
	// terminal event. It resumes from the last complete frame.
	for {
		f, err := readFrame(body)
		if err != nil {
			break
		}
		first = append(first, f)
	}
	for _, f := range first {
		if strings.Contains(f.data, `"RUN_FINISHED"`) || strings.Contains(f.data, `"RUN_ERROR"`) {
			t.Fatal("the cut response carried a terminal event")
		}
	}
	cursor := first[len(first)-1].id
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/agui/runs/run-r/events", nil)
	req.Header.Set("Last-Event-ID", strconv.FormatUint(cursor, 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rest := bufio.NewReader(resp.Body)
	all := first
	for {
		f, err := readFrame(rest)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		all = append(all, f)
	}
	if !strings.Contains(all[len(all)-1].data, `"RUN_FINISHED"`) {
		t.Fatalf("the resumed stream does not end with the run's end: %s", all[len(all)-1].data)
	}
	next, last := 0, uint64(0)
	for _, f := range all {
		if strings.Contains(f.data, subagentstream.EventReplayGap) {
			t.Fatalf("the resume has a gap: %s", f.data)
		}
		if f.id != 0 {
			if f.id <= last {
				t.Fatalf("frame id %d after %d: a frame came twice or out of order", f.id, last)
			}
			last = f.id
		}
		if text, ok := statusText(f); ok {
			if text != fmt.Sprint("update ", next) {
				t.Fatalf("status %q where \"update %d\" was due: lost, duplicated or reordered", text, next)
			}
			next++
		}
	}
	if next != n {
		t.Fatalf("%d of %d updates reached the client", next, n)
	}
}

// httpChunked reads an HTTP/1.1 chunked body from br (what a client does
// below the SSE parser); it stops at the last chunk or at the connection's
// end, whichever comes first.
func httpChunked(br *bufio.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			size, err := strconv.ParseUint(strings.TrimSpace(line), 16, 64)
			if err != nil || size == 0 {
				pw.CloseWithError(io.EOF)
				return
			}
			if _, err := io.CopyN(pw, br, int64(size)); err != nil {
				pw.CloseWithError(err)
				return
			}
			if _, err := br.ReadString('\n'); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

// BenchmarkStalledClientHeap measures the host's heap with the default
// bounds while a client that stopped reading follows a run whose remote
// sends 100,000 status updates: what the replay log keeps (trimmed at its
// bounds) plus what the cut client's subscriber held (nothing once cut).
// Reported as heap-MiB (after a GC, before the run ends).
func BenchmarkStalledClientHeap(b *testing.B) {
	const n = 100_000
	for b.Loop() {
		bus := delegation.NewMemoryBus()
		hub := subagentstream.NewHub(bus, subagentstream.HubOptions{})
		a := &shellParent{dir: b.TempDir()}
		h := startParentB(b, a, a.script(P{Kind: agentadaptor.KindToolCallStart, ToolCallID: "toolu_1", ToolName: "delegate_to_agent"}, "wait:go"))
		st := hub.Start(h, "th", "run-b")
		mux := http.NewServeMux()
		mux.Handle("/agui/runs/{runId}/events", hub.EventsHandler())
		srv := httptest.NewUnstartedServer(mux)
		srv.Listener = smallBufListener{Listener: srv.Listener}
		srv.Start()
		conn := dialTinyReceiveBuffer(b, srv.Listener.Addr().String())
		fmt.Fprintf(conn, "GET /agui/runs/run-b/events HTTP/1.1\r\nHost: %s\r\n\r\n", srv.Listener.Addr())
		for len(st.Attached()) == 0 {
			time.Sleep(time.Millisecond)
		}
		p := newPub(bus, h.RunID(), "del-1", "toolu_1")
		p.send(delegation.DelegationStarted)
		for i := range n {
			p.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status, e.Text = "working", fmt.Sprint("update ", i) })
		}
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		a.releaseB(b, "go")
		<-st.Done()
		conn.Close()
		srv.CloseClientConnections()
		srv.Close()
		hub.Close()
	}
}
