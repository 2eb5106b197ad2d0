// Package host is the delegation host as a library: a local agent CLI
// (Claude Code, Codex, any ACP agent...) behind an AG-UI chat endpoint,
// able to delegate tasks to host-curated remote agents (A2A, AG-UI) whose
// live progress streams, nested, in the chat's one event stream
// (docs/design.md#overview). It is what `agentadaptor serve` runs; embed it
// in your own Go server to serve the same routes beside yours.
//
// Build a [Host] from a [Config] (the parent adapter, the remote agents as
// registry.RemoteAgentSpec, tokens or your own [Authenticator], limits, a
// cluster), mount [Host.Handler] in your mux, under any prefix, and stop it
// with [Host.Shutdown]:
//
//	parent, err := claude.New(claude.Config{})
//	if err != nil {
//		return err
//	}
//	h, err := host.New(ctx, host.Config{
//		Parent: parent,
//		Agents: []registry.RemoteAgentSpec{{Key: "research", Protocol: "a2a",
//			AgentCardURL: "https://agents.example/research/.well-known/agent-card.json"}},
//		Authenticator: host.AuthenticatorFunc(myAuth),
//	})
//	if err != nil {
//		return err
//	}
//	defer h.Shutdown(context.Background())
//	mux.Handle("/agents/", http.StripPrefix("/agents", h.Handler()))
//
// The host runs one listener of its own: the delegation MCP endpoint, on a
// loopback port, which only its parent runs reach, each with a bearer token
// valid for the run. Everything else is served by Handler; [Host.Serve]
// serves it on a listener of yours with the host's timeouts and connection
// bound.
//
// The package owns the host's routes, its admission (the Host allowlist,
// cross-origin protection, authentication, the ownership of runs by
// principal), the names of ids in what users read (run_id is the AG-UI
// runId of a run's stream; sdk_run_id the SDK's id) and the shutdown
// order. The behaviour behind each route belongs to the packages it wires:
// pkg/bridges/sse (the chat endpoint), pkg/bridges/subagentstream (the
// stream and its replay), pkg/delegation/... (the registry, the delegator,
// the MCP tool, audit and artifacts). It must not read a configuration
// file (internal/hostyaml does, for serve), set process-wide state (but
// through [NewTracing], which says so) or show a secret: tokens and auth
// references never reach a log, an event, a response or an error.
package host
