package subagentstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// printfParent is a stand-in for a parent agent CLI: a /bin/sh child that
// prints the run's StreamPayloads as JSON lines.
type printfParent struct{ payloads []agentadaptor.StreamPayload }

func (printfParent) Name() string { return "printf" }

func (p printfParent) Prepare(context.Context, *agentadaptor.AdapterRequest) (*agentadaptor.Invocation, error) {
	var lines []string
	for _, pl := range p.payloads {
		b, _ := json.Marshal(pl)
		lines = append(lines, "'"+string(b)+"'")
	}
	return &agentadaptor.Invocation{Path: "/bin/sh", Args: []string{"-c", "printf '%s\\n' " + strings.Join(lines, " ")}, Parser: jsonLines{}}, nil
}

type jsonLines struct{}

func (jsonLines) ParseLine(b []byte, emit agentadaptor.Emitter) error {
	var p agentadaptor.StreamPayload
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	emit(p)
	return nil
}

func (jsonLines) Finish(agentadaptor.ExitStatus, agentadaptor.Emitter) agentadaptor.Outcome {
	return agentadaptor.Outcome{}
}

// The mux merges a parent run's events with its delegations' events into
// one AG-UI stream with one cursor: here the delegation events a delegator
// would publish while the parent's tool call blocks are published by hand.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bus := delegation.NewMemoryBus()
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{})
	defer hub.Close()

	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(printfParent{payloads: []agentadaptor.StreamPayload{
		{Kind: agentadaptor.KindTextDelta, MessageID: "msg-1", Delta: "The remote agent says hello."},
	}}))
	if err != nil {
		panic(err)
	}
	h, err := sdk.Start(ctx, "delegate", agentadaptor.WithStreaming())
	if err != nil {
		panic(err)
	}
	for _, ev := range []delegation.DelegationEvent{
		{Kind: delegation.DelegationStarted, Status: "starting"},
		{Kind: delegation.DelegationTextDelta, Delta: "hello", RemoteMessageID: "m1"},
		{Kind: delegation.DelegationFinished, Status: "completed", Text: "hello"},
	} {
		ev.RunID, ev.DelegationID, ev.AgentKey, ev.Protocol = h.RunID(), "del-1", "research", delegation.ProtocolA2A
		bus.Publish(ev)
	}
	st := hub.Start(h, "thread-1", "run-1")
	sub, err := st.Subscribe(0)
	if err != nil {
		panic(err)
	}
	// The parent's events keep their order, and so do the subagent's; how
	// the two interleave depends on when each arrives.
	var parent, subagent []string
	var last uint64
	increasing := true
	for {
		f, err := sub.Next(ctx)
		if err != nil {
			break
		}
		increasing = increasing && f.ID > last
		last = f.ID
		var ev struct{ Name string }
		_ = json.Unmarshal(f.Data, &ev)
		if ev.Name != "" {
			subagent = append(subagent, ev.Name)
		} else {
			parent = append(parent, string(f.Type))
		}
	}
	bus.CloseRun(h.RunID())
	fmt.Println("parent:", strings.Join(parent, " "))
	fmt.Println("subagent:", strings.Join(subagent, " "))
	fmt.Println("one cursor, strictly increasing:", increasing)
	// Output:
	// parent: RUN_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END RUN_FINISHED
	// subagent: subagent.started subagent.text.delta subagent.finished
	// one cursor, strictly increasing: true
}
