package subagentstream_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/aguiverify"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"go.uber.org/goleak"
)

// openStream starts a parent that opens a text message and waits, with a
// delegation streaming into it.
func openStream(t *testing.T, opts subagentstream.HubOptions) (*subagentstream.Hub, *subagentstream.Stream, *shellParent, *pub) {
	bus := delegation.NewMemoryBus()
	hub := subagentstream.NewHub(bus, opts)
	a := &shellParent{dir: t.TempDir()}
	h := startParent(t, a, a.script(
		P{Kind: agentadaptor.KindTextStart, MessageID: "m1"},
		P{Kind: agentadaptor.KindTextDelta, MessageID: "m1", Delta: "Let me ask the research agent. "},
		P{Kind: agentadaptor.KindToolCallStart, ToolCallID: "toolu_1", ToolName: "delegate_to_agent"},
		"wait:go",
		P{Kind: agentadaptor.KindToolCallResult, ToolCallID: "toolu_1", ToolResult: "done"},
		P{Kind: agentadaptor.KindTextDelta, MessageID: "m1", Delta: "Done."},
		P{Kind: agentadaptor.KindTextEnd, MessageID: "m1"},
	))
	st := hub.Start(h, "th", "run-r")
	return hub, st, a, newPub(bus, h.RunID(), "del-1", "toolu_1")
}

func TestReconnectResumesInsideOpenMessage(t *testing.T) {
	defer goleak.VerifyNone(t)
	hub, st, a, p := openStream(t, subagentstream.HubOptions{})
	defer hub.Close()
	first, _ := st.Subscribe(0)
	seen := readUntil(t, first, isType("TOOL_CALL_START(delegate_to_agent)"))
	p.send(delegation.DelegationStarted)
	p.send(delegation.DelegationTextStart, msg("rm"))
	p.send(delegation.DelegationTextDelta, delta("rm", "half"))
	seen = append(seen, readUntil(t, first, isType("CUSTOM(subagent.text.delta)"))...)
	first.Close() // the browser goes away inside an open text message and tool call
	cursor := seen[len(seen)-1].ID

	p.send(delegation.DelegationTextDelta, delta("rm", " and the rest"))
	p.send(delegation.DelegationTextEnd, msg("rm"))
	p.send(delegation.DelegationFinished)
	a.release(t, "go")

	resumed, err := st.Subscribe(cursor)
	if err != nil {
		t.Fatal(err)
	}
	rest := readAll(t, resumed)
	if rest[0].ID != 0 || label(rest[0]) != "RUN_STARTED" {
		t.Fatalf("resumed stream must re-open with RUN_STARTED: %v", labels(rest))
	}
	pre := strings.Join(labels(rest[:3]), ",")
	if pre != "RUN_STARTED,TEXT_MESSAGE_START,TOOL_CALL_START(delegate_to_agent)" {
		t.Fatalf("re-opening preamble = %s", pre)
	}
	var next uint64
	for _, f := range rest {
		if f.ID != 0 {
			next = f.ID
			break
		}
	}
	if next != cursor+1 {
		t.Errorf("replay starts at %d, want %d", next, cursor+1)
	}
	verify(t, rest)
	terminals := 0
	for _, f := range rest {
		if l := label(f); l == "RUN_FINISHED" || l == "CUSTOM(subagent.finished)" {
			terminals++
		}
	}
	if terminals != 2 {
		t.Errorf("resumed stream must carry the parent and subagent terminals once each, got %d", terminals)
	}
	// Asking again after the end: nothing to resume.
	last := rest[len(rest)-1].ID
	if _, err := st.Subscribe(last); err == nil {
		t.Errorf("subscribe at the terminal cursor must report completion")
	}
}

func TestReplayGapMarker(t *testing.T) {
	defer goleak.VerifyNone(t)
	hub, st, a, p := openStream(t, subagentstream.HubOptions{Stream: subagentstream.Options{ReplayFrames: 8}})
	defer hub.Close()
	sub, _ := st.Subscribe(0)
	readUntil(t, sub, isType("TOOL_CALL_START(delegate_to_agent)"))
	p.send(delegation.DelegationStarted)
	for i := range 20 {
		p.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status = fmt.Sprint("step ", i) })
	}
	p.send(delegation.DelegationFinished)
	readUntil(t, sub, isType("CUSTOM(subagent.finished)"))
	a.release(t, "go")
	readAll(t, sub)
	resumed, err := st.Subscribe(2)
	if err != nil {
		t.Fatal(err)
	}
	rest := readAll(t, resumed)
	i := findLabel(rest, "CUSTOM("+subagentstream.EventReplayGap+")")
	if i < 0 {
		t.Fatalf("no replay gap marker: %v", labels(rest))
	}
	if label(rest[len(rest)-1]) != "RUN_FINISHED" || strings.Count(strings.Join(labels(rest), ","), "RUN_FINISHED") != 1 {
		t.Fatalf("terminal must be replayed whole, once: %v", labels(rest))
	}
	verify(t, rest)
}

func TestEventsEndpoint(t *testing.T) {
	defer goleak.VerifyNone(t)
	hub, st, a, p := openStream(t, subagentstream.HubOptions{})
	defer hub.Close()
	mux := http.NewServeMux()
	mux.Handle("/agui/runs/{runId}/events", hub.EventsHandler())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(runID, cursor string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/agui/runs/"+runID+"/events", nil)
		if cursor != "" {
			req.Header.Set("Last-Event-ID", cursor)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	for _, tt := range []struct {
		run, cursor string
		status      int
		code        string
	}{
		{"run-r", "abc", 400, "bad_cursor"},
		{"run-r", "-1", 400, "bad_cursor"},
		{"run-nope", "1", 404, "run_not_found"},
		{"run-r", "999999", 404, "cursor_not_found"},
	} {
		resp, body := get(tt.run, tt.cursor)
		if resp.StatusCode != tt.status || !strings.Contains(body, tt.code) {
			t.Errorf("GET %s Last-Event-ID %q: %d %s, want %d %s", tt.run, tt.cursor, resp.StatusCode, body, tt.status, tt.code)
		}
	}
	sub, _ := st.Subscribe(0)
	readUntil(t, sub, isType("TOOL_CALL_START(delegate_to_agent)"))
	p.send(delegation.DelegationStarted)
	p.send(delegation.DelegationFinished)
	readUntil(t, sub, isType("CUSTOM(subagent.finished)"))
	a.release(t, "go")
	all := readAll(t, sub)
	resp, body := get("run-r", "3")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("resume: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	frames, err := aguiverify.Frames(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := aguiverify.Verify(frames, aguiverify.AllowUnnumberedFrames()); err != nil {
		t.Fatalf("resumed HTTP stream invalid: %v\n%s", err, body)
	}
	nodeValidate(t, []byte(body))
	resp, _ = get("run-r", itoa(all[len(all)-1].ID))
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("a complete stream must answer 204, got %d", resp.StatusCode)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestSlowConsumerKeepsCriticalAndOrder(t *testing.T) {
	defer goleak.VerifyNone(t)
	bus := delegation.NewMemoryBus()
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{Stream: subagentstream.Options{SubscriberBuffer: 64, SubscriberMaxBytes: 64 << 10}})
	defer hub.Close()
	a := &shellParent{dir: t.TempDir()}
	h := startParent(t, a, a.script(
		P{Kind: agentadaptor.KindToolCallStart, ToolCallID: "toolu_1", ToolName: "delegate_to_agent"},
		P{Kind: agentadaptor.KindToolCallStart, ToolCallID: "toolu_2", ToolName: "delegate_to_agent"},
		"wait:go",
		P{Kind: agentadaptor.KindToolCallResult, ToolCallID: "toolu_1", ToolResult: "a"},
		P{Kind: agentadaptor.KindToolCallResult, ToolCallID: "toolu_2", ToolResult: "b"},
	))
	st := hub.Start(h, "th", "run-slow")
	fast, _ := st.Subscribe(0)
	readUntil(t, fast, func(f *subagentstream.Frame) bool { return strings.Contains(string(f.Data), "toolu_2") })
	slow, _ := st.Subscribe(0) // never read until the end
	pubs := []*pub{newPub(bus, h.RunID(), "del-a", "toolu_1"), newPub(bus, h.RunID(), "del-b", "toolu_2")}
	want := map[string]*strings.Builder{"del-a": {}, "del-b": {}}
	for _, p := range pubs {
		p.send(delegation.DelegationStarted)
		p.send(delegation.DelegationTextStart, msg("m"))
	}
	const n = 5000
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, p := range pubs {
		wg.Go(func() {
			for i := range n {
				d := fmt.Sprintf("%d,", i)
				mu.Lock()
				want[p.base.DelegationID].WriteString(d)
				mu.Unlock()
				p.send(delegation.DelegationTextDelta, delta("m", d))
			}
			p.send(delegation.DelegationTextEnd, msg("m"))
			p.send(delegation.DelegationFinished)
		})
	}
	wg.Wait()
	ended := 0
	readUntil(t, fast, func(f *subagentstream.Frame) bool {
		if label(f) == "CUSTOM(subagent.finished)" {
			ended++
		}
		return ended == 2
	})
	a.release(t, "go")
	if p := slow.Pending(); p > 2*n/4 {
		t.Errorf("slow subscriber holds %d frames for %d deltas: not coalesced", p, 2*n)
	}
	frames := readAll(t, slow)
	got := map[string]*strings.Builder{"del-a": {}, "del-b": {}}
	finished := map[string]int{}
	var lastID uint64
	for _, f := range frames {
		if f.ID != 0 && f.ID <= lastID {
			t.Fatalf("ids not increasing: %d after %d", f.ID, lastID)
		}
		if f.ID != 0 {
			lastID = f.ID
		}
		switch label(f) {
		case "CUSTOM(subagent.text.delta)":
			v := value(f)
			got[v["delegationId"].(string)].WriteString(v["delta"].(string))
		case "CUSTOM(subagent.finished)":
			finished[value(f)["delegationId"].(string)]++
		case "CUSTOM(stream.dropped)":
			t.Fatalf("deltas dropped although within the byte bound")
		}
	}
	for id := range want {
		if got[id].String() != want[id].String() {
			t.Errorf("%s: text out of order or lost under coalescing", id)
		}
		if finished[id] != 1 {
			t.Errorf("%s: %d terminal events", id, finished[id])
		}
	}
	verify(t, frames)
}

func TestFiftyConcurrentDelegationsNoCrossTalk(t *testing.T) {
	defer goleak.VerifyNone(t)
	bus := delegation.NewMemoryBus()
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{})
	defer hub.Close()
	a := &shellParent{dir: t.TempDir()}
	var steps []any
	for i := range 50 {
		steps = append(steps, P{Kind: agentadaptor.KindToolCallStart, ToolCallID: fmt.Sprintf("toolu_%d", i), ToolName: "delegate_to_agent"})
	}
	steps = append(steps, "wait:go")
	for i := range 50 {
		steps = append(steps, P{Kind: agentadaptor.KindToolCallResult, ToolCallID: fmt.Sprintf("toolu_%d", i), ToolResult: "ok"})
	}
	h := startParent(t, a, a.script(steps...))
	st := hub.Start(h, "th", "run-50")
	sub, _ := st.Subscribe(0)
	readUntil(t, sub, func(f *subagentstream.Frame) bool {
		return strings.Contains(string(f.Data), "toolu_49") && f.Type == "TOOL_CALL_START"
	})
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			p := newPub(bus, h.RunID(), fmt.Sprintf("del-%d", i), fmt.Sprintf("toolu_%d", i))
			p.send(delegation.DelegationStarted)
			for j := range 20 {
				p.send(delegation.DelegationTextDelta, delta("m", fmt.Sprintf("[%d:%d]", i, j)))
			}
			p.send(delegation.DelegationFinished)
		})
	}
	wg.Wait()
	a.release(t, "go")
	readAll(t, sub)
	whole, _ := st.Subscribe(0)
	frames := readAll(t, whole)
	text := map[string]string{}
	for _, f := range frames {
		if !strings.HasPrefix(label(f), "CUSTOM(subagent.") {
			continue
		}
		v := value(f)
		id := v["delegationId"].(string)
		if want := "toolu_" + strings.TrimPrefix(id, "del-"); v["parentToolCallId"] != want {
			t.Fatalf("%s grouped under %v, want %s", id, v["parentToolCallId"], want)
		}
		if d, ok := v["delta"].(string); ok {
			if !strings.HasPrefix(d, "["+strings.TrimPrefix(id, "del-")+":") {
				t.Fatalf("cross-talk: %s got %q", id, d)
			}
			text[id] += d
		}
	}
	for i := range 50 {
		var want strings.Builder
		for j := range 20 {
			fmt.Fprintf(&want, "[%d:%d]", i, j)
		}
		if got := text[fmt.Sprintf("del-%d", i)]; got != want.String() {
			t.Errorf("del-%d text = %q", i, got)
		}
	}
	assertSpecVerifier(t, frames)
	verify(t, frames)
}
