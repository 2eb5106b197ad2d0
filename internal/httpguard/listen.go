package httpguard

import (
	"errors"
	"net"
	"sync"
	"syscall"
)

// DefaultMaxConnections is the open-connection bound of every listener
// the host and `a2a serve` run, unless configured (max_connections,
// --max-connections).
const DefaultMaxConnections = 1024

// LimitListener bounds the connections open at once through ln to n (0 or
// less: DefaultMaxConnections). At the bound, Accept waits until one of the
// open connections closes: a further client's connection stays in the
// kernel's accept queue (it may time out there) and is not served, and the
// server's file descriptors stay bounded whatever clients do. Closing the
// listener ends an Accept waiting for a slot.
//
// The connections it returns implement syscall.Conn when the accepted ones
// do (TCP and Unix sockets), so that a hijacked response can write without
// blocking (pkg/bridges/subagentstream); golang.org/x/net/netutil's
// limiter, which this replaces, hides that.
func LimitListener(ln net.Listener, n int) net.Listener {
	if n <= 0 {
		n = DefaultMaxConnections
	}
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	slots     chan struct{} // one element per open connection
	closeOnce sync.Once
	done      chan struct{} // closed by Close
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, l: l}, nil
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// limitedConn gives its slot back when it is closed (once).
type limitedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.l.slots })
	return err
}

// SyscallConn returns the accepted connection's raw connection;
// errors.ErrUnsupported when it has none.
func (c *limitedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}
