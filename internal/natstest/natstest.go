// Package natstest runs a real NATS server with JetStream (file storage
// in a directory) inside the test process, for the cluster tests and the
// end-to-end benchmark. Test support only: nothing in the product imports
// it, and the product binary never embeds a NATS server.
package natstest

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is an embedded nats-server with JetStream.
type Server struct {
	dir  string
	port int

	mu sync.Mutex
	s  *server.Server
}

// Start starts a server storing JetStream under dir, on a free loopback
// port.
func Start(dir string) (*Server, error) {
	ns := &Server{dir: dir, port: -1}
	if err := ns.start(); err != nil {
		return nil, err
	}
	return ns, nil
}

// New starts a server for t, stopped when t ends.
func New(t testing.TB) *Server {
	t.Helper()
	ns, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Stop)
	return ns
}

func (ns *Server) start() error {
	opts := &server.Options{Host: "127.0.0.1", Port: ns.port, JetStream: true, StoreDir: ns.dir, NoLog: true, NoSigs: true,
		MaxPayload: 1 << 20}
	s, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("natstest: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		s.Shutdown()
		return fmt.Errorf("natstest: the server did not start")
	}
	ns.mu.Lock()
	ns.s = s
	if addr, ok := s.Addr().(*net.TCPAddr); ok {
		ns.port = addr.Port
	}
	ns.mu.Unlock()
	return nil
}

// URL is the server's client URL (the same across Restart).
func (ns *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", ns.port) }

// Stop shuts the server down and waits for it. Stop is idempotent.
func (ns *Server) Stop() {
	ns.mu.Lock()
	s := ns.s
	ns.s = nil
	ns.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// Restart stops the server and starts it again on the same port and
// storage directory (what JetStream stored survives).
func (ns *Server) Restart() error {
	ns.Stop()
	return ns.start()
}
