package mcptool_test

import (
	"net/url"
	"testing"

	"github.com/seed0634/agentadaptor/internal/testkit/conntest"
	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation/mcptool"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// The MCP endpoint serves at most MaxConnections connections at once: a
// further one waits until another closes.
func TestMCPEndpointBoundsConnections(t *testing.T) {
	dt.CheckLeaks(t)
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", dt.StreamingFake(t, fakea2a.Completed("ok")))})
	srv, err := mcptool.New(mcptool.Config{Delegator: e.D, MaxConnections: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	u, _ := url.Parse(srv.URL())
	conntest.CheckLimit(t, u.Host, 2, mcptool.Path)
}
