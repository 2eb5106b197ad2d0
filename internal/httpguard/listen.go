package httpguard

import (
	"net"

	"golang.org/x/net/netutil"
)

// DefaultMaxConnections is the open-connection bound of every listener
// the host and `a2a serve` run, unless configured (max_connections,
// --max-connections).
const DefaultMaxConnections = 1024

// LimitListener bounds the connections open at once through ln to n (0 or
// less: DefaultMaxConnections). At the bound, Accept waits until one of the
// open connections closes: a further client's connection stays in the
// kernel's accept queue (it may time out there) and is not served, and the
// server's file descriptors stay bounded whatever clients do
// (golang.org/x/net/netutil.LimitListener).
func LimitListener(ln net.Listener, n int) net.Listener {
	if n <= 0 {
		n = DefaultMaxConnections
	}
	return netutil.LimitListener(ln, n)
}
