// Package mcptool exposes the delegator to local agent CLIs as MCP tools:
// delegate_to_agent (agent key, objective, optional input and constraints,
// or continue{delegation_id} to answer a question a delegation returned)
// and the registry's named shortcuts, on a streamable-HTTP MCP endpoint
// (official MCP Go SDK) that listens on loopback only and accepts only the
// live per-run bearer tokens it hands out (docs/design.md#tool-contract,
// docs/design.md#run-scoped-mcp-context).
//
// It owns the tool schema and the strict decoding of tool arguments (keys,
// never URLs or credentials), the structured tool result, MCP progress
// notifications (host-written status lines only, never remote text), the
// parent tool call id read from the request's _meta (strong correlation),
// and the agentadaptor.RuntimeServiceManager that injects the endpoint into
// each run, revokes the run's token when the run ends and cancels its
// delegations. It must not run delegations itself (the delegator does), and
// must never put a token in a tool result, an event or a log line.
//
//	srv, err := mcptool.New(mcptool.Config{Delegator: d})
//	if err != nil {
//		return err
//	}
//	defer srv.Close()
//	sdk, _ := agentadaptor.New(agentadaptor.WithAdapters(claude),
//		agentadaptor.WithRunDefaults(agentadaptor.WithRuntimeServices(srv.RuntimeService())))
//	// Each run now has mcp__a2a-delegation__delegate_to_agent.
package mcptool
