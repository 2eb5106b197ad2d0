package httpguard_test

import (
	"net"
	"net/http"
	"sync"
	"syscall"
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

// A bounded listener's connections keep the accepted connection's raw
// descriptor (syscall.Conn), which a hijacked response writes through
// without blocking; closing one gives its slot back.
func TestLimitListenerKeepsSyscallConn(t *testing.T) {
	base, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := httpguard.LimitListener(base, 1)
	defer ln.Close()
	for range 2 { // the second Accept needs the first connection's slot back
		client, err := net.Dial("tcp", base.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		sc, ok := c.(syscall.Conn)
		if !ok {
			t.Fatalf("%T does not implement syscall.Conn", c)
		}
		if _, err := sc.SyscallConn(); err != nil {
			t.Fatal(err)
		}
		c.Close()
		client.Close()
	}
}
