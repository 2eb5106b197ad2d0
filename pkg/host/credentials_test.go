package host_test

import (
	"context"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/seed0634/agentadaptor/internal/hostyaml"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
)

// A remote that refuses the host's credentials is auth_required, not
// agent_unavailable; and fetch_card: startup proves the credential (one
// authenticated call) when the card declares a security scheme, so a wrong
// token stops the host instead of failing the first delegation.
func TestRemoteThatRefusesOurCredentials(t *testing.T) {
	const good = "remote-token-0123456789abcdef"
	bearer := a2a.NamedSecuritySchemes{"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer"}}
	remote := fakea2a.New(t, fakea2a.Options{Name: "mine", Streaming: true, RequireToken: good, SecuritySchemes: bearer,
		Behavior: fakea2a.Script(fakea2a.Completed("fine"))})

	t.Run("startup check, wrong token", func(t *testing.T) {
		t.Setenv("MY_AGENT_TOKEN", "wrong-token-0123456789abcdef")
		cfg := exampleConfig(t, "own-a2a-agent.yaml") // fetch_card: startup, auth_ref: env:MY_AGENT_TOKEN
		cfg.Agents[0].AgentCardURL = remote.CardURL()
		_, err := hostyaml.New(context.Background(), cfg, hostyaml.Options{StateDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "agents[0] (mine), checked at startup (fetch_card: startup), refused the host's credentials") ||
			strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "wrong-token") {
			t.Fatalf("err = %v", err)
		}
		var checks int
		for _, r := range remote.Requests() {
			if r.Authorization && r.AuthStatus != 0 {
				checks++
			}
		}
		if checks == 0 {
			t.Fatal("no authenticated call was refused: the startup check did not call the agent")
		}
	})
	t.Run("startup check, right token", func(t *testing.T) {
		t.Setenv("MY_AGENT_TOKEN", good)
		cfg := exampleConfig(t, "own-a2a-agent.yaml")
		cfg.Agents[0].AgentCardURL = remote.CardURL()
		newHost(t, cfg)
		if n := len(remote.Tasks()); n != 0 {
			t.Fatalf("the credential check created %d remote tasks", n)
		}
	})
	t.Run("first call, wrong token", func(t *testing.T) {
		t.Setenv("MY_AGENT_TOKEN", "wrong-token-0123456789abcdef")
		cfg := exampleConfig(t, "own-a2a-agent.yaml")
		cfg.Agents[0].AgentCardURL = remote.CardURL()
		cfg.Agents[0].FetchCard = "first_call"
		_, srv := newHost(t, cfg)
		parent, _ := chatTurn(t, srv.URL, "thread-auth", 0, []string{"hello"}, nil)
		if !strings.Contains(parent, "(failed, auth_required): The remote agent refused the host's credentials") {
			t.Fatalf("reply %q", parent)
		}
	})
}
