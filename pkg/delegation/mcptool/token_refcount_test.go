package mcptool_test

import (
	"context"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// Two live service instances of one run (the run's services ensured
// twice, e.g. the delegation service listed at SDK level and per call):
// releasing the first revokes nothing the second still uses — its token
// keeps opening the endpoint and its tool calls stay bound to the run —
// and releasing the last revokes the token and ends the run
// (docs/design.md#option-a-runtime-backed-mcp-injection).
func TestReleasingOneServiceInstanceKeepsTheOthersToken(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Completed("ok"))
	for _, tt := range []struct {
		name          string
		first, second string
	}{
		{"one run token for both", tokenA, tokenA},
		{"a token each", tokenA, tokenB},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
			ensure := func(token string) agentadaptor.RuntimeService {
				rs, err := e.srv.RuntimeService().Ensure(dt.Ctx(t), agentadaptor.RuntimeServiceRequest{RunID: "run-1", RunToken: token, SessionKey: "chat"})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = rs.Release(context.Background()) })
				return rs
			}
			first, second := ensure(tt.first), ensure(tt.second)
			if err := first.Release(dt.Ctx(t)); err != nil {
				t.Fatal(err)
			}
			c, err := e.connect(t, tt.second)
			if err != nil {
				t.Fatalf("the live instance's token was revoked with the other instance: %v", err)
			}
			_, out := call(t, dt.Ctx(t), c, "delegate_to_agent", map[string]any{"agent": "research", "objective": "x"}, nil)
			if out["status"] != delegation.StatusCompleted {
				t.Fatalf("a call of the live instance: %v", out)
			}
			if tt.first != tt.second {
				if _, err := e.connect(t, tt.first); err == nil {
					t.Error("the released instance's own token still opens the endpoint")
				}
			}
			if err := second.Release(dt.Ctx(t)); err != nil {
				t.Fatal(err)
			}
			if _, err := e.connect(t, tt.second); err == nil {
				t.Error("the token opens the endpoint after the run's last instance was released")
			}
		})
	}
}
