// Package conntest is test support: it checks that a server bounds its
// open connections ([CheckLimit], [CheckLimitH2]). Only tests import it.
package conntest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// Window is how long CheckLimit gives a server to serve a connection
// beyond its bound before closing one of the others. It is not a timing
// assertion: with a bound the outcome does not depend on it (the extra
// connection is served only after the close, however long anything takes);
// it only gives a server without one the chance to show it.
const Window = 300 * time.Millisecond

// CheckLimit checks that the server at addr serves at most n connections
// at once: n keep-alive connections each get a response to GET path (and
// stay open), then an n+1th connection's request is not answered until
// one of the n closes, and then it is.
func CheckLimit(t testing.TB, addr string, n int, path string) {
	t.Helper()
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: conntest\r\n\r\n"
	checkLimit(t, addr, n, func(c net.Conn, br *bufio.Reader) (int, error) {
		if _, err := io.WriteString(c, req); err != nil {
			return 0, err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, err
	})
}

// CheckLimitH2 is CheckLimit for a server that speaks only HTTP/2 with
// prior knowledge (a gRPC listener): a connection counts as served once
// the server answers the client's connection preface with its SETTINGS
// frame, which an HTTP/2 server sends first on every connection it
// accepts.
func CheckLimitH2(t testing.TB, addr string, n int) {
	t.Helper()
	// The client preface, then an empty SETTINGS frame (length 0, type 4,
	// flags 0, stream 0).
	preface := "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00"
	checkLimit(t, addr, n, func(c net.Conn, br *bufio.Reader) (int, error) {
		if _, err := io.WriteString(c, preface); err != nil {
			return 0, err
		}
		var head [9]byte
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return 0, err
		}
		if head[3] != 0x4 {
			return 0, fmt.Errorf("the server's first frame is of type %d, not SETTINGS", head[3])
		}
		return http.StatusOK, nil
	})
}

// checkLimit is CheckLimit with exchange as the one exchange that shows a
// connection is served (a status, or an error).
func checkLimit(t testing.TB, addr string, n int, exchange func(net.Conn, *bufio.Reader) (int, error)) {
	t.Helper()
	get := exchange
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(60 * time.Second))
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	var open []net.Conn
	for i := range n {
		c, br := dial()
		if _, err := get(c, br); err != nil {
			t.Fatalf("connection %d of the bound %d was not served: %v", i+1, n, err)
		}
		open = append(open, c)
	}
	extra, br := dial()
	var closed atomic.Bool
	type answer struct {
		status      int
		err         error
		afterClosed bool
	}
	got := make(chan answer, 1)
	go func() {
		status, err := get(extra, br)
		got <- answer{status, err, closed.Load()}
	}()
	select {
	case a := <-got:
		t.Fatalf("connection %d was served (status %d, %v) while %d were open", n+1, a.status, a.err, n)
	case <-time.After(Window):
	}
	closed.Store(true)
	open[0].Close()
	select {
	case a := <-got:
		if a.err != nil || a.status == 0 || !a.afterClosed {
			t.Fatalf("connection %d after one closed: status %d, %v (after the close: %v)", n+1, a.status, a.err, a.afterClosed)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("connection %d was not served after one of the %d closed", n+1, n)
	}
}
