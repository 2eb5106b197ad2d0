// Package aguiremote delegates to remote AG-UI agents: it is the
// remote.Connector for the AG-UI protocol, built on pkg/clients/agui.
//
// One delegation is one AG-UI thread (the remote context: new per
// delegation, or the one a sticky context policy remembered); each turn is
// one RunAgentInput POST whose user message is the delegated task, whose
// context entries carry the input artifacts, and whose forwardedProps name
// the delegation. Its SSE events are mapped onto the delegation's
// remote.Transcript (docs/design.md#event-mapping): text messages stream as
// subagent.text.*, the remote's inner tool calls, steps and custom events
// become statuses (never tool calls of the parent), agent.artifact customs
// become stored artifacts, a run that finishes with an interrupt pauses for
// input, and the answer is sent as a new run carrying the conversation.
// AG-UI has no cancel call and no resumption: cancelling aborts the
// request, and a cut stream fails the delegation.
//
// It must not publish, record audit or decide policy (the delegator does).
//
//	reg, _ := registry.New(registry.Options{Connectors: []remote.Connector{
//		aguiremote.New(aguiremote.Options{}),
//	}}, registry.RemoteAgentSpec{Key: "writer", Protocol: delegation.ProtocolAGUI,
//		EndpointURL: "http://127.0.0.1:9002/agui"})
package aguiremote
