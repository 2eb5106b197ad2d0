package delegator_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// scriptedRemote is a remote agent in process: every task answers with a
// fixed text. Real hosts use a2aremote and aguiremote; a Connector is all a
// new protocol needs.
type scriptedRemote struct{ answer string }

func (scriptedRemote) Protocol() string { return delegation.ProtocolA2A }

func (r scriptedRemote) Connect(context.Context, remote.Endpoint) (remote.Agent, error) {
	return r, nil
}

func (scriptedRemote) Info() remote.Info { return remote.Info{Streaming: true} }
func (scriptedRemote) Close() error      { return nil }

func (r scriptedRemote) NewTask(spec remote.TaskSpec) remote.Task {
	return &scriptedTask{spec: spec, answer: r.answer}
}

type scriptedTask struct {
	spec   remote.TaskSpec
	answer string
}

func (t *scriptedTask) Mode() string { return "streaming" }

// Start plays the remote's task: it starts, streams its answer as one text
// message, and completes.
func (t *scriptedTask) Start(context.Context) error {
	tr := t.spec.Transcript
	tr.SetTaskID("task-1")
	tr.SetContextID("ctx-1")
	t.spec.Emit(delegation.DelegationEvent{Kind: delegation.DelegationStarted})
	t.spec.Emit(tr.TextDelta("msg-1", t.answer)...)
	tr.SetState(remote.StateCompleted)
	t.spec.Emit(tr.Finish(delegation.DelegationFinished, nil)...)
	return nil
}

func (t *scriptedTask) Answer(ctx context.Context, _ string) error { return t.Start(ctx) }
func (t *scriptedTask) CanRecover(error) bool                      { return false }
func (t *scriptedTask) Recover(context.Context) error              { return nil }
func (t *scriptedTask) ContextID() string                          { return "ctx-1" }
func (t *scriptedTask) Cancel(context.Context, map[string]any) remote.CancelOutcome {
	return remote.CancelConfirmed
}

// A delegator runs one delegation: the UI side sees its events on the bus
// while Delegate blocks, and the caller (the MCP tool) gets the structured
// result.
func Example() {
	ctx := context.Background()
	reg, err := registry.New(registry.Options{Connectors: []remote.Connector{scriptedRemote{answer: "The API is SendStreamingMessage."}}},
		registry.RemoteAgentSpec{Key: "research", DisplayName: "Research Agent", Protocol: delegation.ProtocolA2A,
			EndpointURL: "http://127.0.0.1:9001/", Policy: registry.DefaultPolicy()})
	if err != nil {
		panic(err)
	}
	d, err := delegator.New(ctx, delegator.Config{Registry: reg})
	if err != nil {
		panic(err)
	}
	defer d.Close(ctx)

	sub := d.Bus().SubscribeRun(ctx, "run-1")
	res := d.Delegate(ctx, delegator.Request{RunID: "run-1", Agent: "research", Objective: "Find the streaming API."})
	d.Bus().CloseRun("run-1")
	for ev := range sub.C {
		fmt.Println(strings.TrimSpace(string(ev.Kind) + " " + ev.Delta))
	}
	fmt.Println(res.Status, res.RemoteTaskID, res.Summary)
	// Output:
	// subagent.started
	// subagent.text.start
	// subagent.text.delta The API is SendStreamingMessage.
	// subagent.text.end
	// subagent.finished
	// completed task-1 The API is SendStreamingMessage.
}
