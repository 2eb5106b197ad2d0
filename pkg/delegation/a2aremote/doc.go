// Package a2aremote delegates to remote A2A agents: it is the
// remote.Connector for the A2A protocol, built on pkg/clients/a2a.
//
// It owns the A2A side of a delegation: the agent card (fetched, checked
// and fingerprinted by the client; read conservatively for capabilities),
// the task message (the delegated text, host artifacts as parts, other
// artifacts as references), streaming with message/stream or, for agents
// that do not stream, a non-blocking send followed by GetTask polling with
// backoff (no invented text deltas), recovery of a cut stream (resubscribe,
// then get), follow-up messages to an input-required task, and CancelTask
// with structured metadata. It maps A2A events onto the delegation's
// remote.Transcript (docs/design.md#event-mapping): status updates,
// assistant-output artifacts as streamed text (the task's output, with the
// other text artifacts), the agent-adaptor-result
// artifact as the summary, other artifacts stored by reference, one
// terminal event.
//
// It must not publish to the bus, record audit or decide policy (the
// delegator does), and must not show remote ids or text unscrubbed.
//
//	reg, _ := registry.New(registry.Options{Connectors: []remote.Connector{
//		a2aremote.New(a2aremote.Options{}),
//	}}, registry.RemoteAgentSpec{Key: "research", Protocol: delegation.ProtocolA2A,
//		AgentCardURL: "http://127.0.0.1:9001/.well-known/agent-card.json"})
package a2aremote
