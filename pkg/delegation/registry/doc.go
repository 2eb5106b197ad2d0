// Package registry is the host-curated set of remote agents a delegation
// may reach (docs/design.md#registry-and-policy): their specs (key,
// host-written name and description, protocol, card or endpoint URL, auth
// reference, tenant, shortcut tool), each agent's [DelegationPolicy]
// (timeouts, artifact limits, concurrency, input-required handling, audit
// level, context policy), and the clamping of a model's constraints to it.
//
// It owns spec validation (only host-written specs, http(s) URLs without
// user info, auth references instead of secrets), the connection of each
// agent through its protocol's remote.Connector (once, shared by
// concurrent callers; cards marked fetch_card: startup in [Registry.Load]),
// the per-agent concurrency slots, and the set of secrets behind the auth
// references that everything the host shows is scrubbed of. It must not
// accept anything from a model but a key, must not copy card text into
// anything a model sees, and must not run delegations (the delegator does).
//
//	reg, err := registry.New(registry.Options{Connectors: []remote.Connector{a2aremote.New(a2aremote.Options{})}},
//		registry.RemoteAgentSpec{Key: "research", DisplayName: "Research Agent", Protocol: delegation.ProtocolA2A,
//			AgentCardURL: "http://127.0.0.1:9001/.well-known/agent-card.json", AuthRef: "env:RESEARCH_TOKEN",
//			Policy: registry.DefaultPolicy()})
//	if err != nil {
//		return err // names the agent, the field and why
//	}
//	defer reg.Close()
package registry
