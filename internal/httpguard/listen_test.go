package httpguard_test

import (
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/seed0634/agentadaptor/internal/httpguard"
	"github.com/seed0634/agentadaptor/internal/testkit/conntest"
)

// counting records how many accepted connections are open at once.
type counting struct {
	net.Listener
	mu        sync.Mutex
	open, max int
}

func (l *counting) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.open++
	l.max = max(l.max, l.open)
	l.mu.Unlock()
	return &countedConn{Conn: c, l: l}, nil
}

type countedConn struct {
	net.Conn
	l    *counting
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.mu.Lock(); c.l.open--; c.l.mu.Unlock() })
	return c.Conn.Close()
}

// Beyond the bound a connection waits to be accepted until another closes:
// never more than n are open in the server.
func TestLimitListener(t *testing.T) {
	base, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	inner := &counting{Listener: base}
	const n = 3
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(httpguard.LimitListener(inner, n)) }()
	t.Cleanup(func() { srv.Close(); <-done })
	conntest.CheckLimit(t, base.Addr().String(), n, "/")
	inner.mu.Lock()
	defer inner.mu.Unlock()
	if inner.max != n {
		t.Fatalf("%d connections were open at once, bound %d", inner.max, n)
	}
}
