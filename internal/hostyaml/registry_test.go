package hostyaml

import (
	"testing"

	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/pkg/delegation/a2aremote"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

// The host configuration's input-required settings reach the registry:
// allow_input_required keeps its meaning (host default: surface), and
// policy.input_required wins when set.
func TestRegistrySpecsInputRequired(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		policy hostconfig.Policy
		want   string
	}{
		{hostconfig.Policy{}, registry.InputRequiredSurface},
		{hostconfig.Policy{AllowInputRequired: &no}, registry.InputRequiredFail},
		{hostconfig.Policy{AllowInputRequired: &yes}, registry.InputRequiredSurface},
		{hostconfig.Policy{InputRequired: "return"}, registry.InputRequiredReturn},
		{hostconfig.Policy{InputRequired: "fail"}, registry.InputRequiredFail},
		{hostconfig.Policy{InputRequired: "surface", AllowInputRequired: &yes}, registry.InputRequiredSurface},
	} {
		specs := registrySpecs([]hostconfig.Agent{{Key: "a", Protocol: "a2a", AgentCardURL: "http://127.0.0.1:1/card", Policy: tc.policy}})
		p := specs[0].Policy
		if got := p.InputMode(); got != tc.want || p.Validate() != nil {
			t.Errorf("%+v: mode %q (%v), want %q", tc.policy, got, p.Validate(), tc.want)
		}
	}
}

// An agent's auth block becomes the registry spec's Auth, which the
// registry accepts.
func TestRegistrySpecsAuth(t *testing.T) {
	specs := registrySpecs([]hostconfig.Agent{{Key: "oauth", Protocol: "a2a", AgentCardURL: "https://agents.example/card",
		Auth: &hostconfig.AgentAuth{Scheme: "oauth2", ClientID: "agentadaptor", ClientSecretRef: "env:S", Scopes: []string{"a2a.invoke"}}}})
	a := specs[0].Auth
	if a == nil || a.Scheme != credentials.SchemeOAuth2 || a.ClientID != "agentadaptor" || a.ClientSecretRef != "env:S" || len(a.Scopes) != 1 || specs[0].AuthRef != "" {
		t.Fatalf("auth %+v", a)
	}
	if _, err := registry.New(registry.Options{Connectors: []remote.Connector{a2aremote.New(a2aremote.Options{})}}, specs...); err != nil {
		t.Fatal(err)
	}
}
