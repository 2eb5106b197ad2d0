// Package remote is the seam between the delegator and the remote agent
// protocols. A protocol implements three small interfaces: a [Connector]
// turns a registry [Endpoint] into a connected [Agent] (fetching and
// checking its self-description where the protocol has one), an Agent
// prepares one [Task] per delegation, and a Task starts the remote work,
// follows its events as delegation events, sends a follow-up answer,
// recovers a cut stream and cancels. pkg/delegation/a2aremote and
// pkg/delegation/aguiremote are the two implementations; the delegator
// (pkg/delegation/delegator) knows only this package.
//
// The protocol-neutral state of a delegation lives in the [Transcript] the
// delegator hands to the task: remote ids (secrets scrubbed), the task's
// [State], the assistant messages, the artifacts (sized and stored under
// the host policy), the summary for the parent model, and the single
// terminal event. A protocol maps its wire events onto Transcript calls;
// what the Transcript returns is what gets published, so both protocols
// produce the same subagent.* event family and the same tool result.
//
// A protocol's Task, as the delegator drives it:
//
//	task := agent.NewTask(remote.TaskSpec{DelegationID: id, Text: objective,
//		Transcript: tr, Emit: publish, Stream: true})
//	err := task.Start(ctx)
//	if err != nil && task.CanRecover(err) {
//		err = task.Recover(ctx)
//	}
//	for err == nil && tr.Terminal() == "" && tr.State() == remote.StateInputRequired {
//		err = task.Answer(ctx, <-answers)
//	}
//
// This package must not import a protocol SDK or client, the delegator or
// MCP; it must not publish or log anything itself.
package remote
