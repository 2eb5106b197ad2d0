package subagentstream_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// preamble returns the labels of the id-less frames a resumed stream starts
// with (the re-opening of what was open at the cursor) and the SUBAGENT_*
// frames among them.
func preamble(fs []*subagentstream.Frame) (labels []string, subs []map[string]any) {
	for _, f := range fs {
		if f.ID != 0 {
			break
		}
		labels = append(labels, label(f))
		if strings.HasPrefix(string(f.Type), "SUBAGENT_") {
			var m map[string]any
			_ = json.Unmarshal(f.Data, &m)
			subs = append(subs, m)
		}
	}
	return labels, subs
}

// checkReopensSubagent asserts that a resumed standard-mode stream re-opens
// the delegation del-1 (SUBAGENT_STARTED after the tool call it belongs to,
// with its identity) and validates on its own.
func checkReopensSubagent(t *testing.T, what string, rest []*subagentstream.Frame, wantPreamble string) {
	t.Helper()
	got, subs := preamble(rest)
	if strings.Join(got, ",") != wantPreamble {
		t.Fatalf("%s: re-opening preamble = %s, want %s", what, strings.Join(got, ","), wantPreamble)
	}
	if len(subs) != 1 || subs[0]["type"] != "SUBAGENT_STARTED" || subs[0]["subagentRunId"] != "del-1" ||
		subs[0]["parentToolCallId"] != "toolu_1" || subs[0]["name"] != "Research Agent" {
		t.Fatalf("%s: re-opened subagent %v", what, subs)
	}
	ends := 0
	for _, f := range rest {
		if f.Type == subagentstream.EventSubagentFinished {
			ends++
		}
	}
	if ends != 1 {
		t.Errorf("%s: %d SUBAGENT_FINISHED, want 1: %v", what, ends, labels(rest))
	}
	// AG-UI has no resumption of its own: the resumed stream must validate
	// alone, SUBAGENT_FINISHED included (docs/design.md#replay-and-reconnect).
	verify(t, rest)
}

// In ModeStandard a subagent is a SUBAGENT_STARTED ... SUBAGENT_FINISHED
// pair: a stream resumed while a delegation is open must re-open it, after
// the tool call it is nested in (docs/design.md#replay-and-reconnect).
func TestStandardModeReconnectReopensSubagent(t *testing.T) {
	defer goleak.VerifyNone(t)
	hub, st, a, p := openStream(t, subagentstream.HubOptions{Stream: subagentstream.Options{Mode: subagentstream.ModeStandard}})
	defer hub.Close()
	first, _ := st.Subscribe(0)
	seen := readUntil(t, first, isType("TOOL_CALL_START(delegate_to_agent)"))
	p.send(delegation.DelegationStarted)
	p.send(delegation.DelegationTextStart, msg("rm"))
	p.send(delegation.DelegationTextDelta, delta("rm", "half"))
	seen = append(seen, readUntil(t, first, isType("CUSTOM(subagent.text.delta)"))...)
	if findLabel(seen, string(subagentstream.EventSubagentStarted)) < 0 {
		t.Fatalf("standard mode did not open the subagent: %v", labels(seen))
	}
	first.Close() // the browser goes away inside the subagent
	cursor := seen[len(seen)-1].ID

	resumed, err := st.Subscribe(cursor)
	if err != nil {
		t.Fatal(err)
	}
	p.send(delegation.DelegationTextDelta, delta("rm", " and the rest"))
	p.send(delegation.DelegationTextEnd, msg("rm"))
	p.send(delegation.DelegationFinished)
	a.release(t, "go")
	rest := readAll(t, resumed)
	checkReopensSubagent(t, "resumed inside the replay log", rest, "RUN_STARTED,TEXT_MESSAGE_START,TOOL_CALL_START(delegate_to_agent),SUBAGENT_STARTED")
}

// The same when the frame that opened the subagent was trimmed from the
// replay log: the re-opening comes from the state kept for the log's start,
// both for a cursor inside the log and for one older than it (with the
// replay gap marker).
func TestStandardModeReconnectReopensTrimmedSubagent(t *testing.T) {
	defer goleak.VerifyNone(t)
	const logFrames = 6
	hub, st, a, p := openStream(t, subagentstream.HubOptions{Stream: subagentstream.Options{Mode: subagentstream.ModeStandard, ReplayFrames: logFrames}})
	defer hub.Close()
	live, _ := st.Subscribe(0)
	readUntil(t, live, isType("TOOL_CALL_START(delegate_to_agent)"))
	p.send(delegation.DelegationStarted)
	const steps = 12
	for i := range steps {
		p.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status = fmt.Sprint("step ", i) })
	}
	var all []*subagentstream.Frame
	n := 0
	all = readUntil(t, live, func(f *subagentstream.Frame) bool {
		if label(f) == "CUSTOM(subagent.status)" {
			n++
		}
		return n == steps
	})
	started := findLabel(all, string(subagentstream.EventSubagentStarted))
	last := all[len(all)-1].ID
	if started < 0 || all[started].ID+logFrames >= last {
		t.Fatalf("SUBAGENT_STARTED (frame %v) must have left the %d-frame log ending at %d: %v", started, logFrames, last, labels(all))
	}
	// A cursor inside the log (after the trimmed SUBAGENT_STARTED), and one
	// older than the log.
	inLog, err := st.Subscribe(last - 2)
	if err != nil {
		t.Fatal(err)
	}
	gap, err := st.Subscribe(all[started].ID - 1)
	if err != nil {
		t.Fatal(err)
	}
	p.send(delegation.DelegationFinished)
	a.release(t, "go")
	readAll(t, live)
	checkReopensSubagent(t, "cursor inside the trimmed log", readAll(t, inLog),
		"RUN_STARTED,TEXT_MESSAGE_START,TOOL_CALL_START(delegate_to_agent),SUBAGENT_STARTED")
	checkReopensSubagent(t, "cursor older than the log", readAll(t, gap),
		"RUN_STARTED,TEXT_MESSAGE_START,TOOL_CALL_START(delegate_to_agent),SUBAGENT_STARTED,CUSTOM("+subagentstream.EventReplayGap+")")
}
