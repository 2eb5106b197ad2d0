package host_test

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/hostyaml"
	"github.com/seed0634/agentadaptor/internal/testkit/conntest"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
	"github.com/seed0634/agentadaptor/pkg/delegation/mcptool"
	"github.com/seed0634/agentadaptor/pkg/host"
)

// max_connections bounds every listener of the host: its own (through
// Serve), the delegation MCP endpoint and the demo's research agent. A
// further connection is served only once another closes.
func TestMaxConnectionsOnEveryListener(t *testing.T) {
	h, err := hostyaml.New(context.Background(), &hostconfig.Config{MaxConnections: 2}, hostyaml.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, ln) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = h.Shutdown(sctx)
	}()
	t.Run("serve", func(t *testing.T) { conntest.CheckLimit(t, ln.Addr().String(), 2, "/healthz") })
	t.Run("delegation MCP endpoint", func(t *testing.T) {
		u, _ := url.Parse(host.MCPURL(h))
		conntest.CheckLimit(t, u.Host, 2, mcptool.Path)
	})
	t.Run("demo research agent", func(t *testing.T) {
		u, _ := url.Parse(host.Agents(h)[0].AgentCardURL)
		conntest.CheckLimit(t, u.Host, 2, a2abridge.PathAgentCard)
	})
}
