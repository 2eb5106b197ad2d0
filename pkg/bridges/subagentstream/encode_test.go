package subagentstream

import (
	"bytes"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// generalEncoding is what the direct encoding must reproduce: the CUSTOM
// event of Value's map, marshalled by the AG-UI SDK.
func generalEncoding(t testing.TB, ev delegation.DelegationEvent, runID string, synthesized bool, at time.Time) []byte {
	v := Value(ev, runID, false)
	if synthesized {
		v["synthesized"] = true
	}
	b, err := agui.NewCustomEvent(string(ev.Kind), v, at).ToJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func directEncoding(ev delegation.DelegationEvent, runID string, synthesized bool, at time.Time) []byte {
	id := identityOf(runID, &ev)
	return fastFrame(string(ev.Kind), at.UnixMilli(), &id, ev.RemoteMessageID, ev.Delta, synthesized).Data
}

func TestDirectEncodingMatchesGeneral(t *testing.T) {
	at := time.UnixMilli(1767225600123)
	full := delegation.DelegationEvent{
		RunID: "sdk-run", DelegationID: "del-0123", AgentKey: "research", AgentName: "Research <Agent> & co",
		Protocol: "a2a", ParentToolCallID: "toolu_1", RemoteTaskID: "task-\"1\"", RemoteContextID: "ctx\\1",
		RemoteMessageID: "msg-1", Kind: delegation.DelegationTextDelta, Delta: "line\nnext\t\x01 \u2028\u2029 é 😀 \xff end",
	}
	cases := map[string]delegation.DelegationEvent{
		"full delta":       full,
		"bare delta":       {DelegationID: "d", Kind: delegation.DelegationTextDelta, Delta: "x"},
		"empty identity":   {Kind: delegation.DelegationStarted, Status: "starting"},
		"status with text": {DelegationID: "d", AgentKey: "k", Protocol: "agui", Kind: delegation.DelegationStatus, Status: "working", Text: "<b>busy</b>"},
		"text end":         {DelegationID: "d", Kind: delegation.DelegationTextEnd, RemoteMessageID: "m", Text: "all of it"},
		"finished":         {DelegationID: "d", Kind: delegation.DelegationFinished, Status: "completed", Text: "summary"},
		"unknown kind":     {DelegationID: "d", Kind: "subagent.future", Status: "x"},
	}
	for name, ev := range cases {
		for _, synth := range []bool{false, true} {
			want := generalEncoding(t, ev, "run-ag-ui", synth, at)
			got := directEncoding(ev, "run-ag-ui", synth, at)
			if !bytes.Equal(got, want) {
				t.Errorf("%s (synthesized %v):\n got %s\nwant %s", name, synth, got, want)
			}
		}
	}
	// Without characters to escape, a frame's buffer is its exact size
	// (up to the timestamp's digits and the synthesized flag).
	plain := delegation.DelegationEvent{RunID: "r", DelegationID: "del-1", AgentKey: "research", AgentName: "Research", Protocol: "a2a",
		ParentToolCallID: "toolu_1", RemoteTaskID: "t-1", RemoteContextID: "c-1", RemoteMessageID: "m-1", Kind: delegation.DelegationTextDelta, Delta: "some text"}
	id := identityOf("run-ag-ui", &plain)
	f := fastFrame(string(plain.Kind), at.UnixMilli(), &id, plain.RemoteMessageID, plain.Delta, false)
	if slack := cap(f.Data) - len(f.Data); slack < 0 || slack > 20-13+len(`,"synthesized":true`) {
		t.Errorf("frame buffer of %d bytes for %d bytes of JSON", cap(f.Data), len(f.Data))
	}
}

func FuzzDirectEncoding(f *testing.F) {
	f.Add("subagent.text.delta", "del-1", "hello", "msg", "run", "<&>", int64(0))
	f.Add("subagent.status", "", "\x00\xff\u2028", "", "", "working", int64(-1))
	f.Fuzz(func(t *testing.T, kind, id, text, msg, runID, status string, ms int64) {
		if kind == "" {
			return // the general path names it subagent.unknown; never direct
		}
		ev := delegation.DelegationEvent{DelegationID: id, AgentKey: text, AgentName: status, Protocol: msg, ParentToolCallID: runID,
			RemoteTaskID: id, RemoteContextID: text, RemoteMessageID: msg, Kind: delegation.DelegationEventKind(kind),
			Delta: text, Text: status, Status: status}
		at := time.UnixMilli(ms)
		for _, synth := range []bool{false, true} {
			want := generalEncoding(t, ev, runID, synth, at)
			if got := directEncoding(ev, runID, synth, at); !bytes.Equal(got, want) {
				t.Fatalf("got %s\nwant %s", got, want)
			}
		}
	})
}
