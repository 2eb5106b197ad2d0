// Package delegator runs delegations: a [Delegator] takes a [Request] (the
// delegate_to_agent tool call of a parent run), reaches the remote agent
// through the registry and its protocol's remote.Task, publishes the
// remote's progress as delegation events on the bus, records the audit,
// stores the remote's artifacts, and returns the structured
// delegation.Result the parent model sees (docs/design.md#tool-contract).
//
// It owns a delegation's lifecycle: the one subagent.started and the one
// terminal event, input-required answers (from the UI with AnswerInput and
// InputHandler, or from the parent by continuing a parked delegation,
// Request.Continue), recovery of cut streams, the host timeout, the
// cancellation cascade and the cleanup watchers that keep cancelling a
// remote task whose cancellation was not confirmed
// (docs/design.md#cancellation), the parent runs (BeginRun, CancelRun,
// EndRun), the sticky remote contexts (ContextStore), the correlation of
// delegations with parent tool calls ([Correlator]), the mapping of client
// errors to failure codes ([FailureOf]), and the scrubbing of the host's
// secrets from every event, result, audit record and log line it writes
// (docs/design.md#secrets). EndOrphan ends a delegation whose process died
// (docs/design.md#scale-out).
//
// Inside, one active delegation is three parts, each with one owner: its
// lifecycle (the remote task, the transcript, the result), owned by the
// goroutine of the tool call that follows it; its publisher (the way of
// its events to the bus, the audit and the call's progress hook), behind
// its own mutex; and what it accepts from outside its call (an answer, a
// continuing call), guarded by the Delegator's mutex. Cleanup and park
// watchers are goroutines of the Delegator, stopped and waited for by
// Close.
//
// It must not import a protocol SDK (A2A, AG-UI, MCP) or a connector
// (a2aremote, aguiremote): protocols reach it only through
// pkg/delegation/remote, and the MCP tool (pkg/delegation/mcptool) calls
// it, never the reverse. It renders nothing for the UI (the subagent
// stream mux reads its events from the bus), and it never routes work on
// its own: it delegates only what a tool call asks for, to agents of the
// host's registry.
package delegator
