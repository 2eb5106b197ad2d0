package agui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/aguiverify"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
)

type P = agentadaptor.StreamPayload

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testOptions returns deterministic options: a fixed clock and sequential ids.
func testOptions() agui.Options {
	n := 0
	return agui.Options{
		ThreadID: "thread-1",
		RunID:    "run-1",
		Clock:    func() time.Time { return t0 },
		NewID:    func(prefix string) string { n++; return fmt.Sprintf("%s%d", prefix, n) },
	}
}

func translateAll(opts agui.Options, ps []P, close bool) []events.Event {
	tr := agui.NewTranslator(opts)
	var out []events.Event
	for _, p := range ps {
		out = tr.AppendTranslate(out, p)
	}
	if close {
		out = append(out, tr.Close("", "")...)
	}
	return out
}

func types(evs []events.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.Type())
	}
	return out
}

// checkValid applies every validator we have: the Go SDK's Validate and
// ValidateSequence, and our own verifier.
func checkValid(t *testing.T, evs []events.Event) {
	t.Helper()
	for i, e := range evs {
		if err := e.Validate(); err != nil {
			t.Errorf("event %d (%s) fails Validate: %v", i, e.Type(), err)
		}
	}
	if err := events.ValidateSequence(evs); err != nil {
		t.Errorf("ValidateSequence: %v", err)
	}
	if err := aguiverify.VerifyEvents(evs); err != nil {
		t.Errorf("aguiverify: %v", err)
	}
}

func jsonOf(t *testing.T, e events.Event) map[string]any {
	t.Helper()
	b, err := e.ToJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTranslatorMapping(t *testing.T) {
	started := P{RunID: "sdk-run", Kind: agentadaptor.KindRunStarted}
	finished := P{Kind: agentadaptor.KindRunFinished}
	tests := []struct {
		name  string
		in    []P
		close bool
		opts  func(*agui.Options)
		want  []string
		check func(t *testing.T, evs []events.Event)
	}{
		{
			name: "whole text message",
			in:   []P{started, {Kind: agentadaptor.KindTextEnd, MessageID: "m1", Text: "Hello"}, finished},
			want: []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"},
			check: func(t *testing.T, evs []events.Event) {
				if r := jsonOf(t, evs[1])["role"]; r != "assistant" {
					t.Errorf("role = %v, want assistant", r)
				}
				if d := jsonOf(t, evs[2])["delta"]; d != "Hello" {
					t.Errorf("delta = %v", d)
				}
				rs := jsonOf(t, evs[0])
				if rs["threadId"] != "thread-1" || rs["runId"] != "run-1" {
					t.Errorf("RUN_STARTED ids = %v", rs)
				}
			},
		},
		{
			name: "streamed text does not repeat Text at the end",
			in: []P{started, {Kind: agentadaptor.KindTextStart, MessageID: "m1"},
				{Kind: agentadaptor.KindTextDelta, MessageID: "m1", Delta: "Hel"},
				{Kind: agentadaptor.KindTextDelta, MessageID: "m1", Delta: ""},
				{Kind: agentadaptor.KindTextDelta, MessageID: "m1", Delta: "lo"},
				{Kind: agentadaptor.KindTextEnd, MessageID: "m1", Text: "Hello"}, finished},
			want: []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"},
		},
		{
			name: "delta without start starts implicitly and the terminal closes it",
			in:   []P{started, {Kind: agentadaptor.KindTextDelta, Delta: "hi"}, {Kind: agentadaptor.KindTextDelta, Delta: " there"}, finished},
			want: []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"},
			check: func(t *testing.T, evs []events.Event) {
				if id := jsonOf(t, evs[1])["messageId"]; id != "msg-1" || jsonOf(t, evs[3])["messageId"] != "msg-1" {
					t.Errorf("implicit message ids differ: %v", id)
				}
			},
		},
		{
			name: "text end of a never-started empty message emits nothing",
			in:   []P{started, {Kind: agentadaptor.KindTextEnd, MessageID: "m9"}, finished},
			want: []string{"RUN_STARTED", "RUN_FINISHED"},
		},
		{
			name: "tool call with streamed args and result",
			in: []P{started, {Kind: agentadaptor.KindToolCallStart, ToolCallID: "c1", ToolName: "search", MessageID: "m1"},
				{Kind: agentadaptor.KindToolCallArgs, ToolCallID: "c1", Delta: `{"q":`},
				{Kind: agentadaptor.KindToolCallArgs, ToolCallID: "c1", Delta: `"go"}`},
				{Kind: agentadaptor.KindToolCallEnd, ToolCallID: "c1", ToolArgs: `{"q":"go"}`},
				{Kind: agentadaptor.KindToolCallResult, ToolCallID: "c1", ToolResult: "found"}, finished},
			want: []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "RUN_FINISHED"},
			check: func(t *testing.T, evs []events.Event) {
				st := jsonOf(t, evs[1])
				if st["toolCallName"] != "search" || st["parentMessageId"] != "m1" {
					t.Errorf("TOOL_CALL_START = %v", st)
				}
				res := jsonOf(t, evs[5])
				if res["content"] != "found" || res["role"] != "tool" || res["messageId"] != "result-1" || res["toolCallId"] != "c1" {
					t.Errorf("TOOL_CALL_RESULT = %v", res)
				}
			},
		},
		{
			name: "tool end carries whole args when none streamed",
			in: []P{started, {Kind: agentadaptor.KindToolCallStart, ToolCallID: "c1", ToolName: "t"},
				{Kind: agentadaptor.KindToolCallEnd, ToolCallID: "c1", ToolArgs: `{}`}, finished},
			want: []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"},
		},
		{
			name: "result for an unknown call synthesizes start and end",
			in:   []P{started, {Kind: agentadaptor.KindToolCallResult, ToolCallID: "c7", ToolResult: "x"}, finished},
			want: []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_END", "TOOL_CALL_RESULT", "RUN_FINISHED"},
			check: func(t *testing.T, evs []events.Event) {
				if n := jsonOf(t, evs[1])["toolCallName"]; n != agui.UnknownToolName {
					t.Errorf("name = %v", n)
				}
			},
		},
		{
			name: "result while the call is open ends it first; empty error result gets a placeholder",
			in: []P{started, {Kind: agentadaptor.KindToolCallStart, ToolCallID: "c1", ToolName: "t"},
				{Kind: agentadaptor.KindToolCallResult, ToolCallID: "c1", ToolError: true}, finished},
			want: []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_END", "TOOL_CALL_RESULT", "RUN_FINISHED"},
			check: func(t *testing.T, evs []events.Event) {
				if c := jsonOf(t, evs[3])["content"]; c != agui.EmptyToolError {
					t.Errorf("content = %v", c)
				}
			},
		},
		{
			name: "args and end for unknown calls, args after end ignored, duplicate start ignored",
			in: []P{started, {Kind: agentadaptor.KindToolCallArgs, ToolCallID: "c1", ToolName: "t", Delta: "{"},
				{Kind: agentadaptor.KindToolCallStart, ToolCallID: "c1", ToolName: "t"},
				{Kind: agentadaptor.KindToolCallEnd, ToolCallID: "c2"},
				{Kind: agentadaptor.KindToolCallEnd, ToolCallID: "c2"},
				{Kind: agentadaptor.KindToolCallArgs, ToolCallID: "c2", Delta: "late"}, finished},
			want: []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_START", "TOOL_CALL_END", "TOOL_CALL_END", "RUN_FINISHED"},
		},
		{
			name: "reasoning maps to REASONING events with a distinct id",
			in: []P{started, {Kind: agentadaptor.KindReasoningStart, MessageID: "m1"},
				{Kind: agentadaptor.KindReasoningDelta, MessageID: "m1", Delta: "hmm"},
				{Kind: agentadaptor.KindReasoningEnd, MessageID: "m1"},
				{Kind: agentadaptor.KindTextEnd, MessageID: "m1", Text: "ok"}, finished},
			want: []string{"RUN_STARTED", "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END",
				"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"},
			check: func(t *testing.T, evs []events.Event) {
				m := jsonOf(t, evs[2])
				if m["messageId"] != "reasoning-m1" || m["role"] != "reasoning" {
					t.Errorf("REASONING_MESSAGE_START = %v", m)
				}
			},
		},
		{
			name: "open reasoning is closed by the terminal",
			in:   []P{started, {Kind: agentadaptor.KindReasoningDelta, Delta: "a"}, finished},
			want: []string{"RUN_STARTED", "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END", "RUN_FINISHED"},
		},
		{
			name: "reasoning as CUSTOM",
			opts: func(o *agui.Options) { o.Reasoning = agui.ReasoningCustom },
			in: []P{started, {Kind: agentadaptor.KindReasoningStart}, {Kind: agentadaptor.KindReasoningDelta, Delta: "a"},
				{Kind: agentadaptor.KindReasoningEnd}, finished},
			want: []string{"RUN_STARTED", "CUSTOM", "CUSTOM", "CUSTOM", "RUN_FINISHED"},
			check: func(t *testing.T, evs []events.Event) {
				a, b := jsonOf(t, evs[1]), jsonOf(t, evs[2])
				if a["name"] != agui.EventReasoningStart || b["name"] != agui.EventReasoningDelta {
					t.Errorf("names = %v, %v", a["name"], b["name"])
				}
				if a["value"].(map[string]any)["messageId"] != b["value"].(map[string]any)["messageId"] {
					t.Errorf("reasoning ids differ: %v %v", a, b)
				}
			},
		},
		{
			name: "reasoning omitted",
			opts: func(o *agui.Options) { o.Reasoning = agui.ReasoningOmit },
			in:   []P{started, {Kind: agentadaptor.KindReasoningDelta, Delta: "a"}, finished},
			want: []string{"RUN_STARTED", "RUN_FINISHED"},
		},
		{
			name: "failure closes open items then RUN_ERROR with the failure code",
			in: []P{started, {Kind: agentadaptor.KindTextDelta, MessageID: "m1", Delta: "x"},
				{Kind: agentadaptor.KindToolCallStart, ToolCallID: "c1", ToolName: "t"},
				{Kind: agentadaptor.KindRunFailed, Failure: &agentadaptor.Failure{Code: agentadaptor.FailureExit, Message: "exit 3"}}},
			want: []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TOOL_CALL_START", "TEXT_MESSAGE_END", "TOOL_CALL_END", "RUN_ERROR"},
			check: func(t *testing.T, evs []events.Event) {
				m := jsonOf(t, evs[6])
				if m["code"] != "process_exit" || m["message"] != "exit 3" {
					t.Errorf("RUN_ERROR = %v", m)
				}
				if _, has := m["runId"]; has {
					t.Errorf("RUN_ERROR carries runId (not in the 1.0 schema): %v", m)
				}
			},
		},
		{
			name: "failure without details",
			in:   []P{started, {Kind: agentadaptor.KindRunFailed}},
			want: []string{"RUN_STARTED", "RUN_ERROR"},
			check: func(t *testing.T, evs []events.Event) {
				if m := jsonOf(t, evs[1]); m["code"] != agui.CodeRunFailed || m["message"] == "" {
					t.Errorf("RUN_ERROR = %v", m)
				}
			},
		},
		{
			name: "cancellation is RUN_ERROR code cancelled, never a cancelled outcome",
			in:   []P{started, {Kind: agentadaptor.KindRunCancelled, Failure: &agentadaptor.Failure{Code: agentadaptor.FailureCancelled, Message: "the run was cancelled"}}},
			want: []string{"RUN_STARTED", "RUN_ERROR"},
			check: func(t *testing.T, evs []events.Event) {
				if m := jsonOf(t, evs[1]); m["code"] != "cancelled" {
					t.Errorf("RUN_ERROR = %v", m)
				}
			},
		},
		{
			name: "custom payloads always carry a value",
			in: []P{started, {Name: "claude.system", Raw: map[string]any{"a": 1.0}}, {Name: "empty"}, {},
				{Kind: "future.kind"}, finished},
			want: []string{"RUN_STARTED", "CUSTOM", "CUSTOM", "CUSTOM", "CUSTOM", "RUN_FINISHED"},
			check: func(t *testing.T, evs []events.Event) {
				want := []struct{ name, value string }{{"claude.system", `{"a":1}`}, {"empty", `{}`}, {agui.EventCustomFallback, `{}`}, {"future.kind", `{}`}}
				for i, w := range want {
					m := jsonOf(t, evs[i+1])
					v, _ := json.Marshal(m["value"])
					if m["name"] != w.name || string(v) != w.value {
						t.Errorf("CUSTOM %d = %v, want %s %s", i, m, w.name, w.value)
					}
				}
			},
		},
		{
			name: "usage, diagnostic and dropped become named CUSTOM events",
			in: []P{started, {Kind: agentadaptor.KindUsage, Usage: &agentadaptor.Usage{InputTokens: 3, OutputTokens: 4}},
				{Kind: agentadaptor.KindDiagnostic, Diagnostic: &agentadaptor.Diagnostic{Code: "malformed_line", Message: "bad", Line: 2}},
				{Kind: agentadaptor.KindStreamDropped, Dropped: 5}, finished},
			want: []string{"RUN_STARTED", "CUSTOM", "CUSTOM", "CUSTOM", "RUN_FINISHED"},
			check: func(t *testing.T, evs []events.Event) {
				want := []struct{ name, value string }{
					{agui.EventUsage, `{"inputTokens":3,"outputTokens":4}`},
					{agui.EventDiagnostic, `{"code":"malformed_line","line":2,"message":"bad"}`},
					{agui.EventStreamDropped, `{"dropped":5}`}}
				for i, w := range want {
					m := jsonOf(t, evs[i+1])
					v, _ := json.Marshal(m["value"])
					if m["name"] != w.name || string(v) != w.value {
						t.Errorf("CUSTOM %d = %v %s, want %s %s", i, m["name"], v, w.name, w.value)
					}
				}
			},
		},
		{
			name: "payloads before run.started are held back and flushed after it",
			in:   []P{{Name: "early"}, {Kind: agentadaptor.KindTextDelta, MessageID: "m", Delta: "a"}, started, finished},
			want: []string{"RUN_STARTED", "CUSTOM", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"},
		},
		{
			name: "terminal without run.started synthesizes RUN_STARTED",
			in:   []P{{Name: "early"}, finished},
			want: []string{"RUN_STARTED", "CUSTOM", "RUN_FINISHED"},
		},
		{
			name: "nothing after the terminal; duplicate run.started ignored",
			in: []P{started, started, finished, {Kind: agentadaptor.KindTextDelta, Delta: "late"},
				{Kind: agentadaptor.KindRunFailed}},
			want: []string{"RUN_STARTED", "RUN_FINISHED"},
		},
		{
			name:  "Close ends a stream without terminal",
			in:    []P{started, {Kind: agentadaptor.KindTextDelta, Delta: "a"}, {Kind: agentadaptor.KindToolCallStart, ToolCallID: "c", ToolName: "t"}},
			close: true,
			want:  []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TOOL_CALL_START", "TEXT_MESSAGE_END", "TOOL_CALL_END", "RUN_ERROR"},
			check: func(t *testing.T, evs []events.Event) {
				if m := jsonOf(t, evs[6]); m["code"] != agui.CodeStreamEnded {
					t.Errorf("RUN_ERROR = %v", m)
				}
			},
		},
		{
			name:  "Close of an empty stream still yields RUN_STARTED + RUN_ERROR",
			close: true,
			want:  []string{"RUN_STARTED", "RUN_ERROR"},
		},
		{
			name:  "Close after the terminal adds nothing",
			in:    []P{started, finished},
			close: true,
			want:  []string{"RUN_STARTED", "RUN_FINISHED"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			evs := translateAll(opts, tc.in, tc.close)
			if got := strings.Join(types(evs), " "); got != strings.Join(tc.want, " ") {
				t.Fatalf("events:\n got  %s\n want %s", got, strings.Join(tc.want, " "))
			}
			checkValid(t, evs)
			if tc.check != nil {
				tc.check(t, evs)
			}
		})
	}
}

func TestTranslatorDefaults(t *testing.T) {
	tr := agui.NewTranslator(agui.Options{})
	evs := tr.Translate(P{RunID: "sdk-run-7", Kind: agentadaptor.KindRunStarted, Time: t0})
	m := jsonOf(t, evs[0])
	if m["runId"] != "sdk-run-7" || m["threadId"] != "thread-sdk-run-7" {
		t.Errorf("defaults: %v", m)
	}
	if ts := m["timestamp"].(float64); int64(ts) != t0.UnixMilli() {
		t.Errorf("timestamp = %v, want the payload's time %d", ts, t0.UnixMilli())
	}
	if tr.RunID() != "sdk-run-7" || tr.ThreadID() != "thread-sdk-run-7" || !tr.Started() || tr.Done() {
		t.Errorf("accessors: %q %q %v %v", tr.RunID(), tr.ThreadID(), tr.Started(), tr.Done())
	}
	d := tr.Translate(P{Kind: agentadaptor.KindTextDelta, Delta: "x"})
	if id, _ := jsonOf(t, d[0])["messageId"].(string); !strings.HasPrefix(id, "msg-") || len(id) != len("msg-")+16 {
		t.Errorf("generated id %q", id)
	}
}

func TestHoldOverflowStartsRun(t *testing.T) {
	tr := agui.NewTranslator(testOptions())
	var evs []events.Event
	for i := 0; i <= agui.MaxHeld; i++ {
		evs = tr.AppendTranslate(evs, P{Name: "x"})
	}
	if len(evs) != agui.MaxHeld+2 || evs[0].Type() != events.EventTypeRunStarted {
		t.Fatalf("got %d events, first %s", len(evs), evs[0].Type())
	}
	evs = append(evs, tr.Translate(P{Kind: agentadaptor.KindRunStarted})...)
	evs = append(evs, tr.Translate(P{Kind: agentadaptor.KindRunFinished})...)
	checkValid(t, evs)
}

func TestNewCustomEvent(t *testing.T) {
	var nilMap map[string]any
	var nilPtr *struct{}
	tests := []struct {
		name  string
		value any
		want  string
	}{
		{"nil", nil, `{}`},
		{"nil map", nilMap, `{}`},
		{"nil pointer", nilPtr, `{}`},
		{"string", "s", `"s"`},
		{"zero number", 0, `0`},
		{"struct", struct {
			A int `json:"a"`
		}{1}, `{"a":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := agui.NewCustomEvent("subagent.status", tc.value, t0)
			if err := ev.Validate(); err != nil {
				t.Fatal(err)
			}
			b, _ := ev.ToJSON()
			want := fmt.Sprintf(`{"type":"CUSTOM","timestamp":%d,"name":"subagent.status","value":%s}`, t0.UnixMilli(), tc.want)
			if string(b) != want {
				t.Errorf("got %s\nwant %s", b, want)
			}
		})
	}
	if ev := agui.NewCustomEvent("", nil, time.Time{}); ev.Name != agui.EventCustomFallback || ev.Timestamp() == nil {
		t.Errorf("defaults: %+v", ev)
	}
}

func collect(ch <-chan events.Event) []events.Event {
	var out []events.Event
	for e := range ch {
		out = append(out, e)
	}
	return out
}

func TestWrapStream(t *testing.T) {
	defer goleak.VerifyNone(t)
	t.Run("terminal ends the stream", func(t *testing.T) {
		in := make(chan P, 8)
		in <- P{Kind: agentadaptor.KindRunStarted}
		in <- P{Kind: agentadaptor.KindTextDelta, Delta: "a"}
		in <- P{Kind: agentadaptor.KindRunFinished}
		evs := collect(agui.WrapStream(context.Background(), in, testOptions()))
		if got := strings.Join(types(evs), " "); got != "RUN_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END RUN_FINISHED" {
			t.Errorf("got %s", got)
		}
		checkValid(t, evs)
	})
	t.Run("closed input without terminal ends with RUN_ERROR stream_ended", func(t *testing.T) {
		in := make(chan P, 8)
		in <- P{Kind: agentadaptor.KindRunStarted}
		close(in)
		evs := collect(agui.WrapStream(context.Background(), in, testOptions()))
		if len(evs) != 2 || jsonOf(t, evs[1])["code"] != agui.CodeStreamEnded {
			t.Errorf("got %v", types(evs))
		}
		checkValid(t, evs)
	})
	t.Run("context end stops the goroutine", func(t *testing.T) {
		in := make(chan P) // never written
		ctx, cancel := context.WithCancel(context.Background())
		out := agui.WrapStream(ctx, in, testOptions())
		cancel()
		if evs := collect(out); len(evs) != 0 {
			t.Errorf("got %v", types(evs))
		}
	})
	t.Run("context end while the consumer does not read", func(t *testing.T) {
		in := make(chan P, 200)
		in <- P{Kind: agentadaptor.KindRunStarted}
		for range 150 {
			in <- P{Name: "x"}
		}
		ctx, cancel := context.WithCancel(context.Background())
		out := agui.WrapStream(ctx, in, testOptions())
		// Wait until the goroutine has filled the channel (and so blocks).
		testenv.WaitUntil(t, "the output channel to fill", func() bool { return len(out) == cap(out) })
		cancel()
		collect(out)
	})
}
