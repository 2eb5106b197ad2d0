package subagentstream

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// A delegation whose events name no parent tool call and that is shown
// before the parent's delegating call (medium correlation: the MCP request
// carried no tool call id) waits unclaimed under the run; the next
// delegating call claims it, a correlated status announces the pairing, and
// its later events carry the call, whose result waits for its terminal
// event (docs/design.md#correlation).
func TestMediumCorrelationClaimsDelegationCalls(t *testing.T) {
	s := testStream(Options{})
	ev := func(k delegation.DelegationEventKind) delegation.DelegationEvent {
		return delegation.DelegationEvent{RunID: "sdk-run-1", DelegationID: "del-1", AgentKey: "research", Protocol: "a2a", Kind: k, Time: testEpoch}
	}
	s.onParent(events.NewRunStartedEvent("th-1", "run-1"))
	s.onDelegation(ev(delegation.DelegationStarted))
	s.onParent(events.NewToolCallStartEvent("toolu_1", "delegate_to_agent"))
	s.onParent(events.NewToolCallEndEvent("toolu_1"))
	s.onParent(events.NewToolCallResultEvent("result-1", "toolu_1", "done")) // held: del-1 is open
	s.onDelegation(ev(delegation.DelegationFinished))
	s.release(false)
	s.onParent(events.NewRunFinishedEvent("th-1", "run-1"))
	got := pairingView(t, s.log)
	want := "RUN_STARTED subagent.started TOOL_CALL_START subagent.status(correlated)@toolu_1 TOOL_CALL_END subagent.finished@toolu_1 TOOL_CALL_RESULT RUN_FINISHED"
	if strings.Join(got, " ") != want {
		t.Fatalf("frames\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// pairingView lists the frames of a log as type, or CUSTOM name with
// (status) and @parentToolCallId, and the delegation when del is set.
func pairingView(t *testing.T, log []*Frame, del ...bool) []string {
	t.Helper()
	var got []string
	for _, f := range log {
		var e struct {
			Type  string         `json:"type"`
			Name  string         `json:"name"`
			Value map[string]any `json:"value"`
		}
		if err := json.Unmarshal(f.Data, &e); err != nil {
			t.Fatal(err)
		}
		item := e.Type
		if e.Name != "" {
			item = e.Name
			if len(del) > 0 {
				item = e.Value["delegationId"].(string) + ":" + item
			}
			if st, _ := e.Value["status"].(string); st != "" {
				item += "(" + st + ")"
			}
			if p, _ := e.Value["parentToolCallId"].(string); p != "" {
				item += "@" + p
			}
		}
		got = append(got, item)
	}
	return got
}

// A tool call that continues a parked delegation (its input_provided
// status names the call in raw.continue_tool_call_id, here before the
// parent's stream shows the call) is not paired with a delegation waiting
// for its call: that one keeps waiting for the next delegating call
// (docs/design.md#how-the-mux-orders-a-run).
func TestContinuingCallIsNotPairedWithAnotherDelegation(t *testing.T) {
	s := testStream(Options{})
	ev := func(del string, k delegation.DelegationEventKind, parent, status string) delegation.DelegationEvent {
		e := delegation.DelegationEvent{RunID: "sdk-run-1", DelegationID: del, ParentToolCallID: parent, AgentKey: "research", Protocol: "a2a", Kind: k, Status: status, Time: testEpoch}
		if status == delegation.StatusInputProvided {
			e.Raw = map[string]any{"continue_tool_call_id": "toolu_2"}
		}
		return e
	}
	s.onParent(events.NewRunStartedEvent("th-1", "run-1"))
	s.onParent(events.NewToolCallStartEvent("toolu_1", "delegate_to_agent"))
	s.onDelegation(ev("del-1", delegation.DelegationStarted, "toolu_1", ""))
	s.onDelegation(ev("del-1", delegation.DelegationStatus, "toolu_1", delegation.StatusInputReturned))
	s.onParent(events.NewToolCallResultEvent("result-1", "toolu_1", "input_required"))
	s.onDelegation(ev("del-2", delegation.DelegationStarted, "", "")) // its call not seen yet
	s.onDelegation(ev("del-1", delegation.DelegationStatus, "toolu_1", delegation.StatusInputProvided))
	s.onParent(events.NewToolCallStartEvent("toolu_2", "delegate_to_agent")) // continues del-1
	s.onParent(events.NewToolCallStartEvent("toolu_3", "delegate_to_agent")) // del-2's
	got := strings.Join(pairingView(t, s.log, true), " ")
	want := "RUN_STARTED TOOL_CALL_START del-1:subagent.started@toolu_1 del-1:subagent.status(input_returned)@toolu_1 TOOL_CALL_RESULT " +
		"del-2:subagent.started del-1:subagent.status(input_provided)@toolu_1 TOOL_CALL_START TOOL_CALL_START del-2:subagent.status(correlated)@toolu_3"
	if got != want {
		t.Fatalf("frames\n got %s\nwant %s", got, want)
	}
}
