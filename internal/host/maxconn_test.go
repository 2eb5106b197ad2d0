package host

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/testkit/conntest"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
	"github.com/seed0634/agentadaptor/pkg/delegation/mcptool"
)

// max_connections bounds every listener of the host: its own (through
// LimitListener), the delegation MCP endpoint and the demo's research
// agent. A further connection is served only once another closes.
func TestMaxConnectionsOnEveryListener(t *testing.T) {
	h, err := New(context.Background(), &hostconfig.Config{MaxConnections: 2}, Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := h.Server()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(h.LimitListener(ln)) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
		_ = srv.Shutdown(ctx)
		if err := <-done; err != http.ErrServerClosed {
			t.Error(err)
		}
	}()
	t.Run("serve", func(t *testing.T) { conntest.CheckLimit(t, ln.Addr().String(), 2, "/healthz") })
	t.Run("delegation MCP endpoint", func(t *testing.T) {
		u, _ := url.Parse(h.tools.URL())
		conntest.CheckLimit(t, u.Host, 2, mcptool.Path)
	})
	t.Run("demo research agent", func(t *testing.T) {
		u, _ := url.Parse(h.remote.cardURL())
		conntest.CheckLimit(t, u.Host, 2, a2abridge.PathAgentCard)
	})
}
