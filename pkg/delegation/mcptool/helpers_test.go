package mcptool_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	"github.com/seed0634/agentadaptor/pkg/delegation/mcptool"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

func TestMain(m *testing.M) {
	scripted.MaybeRunAgent()
	goleak.VerifyTestMain(m, dt.LeakOptions()...)
}

// mcpEnv is a delegator over fake remotes with its MCP server.
type mcpEnv struct {
	*env.Env
	srv *mcptool.Server
}

// newEnv builds an mcpEnv for specs; both are closed when the test ends
// (the MCP server first).
func newEnv(t *testing.T, specs []registry.RemoteAgentSpec, mod ...func(*env.Config)) *mcpEnv {
	t.Helper()
	return newEnvWith(t, specs, mcptool.Config{ProgressInterval: 10 * time.Millisecond}, mod...)
}

// newEnvWith is newEnv with the MCP server's configuration cfg (its
// Delegator is set here).
func newEnvWith(t *testing.T, specs []registry.RemoteAgentSpec, cfg mcptool.Config, mod ...func(*env.Config)) *mcpEnv {
	t.Helper()
	e := env.NewEnv(t, specs, mod...)
	cfg.Delegator = e.D
	srv, err := mcptool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &mcpEnv{Env: e, srv: srv}
}
