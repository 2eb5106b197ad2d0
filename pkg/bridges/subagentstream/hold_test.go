package subagentstream_test

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// The subagent ends before the parent sees its result
// (docs/design.md#guarantees 3, docs/design.md#how-the-mux-orders-a-run):
// a TOOL_CALL_RESULT of a delegating tool call that reaches the mux while
// its delegation is still open is held until the delegation's terminal
// event, and everything the parent emits after it waits behind it, while
// the delegation's own events keep flowing.
//
// It holds whichever way the merge reads the bus's queue: inline (the
// publisher merges while nothing is held) or direct.
func TestToolResultHeldWhileItsDelegationIsOpen(t *testing.T) {
	for _, r := range busReaders() {
		t.Run(r.name, func(t *testing.T) { testToolResultHeldWhileItsDelegationIsOpen(t, r.bus()) })
	}
}

func testToolResultHeldWhileItsDelegationIsOpen(t *testing.T, bus delegation.EventBus) {
	defer goleak.VerifyNone(t)
	// The hold must end on the terminal event, never on its timeout.
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{Stream: subagentstream.Options{HoldTimeout: time.Hour}})
	defer hub.Close()
	a := &shellParent{dir: t.TempDir()}
	h := startParent(t, a, a.script(
		P{Kind: agentadaptor.KindToolCallStart, ToolCallID: "toolu_1", ToolName: "delegate_to_agent"},
		"wait:result",
		P{Kind: agentadaptor.KindToolCallResult, ToolCallID: "toolu_1", ToolResult: `{"status":"completed"}`},
		P{Kind: agentadaptor.KindTextStart, MessageID: "m2"},
		P{Kind: agentadaptor.KindTextDelta, MessageID: "m2", Delta: "Done."},
		P{Kind: agentadaptor.KindTextEnd, MessageID: "m2"},
	))
	st := hub.Start(h, "thread-1", "run-hold")
	sub, err := st.Subscribe(0)
	if err != nil {
		t.Fatal(err)
	}
	frames := readUntil(t, sub, isType("TOOL_CALL_START(delegate_to_agent)"))
	p := newPub(bus, h.RunID(), "del-1", "toolu_1")
	p.send(delegation.DelegationStarted)
	p.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status = "working" })
	frames = append(frames, readUntil(t, sub, isType("CUSTOM(subagent.status)"))...)

	// The parent gets its tool result early (a CLI that answers before the
	// host published the terminal event). TOOL_CALL_END comes from the same
	// payload as TOOL_CALL_RESULT and is emitted just before it, so once it
	// is out the mux holds the result.
	a.release(t, "result")
	frames = append(frames, readUntil(t, sub, isType("TOOL_CALL_END"))...)
	p.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status = "step 2" })
	frames = append(frames, readUntil(t, sub, func(f *subagentstream.Frame) bool {
		return label(f) == "CUSTOM(subagent.status)" && value(f)["status"] == "step 2"
	})...)
	p.send(delegation.DelegationFinished, func(e *delegation.DelegationEvent) { e.Status = "completed" })
	frames = append(frames, readAll(t, sub)...)

	got := strings.Join(labels(frames), ",")
	want := "RUN_STARTED,TOOL_CALL_START(delegate_to_agent),CUSTOM(subagent.started),CUSTOM(subagent.status),TOOL_CALL_END," +
		"CUSTOM(subagent.status),CUSTOM(subagent.finished),TOOL_CALL_RESULT,TEXT_MESSAGE_START,TEXT_MESSAGE_CONTENT,TEXT_MESSAGE_END,RUN_FINISHED"
	if got != want {
		t.Fatalf("order:\n got  %s\n want %s", got, want)
	}
	for i := 1; i < len(frames); i++ {
		if frames[i].ID <= frames[i-1].ID {
			t.Fatalf("cursor not strictly increasing at frame %d: %d after %d", i, frames[i].ID, frames[i-1].ID)
		}
	}
	verify(t, frames)
}
