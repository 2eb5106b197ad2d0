// Package natstest runs a real NATS server with JetStream (file storage
// in a directory) inside the test process, for the cluster tests and the
// end-to-end benchmark. The server runs the configuration the README ships
// (nats-server.conf, embedded: a user authenticated by nkey whose
// permissions are limited to what the replicas use), so the tests prove
// that configuration works; the replicas connect with the seed written to
// the storage directory (CredsRef). Test support only: nothing in the
// product imports it, and the product binary never embeds a NATS server.
package natstest

import (
	_ "embed"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// Config is the nats-server configuration the README ships (section
// "Running several replicas"); the server runs it with its listen address,
// store_dir and nkey replaced by the test's.
//
//go:embed nats-server.conf
var Config string

// The values of Config that a test server replaces.
const (
	configListen   = "127.0.0.1:4222"
	configStoreDir = "/var/lib/nats"
	configNkey     = "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NVCNF4"
)

// Server is an embedded nats-server with JetStream.
type Server struct {
	dir    string
	port   int
	noAuth bool
	seed   string // the replicas' user seed (empty without auth)

	mu sync.Mutex
	s  *server.Server
}

// Start starts a server with the README's configuration, storing JetStream
// under dir, on a free loopback port.
func Start(dir string) (*Server, error) { return start(dir, false) }

// StartNoAuth starts a server without authentication (for tests of what
// a replica without credentials does).
func StartNoAuth(dir string) (*Server, error) { return start(dir, true) }

func start(dir string, noAuth bool) (*Server, error) {
	ns := &Server{dir: dir, port: -1, noAuth: noAuth}
	if !noAuth {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return nil, fmt.Errorf("natstest: %w", err)
		}
		seed, _ := kp.Seed()
		ns.seed = string(seed)
		if err := os.WriteFile(ns.seedPath(), seed, 0o600); err != nil {
			return nil, fmt.Errorf("natstest: %w", err)
		}
	}
	if err := ns.start(); err != nil {
		return nil, err
	}
	return ns, nil
}

// New starts a server for t (the README's configuration), stopped when t
// ends.
func New(t testing.TB) *Server {
	t.Helper()
	ns, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Stop)
	return ns
}

// NewNoAuth is New without authentication.
func NewNoAuth(t testing.TB) *Server {
	t.Helper()
	ns, err := StartNoAuth(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Stop)
	return ns
}

func (ns *Server) seedPath() string { return filepath.Join(ns.dir, "agentadaptor.nk") }

// CredsRef is the replicas' cluster.creds_ref ("file:" and the seed's
// path; "" without authentication).
func (ns *Server) CredsRef() string {
	if ns.noAuth {
		return ""
	}
	return "file:" + ns.seedPath()
}

func (ns *Server) options() (*server.Options, error) {
	if ns.noAuth {
		return &server.Options{Host: "127.0.0.1", Port: ns.port, JetStream: true, StoreDir: filepath.Join(ns.dir, "js")}, nil
	}
	kp, err := nkeys.FromSeed([]byte(ns.seed))
	if err != nil {
		return nil, err
	}
	pub, _ := kp.PublicKey()
	conf := strings.NewReplacer(configListen, fmt.Sprintf("127.0.0.1:%d", ns.port), configStoreDir, strconv.Quote(filepath.Join(ns.dir, "js")), configNkey, pub).Replace(Config)
	path := filepath.Join(ns.dir, "nats-server.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	return server.ProcessConfigFile(path)
}

func (ns *Server) start() error {
	opts, err := ns.options()
	if err != nil {
		return fmt.Errorf("natstest: %w", err)
	}
	opts.NoLog, opts.NoSigs, opts.MaxPayload = true, true, 1<<20
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
