package subagentstream_test

import (
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"go.uber.org/goleak"
)

// TestParkedDelegationContinuedByAnotherToolCall: with the input_required
// policy "return" (docs/design.md#tool-contract) the delegating tool call
// returns while its delegation waits, parked, without a terminal event; a
// later tool call continues the same delegation. The first call's result
// is not held for the parked subagent; the continuing call's result waits
// for the subagent's one terminal event like a delegating call's; the
// continuing call is not paired with a new delegation; the stream stays
// valid AG-UI with one subagent and one terminal.
func TestParkedDelegationContinuedByAnotherToolCall(t *testing.T) {
	defer goleak.VerifyNone(t)
	bus := delegation.NewMemoryBus()
	// A held result would wait 10 minutes: the test would time out.
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{Stream: subagentstream.Options{HoldTimeout: 10 * time.Minute}})
	defer hub.Close()
	a := &shellParent{dir: t.TempDir()}
	h := startParent(t, a, a.script(
		P{Kind: agentadaptor.KindToolCallStart, ToolCallID: "toolu_1", ToolName: "mcp__a2a-delegation__delegate_to_agent"},
		"wait:parked",
		P{Kind: agentadaptor.KindToolCallResult, ToolCallID: "toolu_1", ToolResult: `{"status":"input_required"}`},
		"wait:continued",
		P{Kind: agentadaptor.KindToolCallStart, ToolCallID: "toolu_2", ToolName: "mcp__a2a-delegation__delegate_to_agent"},
		P{Kind: agentadaptor.KindToolCallResult, ToolCallID: "toolu_2", ToolResult: `{"status":"completed"}`},
		P{Kind: agentadaptor.KindTextStart, MessageID: "m2"},
		P{Kind: agentadaptor.KindTextDelta, MessageID: "m2", Delta: "Done."},
		P{Kind: agentadaptor.KindTextEnd, MessageID: "m2"},
	))
	st := hub.Start(h, "thread-1", "run-parked")
	sub, err := st.Subscribe(0)
	if err != nil {
		t.Fatal(err)
	}
	readUntil(t, sub, isType("TOOL_CALL_START(mcp__a2a-delegation__delegate_to_agent)"))
	p := newPub(bus, h.RunID(), "del-1", "toolu_1")
	p.send(delegation.DelegationStarted)
	p.send(delegation.DelegationInputRequired, func(e *delegation.DelegationEvent) { e.Status, e.Text = "input-required", "Which year?" })
	p.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status = delegation.StatusInputReturned })
	readUntil(t, sub, func(f *subagentstream.Frame) bool {
		return label(f) == "CUSTOM(subagent.status)" && value(f)["status"] == delegation.StatusInputReturned
	})
	a.release(t, "parked")
	readUntil(t, sub, isType("TOOL_CALL_RESULT"))

	// The continuing call names itself in the input_provided status.
	p.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) {
		e.Status, e.Raw = delegation.StatusInputProvided, map[string]any{"continue_tool_call_id": "toolu_2"}
	})
	readUntil(t, sub, func(f *subagentstream.Frame) bool {
		return label(f) == "CUSTOM(subagent.status)" && value(f)["status"] == delegation.StatusInputProvided
	})
	a.release(t, "continued")
	readUntil(t, sub, func(f *subagentstream.Frame) bool {
		return label(f) == "TOOL_CALL_START(mcp__a2a-delegation__delegate_to_agent)"
	})
	p.send(delegation.DelegationTextStart, msg("rm-1"))
	p.send(delegation.DelegationTextDelta, delta("rm-1", "Report for 2024."))
	p.send(delegation.DelegationTextEnd, msg("rm-1"))
	p.send(delegation.DelegationFinished, func(e *delegation.DelegationEvent) { e.Status = "completed" })

	all, err := st.Subscribe(0)
	if err != nil {
		t.Fatal(err)
	}
	frames := readAll(t, all)
	fin, res2 := findLabel(frames, "CUSTOM(subagent.finished)"), -1
	for i, f := range frames {
		if f.Type == "TOOL_CALL_RESULT" {
			res2 = i // the last one: the continuing call's
		}
	}
	if fin < 0 || res2 < fin {
		t.Fatalf("the continuing call's result must follow the subagent's terminal: %v", labels(frames))
	}
	starts, terminals := 0, 0
	for _, f := range frames {
		switch label(f) {
		case "CUSTOM(subagent.started)":
			starts++
		case "CUSTOM(subagent.finished)", "CUSTOM(subagent.failed)", "CUSTOM(subagent.cancelled)":
			terminals++
		}
		if v := value(f); f.Type == "CUSTOM" && v["delegationId"] == "del-1" && v["parentToolCallId"] != "toolu_1" {
			t.Errorf("the continued subagent left its tool call: %v", v)
		}
	}
	if starts != 1 || terminals != 1 {
		t.Errorf("%d started, %d terminal events: %v", starts, terminals, labels(frames))
	}
	assertSpecVerifier(t, frames)
	verify(t, frames)
}
