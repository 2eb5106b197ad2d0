package subagentstream_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite golden files")

type P = agentadaptor.StreamPayload

// happyPath runs the golden happy path (docs/design.md#testing): the parent calls
// delegate_to_agent, the remote streams text and an artifact and finishes,
// then the parent gets the tool result and answers.
func happyPath(t *testing.T, mode subagentstream.Mode, strong bool) []*subagentstream.Frame {
	bus := delegation.NewMemoryBus()
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{Stream: subagentstream.Options{Mode: mode}})
	defer hub.Close()
	a := &shellParent{dir: t.TempDir()}
	h := startParent(t, a, a.script(
		P{Kind: agentadaptor.KindToolCallStart, ToolCallID: "toolu_1", ToolName: "delegate_to_agent"},
		"wait:remote-done",
		P{Kind: agentadaptor.KindToolCallResult, ToolCallID: "toolu_1", ToolResult: `{"status":"completed"}`},
		P{Kind: agentadaptor.KindTextStart, MessageID: "m2"},
		P{Kind: agentadaptor.KindTextDelta, MessageID: "m2", Delta: "The research agent found it."},
		P{Kind: agentadaptor.KindTextEnd, MessageID: "m2"},
	))
	st := hub.Start(h, "thread-1", "run-golden")
	sub, err := st.Subscribe(0)
	if err != nil {
		t.Fatal(err)
	}
	frames := readUntil(t, sub, isType("TOOL_CALL_START(delegate_to_agent)"))
	parent := "toolu_1"
	if !strong {
		parent = ""
	}
	p := newPub(bus, h.RunID(), "del-1", parent)
	p.send(delegation.DelegationStarted)
	p.send(delegation.DelegationTextStart, msg("rm-1"))
	p.send(delegation.DelegationTextDelta, delta("rm-1", "Searching official A2A SDK examples..."))
	p.send(delegation.DelegationArtifactCreated, func(e *delegation.DelegationEvent) {
		e.Artifact = &delegation.DelegationArtifact{ID: "art-1", Name: "a2a-sdk-notes.md", MimeType: "text/markdown", URI: "host://delegations/del-1/artifacts/art-1", SizeBytes: 42}
	})
	p.send(delegation.DelegationTextEnd, msg("rm-1"))
	p.send(delegation.DelegationFinished, func(e *delegation.DelegationEvent) { e.Status = "completed" })
	frames = append(frames, readUntil(t, sub, func(f *subagentstream.Frame) bool {
		return label(f) == "CUSTOM(subagent.finished)" || f.Type == subagentstream.EventSubagentFinished
	})...)
	a.release(t, "remote-done")
	return append(frames, readAll(t, sub)...)
}

func TestGoldenHappyPath(t *testing.T) {
	defer goleak.VerifyNone(t)
	frames := happyPath(t, subagentstream.ModeCustom, true)
	// The golden order, on the events it lists (it elides the parent's
	// TOOL_CALL_ARGS/END, which the AG-UI translation always adds).
	want := []string{
		"RUN_STARTED",
		"TOOL_CALL_START(delegate_to_agent)",
		"CUSTOM(subagent.started)",
		"CUSTOM(subagent.text.start)",
		"CUSTOM(subagent.text.delta)",
		"CUSTOM(subagent.artifact)",
		"CUSTOM(subagent.text.end)",
		"CUSTOM(subagent.finished)",
		"TOOL_CALL_RESULT",
		"TEXT_MESSAGE_START",
		"TEXT_MESSAGE_CONTENT",
		"TEXT_MESSAGE_END",
		"RUN_FINISHED",
	}
	var got []string
	for _, l := range labels(frames) {
		if l != "TOOL_CALL_ARGS" && l != "TOOL_CALL_END" {
			got = append(got, l)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	verify(t, frames)
	assertSpecVerifier(t, frames)
	compareGolden(t, "happy_path.sse", frames)

	v := value(frames[2])
	for _, k := range []string{"runId", "parentToolCallId", "delegationId", "agentKey", "agentName", "protocol", "remoteTaskId", "remoteContextId"} {
		if v[k] == nil || v[k] == "" {
			t.Errorf("subagent.started value lacks %s: %v", k, v)
		}
	}
	if v["runId"] != "run-golden" || v["parentToolCallId"] != "toolu_1" {
		t.Errorf("value ids: %v", v)
	}
	art := value(frames[findLabel(frames, "CUSTOM(subagent.artifact)")])["artifact"].(map[string]any)
	if art["mimeType"] != "text/markdown" || art["uri"] == nil || art["sizeBytes"] != float64(42) {
		t.Errorf("artifact value: %v", art)
	}
}

// assertSpecVerifier applies the verifier assertions of the golden
// transcripts (docs/design.md#guarantees).
func assertSpecVerifier(t *testing.T, frames []*subagentstream.Frame) {
	t.Helper()
	if label(frames[0]) != "RUN_STARTED" {
		t.Errorf("parent run does not start first")
	}
	parentTerminals, subTerminals := 0, map[string]int{}
	started := map[string]bool{}
	results := map[string]bool{} // parent tool calls whose result was emitted
	parked := map[string]bool{}  // subagents that returned their question to the parent
	for _, f := range frames {
		switch l := label(f); {
		case l == "RUN_FINISHED" || l == "RUN_ERROR":
			parentTerminals++
		case l == "TOOL_CALL_RESULT":
			var m map[string]any
			_ = json.Unmarshal(f.Data, &m)
			results[m["toolCallId"].(string)] = true
		case l == "CUSTOM(subagent.started)":
			started[value(f)["delegationId"].(string)] = true
		case l == "CUSTOM(subagent.status)" && value(f)["status"] == delegation.StatusInputReturned:
			// Its first call returned while it waited; the call that
			// continued it must see its end (checked by its test).
			parked[value(f)["delegationId"].(string)] = true
		case l == "CUSTOM(subagent.finished)" || l == "CUSTOM(subagent.failed)" || l == "CUSTOM(subagent.cancelled)":
			id := value(f)["delegationId"].(string)
			if !started[id] {
				t.Errorf("terminal of %s before its started", id)
			}
			subTerminals[id]++
			if p, _ := value(f)["parentToolCallId"].(string); p != "" && results[p] && value(f)["synthesized"] != true && !parked[id] {
				t.Errorf("subagent %s ended after its parent tool result", id)
			}
		}
	}
	if parentTerminals != 1 {
		t.Errorf("parent has %d terminal events", parentTerminals)
	}
	for id, n := range subTerminals {
		if n != 1 {
			t.Errorf("subagent %s has %d terminal events", id, n)
		}
	}
}

func findLabel(frames []*subagentstream.Frame, l string) int {
	for i, f := range frames {
		if label(f) == l {
			return i
		}
	}
	return -1
}

// compareGolden compares the event sequence (types, names, values; not
// timestamps or generated ids) with testdata/NAME.
func compareGolden(t *testing.T, name string, frames []*subagentstream.Frame) {
	t.Helper()
	var b strings.Builder
	for _, f := range frames {
		var m map[string]any
		_ = json.Unmarshal(f.Data, &m)
		delete(m, "timestamp")
		if f.Type == "TOOL_CALL_RESULT" || f.Type == "TEXT_MESSAGE_START" || f.Type == "TEXT_MESSAGE_CONTENT" || f.Type == "TEXT_MESSAGE_END" {
			delete(m, "messageId")
		}
		line, _ := json.Marshal(m)
		b.WriteString("id: ")
		b.WriteString(itoa(f.ID))
		b.WriteString("\ndata: ")
		b.Write(line)
		b.WriteString("\n\n")
	}
	path := filepath.Join("testdata", name)
	if *update {
		_ = os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != b.String() {
		t.Errorf("%s differs from the stream (run with -update after checking):\n%s", path, b.String())
	}
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestMediumCorrelationByCallOrder(t *testing.T) {
	defer goleak.VerifyNone(t)
	frames := happyPath(t, subagentstream.ModeCustom, false)
	started := frames[findLabel(frames, "CUSTOM(subagent.started)")]
	if v := value(started); v["parentToolCallId"] != "toolu_1" {
		t.Fatalf("delegation without parent id not grouped under the active delegate_to_agent call: %v", v)
	}
	assertSpecVerifier(t, frames)
}

func TestStandardMode(t *testing.T) {
	defer goleak.VerifyNone(t)
	frames := happyPath(t, subagentstream.ModeStandard, true)
	ls := strings.Join(labels(frames), ",")
	for _, want := range []string{"SUBAGENT_STARTED", "SUBAGENT_FINISHED"} {
		if !strings.Contains(ls, want) {
			t.Errorf("standard mode lacks %s: %s", want, ls)
		}
	}
	verify(t, frames)
	for _, f := range frames {
		if f.Type == "CUSTOM" && strings.HasPrefix(label(f), "CUSTOM(subagent.") {
			var m map[string]any
			_ = json.Unmarshal(f.Data, &m)
			if m["subagentRunId"] != "del-1" {
				t.Errorf("progress event not attributed: %s", f.Data)
			}
		}
	}
}

func TestToolNestedMode(t *testing.T) {
	defer goleak.VerifyNone(t)
	frames := happyPath(t, subagentstream.ModeToolNested, true)
	if findLabel(frames, "TOOL_CALL_START(subagent:research)") < 0 {
		t.Fatalf("no nested tool call: %v", labels(frames))
	}
	verify(t, frames)
}

func TestParentEventsPassUnchanged(t *testing.T) {
	defer goleak.VerifyNone(t)
	payloads := []P{
		{Kind: agentadaptor.KindTextStart, MessageID: "m1"},
		{Kind: agentadaptor.KindTextDelta, MessageID: "m1", Delta: "hello"},
		{Kind: agentadaptor.KindTextEnd, MessageID: "m1"},
		{Kind: agentadaptor.KindToolCallStart, ToolCallID: "t1", ToolName: "Bash"},
		{Kind: agentadaptor.KindToolCallResult, ToolCallID: "t1", ToolResult: "ok"},
		{Name: "claude.system", Raw: map[string]any{"x": 1.0}},
	}
	var steps []any
	for _, p := range payloads {
		steps = append(steps, p)
	}
	bus := delegation.NewMemoryBus()
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{})
	defer hub.Close()
	a := &shellParent{dir: t.TempDir()}
	h := startParent(t, a, a.script(steps...))
	st := hub.Start(h, "th", "run-x")
	sub, _ := st.Subscribe(0)
	frames := readAll(t, sub)

	// The same payloads through the bare translator.
	tr := agui.NewTranslator(agui.Options{ThreadID: "th", RunID: "run-x"})
	var want []events.Event
	want = append(want, tr.Translate(P{Kind: agentadaptor.KindRunStarted})...)
	for _, p := range payloads {
		want = append(want, tr.Translate(p)...)
	}
	want = append(want, tr.Translate(P{Kind: agentadaptor.KindRunFinished})...)
	if len(frames) != len(want) {
		t.Fatalf("mux produced %v, translator %d events", labels(frames), len(want))
	}
	for i, ev := range want {
		if frames[i].Type != ev.Type() {
			t.Errorf("event %d: %s, want %s", i, frames[i].Type, ev.Type())
		}
		if ev.Type() == events.EventTypeTextMessageContent || ev.Type() == events.EventTypeCustom || ev.Type() == events.EventTypeToolCallStart {
			a, _ := ev.ToJSON()
			if stripTS(a) != stripTS(frames[i].Data) {
				t.Errorf("event %d changed:\n%s\n%s", i, frames[i].Data, a)
			}
		}
		if frames[i].ID != uint64(i+1) {
			t.Errorf("frame %d has id %d", i, frames[i].ID)
		}
	}
}

func stripTS(b []byte) string {
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	delete(m, "timestamp")
	out, _ := json.Marshal(m)
	return string(out)
}

func TestParentTerminalClosesDanglingSubagents(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, cancel := range []bool{false, true} {
		bus := delegation.NewMemoryBus()
		hub := subagentstream.NewHub(bus, subagentstream.HubOptions{Stream: subagentstream.Options{HoldTimeout: 100 * time.Millisecond}})
		a := &shellParent{dir: t.TempDir()}
		h := startParent(t, a, a.script(
			P{Kind: agentadaptor.KindToolCallStart, ToolCallID: "toolu_1", ToolName: "mcp__a2a-delegation__delegate_to_agent"},
			"wait:go",
		))
		st := hub.Start(h, "th", "run-d")
		sub, _ := st.Subscribe(0)
		readUntil(t, sub, isType("TOOL_CALL_START(mcp__a2a-delegation__delegate_to_agent)"))
		p := newPub(bus, h.RunID(), "del-late", "toolu_1")
		p.send(delegation.DelegationStarted)
		readUntil(t, sub, isType("CUSTOM(subagent.started)"))
		if cancel {
			_ = h.Cancel(ctx(t))
		} else {
			a.release(t, "go")
		}
		frames, _ := st.Subscribe(0)
		all := readAll(t, frames)
		want := "CUSTOM(subagent.failed)"
		if cancel {
			want = "CUSTOM(subagent.cancelled)"
		}
		i := findLabel(all, want)
		if i < 0 || i > len(all)-2 || !strings.HasPrefix(label(all[len(all)-1]), "RUN_") {
			t.Fatalf("cancel=%v: dangling subagent not closed before the parent terminal: %v", cancel, labels(all))
		}
		v := value(all[i])
		if v["synthesized"] != true || v["error"] == nil {
			t.Errorf("synthesized terminal must say why: %v", v)
		}
		// A late remote terminal after that is dropped.
		p.send(delegation.DelegationFinished)
		assertSpecVerifier(t, all)
		verify(t, all)
		hub.Close()
	}
}

func TestDelegationLifecycleGuarantees(t *testing.T) {
	defer goleak.VerifyNone(t)
	bus := delegation.NewMemoryBus()
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{Stream: subagentstream.Options{HoldTimeout: 100 * time.Millisecond}})
	defer hub.Close()
	a := &shellParent{dir: t.TempDir()}
	h := startParent(t, a, a.script(
		P{Kind: agentadaptor.KindToolCallStart, ToolCallID: "toolu_1", ToolName: "delegate_to_agent"},
		"wait:go",
		P{Kind: agentadaptor.KindToolCallResult, ToolCallID: "toolu_1", ToolResult: "x"},
	))
	st := hub.Start(h, "th", "run-l")
	sub, _ := st.Subscribe(0)
	readUntil(t, sub, isType("TOOL_CALL_START(delegate_to_agent)"))
	p := newPub(bus, h.RunID(), "del-1", "toolu_1")
	// Terminal before started, a started after the synthesized one, a
	// duplicate terminal, events after it, repeated statuses and an unknown
	// kind.
	p.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status = "working" })
	p.send(delegation.DelegationStarted)
	p.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status = "working" })
	p.send("subagent.telemetry")
	p.send(delegation.DelegationFailed, func(e *delegation.DelegationEvent) {
		e.Error = &delegation.DelegationError{Code: delegation.CodeRemoteFailed, Message: "boom", RemoteStatus: "TASK_STATE_FAILED"}
	})
	p.send(delegation.DelegationFinished)
	p.send(delegation.DelegationTextDelta, delta("m", "late"))
	readUntil(t, sub, isType("CUSTOM(subagent.failed)"))
	a.release(t, "go")
	all, _ := st.Subscribe(0)
	frames := readAll(t, all)
	got := strings.Join(labels(frames), ",")
	want := "RUN_STARTED,TOOL_CALL_START(delegate_to_agent),CUSTOM(subagent.started),CUSTOM(subagent.status),CUSTOM(subagent.telemetry),CUSTOM(subagent.failed),TOOL_CALL_END,TOOL_CALL_RESULT,RUN_FINISHED"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	e := value(frames[5])["error"].(map[string]any)
	if e["code"] != "remote_failed" || e["remoteStatus"] != "TASK_STATE_FAILED" {
		t.Errorf("error value: %v", e)
	}
	verify(t, frames)
}

func TestUnknownKindsIgnoredByPolicy(t *testing.T) {
	defer goleak.VerifyNone(t)
	bus := delegation.NewMemoryBus()
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{Stream: subagentstream.Options{Unknown: subagentstream.IgnoreUnknown}})
	defer hub.Close()
	a := &shellParent{dir: t.TempDir()}
	h := startParent(t, a, a.script("wait:go"))
	st := hub.Start(h, "th", "run-u")
	sub, _ := st.Subscribe(0)
	p := newPub(bus, h.RunID(), "del-1", "")
	p.send("subagent.telemetry")
	p.send("")
	p.send(delegation.DelegationStarted)
	p.send(delegation.DelegationFinished)
	readUntil(t, sub, isType("CUSTOM(subagent.finished)"))
	a.release(t, "go")
	frames := readAll(t, sub)
	if findLabel(frames, "CUSTOM(subagent.telemetry)") >= 0 {
		t.Fatalf("unknown kind forwarded despite IgnoreUnknown")
	}
}

// A delegation may publish before the mux read the parent's first event (a
// fast tool call, a slow UI): the parent's RUN_STARTED still opens the
// stream, and the delegation's events follow it.
func TestRunStartedOpensTheStreamEvenWhenDelegationEventsCameFirst(t *testing.T) {
	for i := range 20 {
		a := &shellParent{dir: t.TempDir()}
		h := startParent(t, a, a.script(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: "m", Delta: "answer"}))
		bus := delegation.NewMemoryBus()
		p := newPub(bus, h.RunID(), "del-1", "")
		p.send(delegation.DelegationStarted)
		p.send(delegation.DelegationFinished)
		hub := subagentstream.NewHub(bus, subagentstream.HubOptions{})
		st := hub.Start(h, "thread-1", fmt.Sprint("run-", i))
		sub, err := st.Subscribe(0)
		if err != nil {
			t.Fatal(err)
		}
		fs := readAll(t, sub)
		hub.Close()
		if len(fs) == 0 || fs[0].Type != "RUN_STARTED" {
			t.Fatalf("iteration %d: the stream opens with %v", i, labels(fs))
		}
		verifyGo(t, fs)
	}
}
