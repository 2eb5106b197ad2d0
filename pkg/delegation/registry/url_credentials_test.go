package registry_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// A spec whose agent card or endpoint URL carries userinfo is refused, with
// or without a password: a token in the user part of a URL is a credential
// all the same, and credentials go by auth reference only
// (docs/design.md#secrets, "Auth references, never secrets";
// docs/design.md#remote-agent-specs). The error names the field, tells the
// host to use auth_ref, and never repeats the credential.
func TestRegistryRefusesCredentialsInURLs(t *testing.T) {
	const token = "sk-live-0123456789"
	for _, tc := range []struct {
		name, field string
		spec        func() registry.RemoteAgentSpec
	}{
		{"card URL, user and password", "agent_card_url", func() registry.RemoteAgentSpec {
			s := baseSpec("k")
			s.AgentCardURL = "http://user:" + token + "@127.0.0.1:1/.well-known/agent-card.json"
			return s
		}},
		{"card URL, token as user", "agent_card_url", func() registry.RemoteAgentSpec {
			s := baseSpec("k")
			s.AgentCardURL = "https://" + token + "@127.0.0.1:1/.well-known/agent-card.json"
			return s
		}},
		{"card URL, empty password", "agent_card_url", func() registry.RemoteAgentSpec {
			s := baseSpec("k")
			s.AgentCardURL = "https://" + token + ":@127.0.0.1:1/.well-known/agent-card.json"
			return s
		}},
		{"A2A endpoint URL, token as user", "endpoint_url", func() registry.RemoteAgentSpec {
			s := baseSpec("k")
			s.EndpointURL = "http://" + token + "@127.0.0.1:1/a2a"
			return s
		}},
		{"AG-UI endpoint URL, token as user", "endpoint_url", func() registry.RemoteAgentSpec {
			return registry.RemoteAgentSpec{Key: "k", Protocol: delegation.ProtocolAGUI, EndpointURL: "http://" + token + "@127.0.0.1:1/agui"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newRegistry(tc.spec())
			var re *registry.Error
			if !errors.As(err, &re) || re.Field != tc.field {
				t.Fatalf("err = %v, want a registry error on %s", err, tc.field)
			}
			if !strings.Contains(err.Error(), "auth_ref") {
				t.Errorf("error %q does not point to auth_ref", err)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error %q repeats the credential", err)
			}
		})
	}
	// The same URLs without userinfo are accepted.
	ok := baseSpec("k")
	ok.EndpointURL = "http://127.0.0.1:1/a2a"
	agui := registry.RemoteAgentSpec{Key: "g", Protocol: delegation.ProtocolAGUI, EndpointURL: "http://127.0.0.1:1/agui"}
	if _, err := newRegistry(ok, agui); err != nil {
		t.Fatalf("URLs without userinfo refused: %v", err)
	}
}
