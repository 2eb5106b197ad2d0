package aguiverify

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
)

// sse builds a stream with ids 1..n from JSON data lines.
func sse(datas ...string) string {
	var b strings.Builder
	for i, d := range datas {
		fmt.Fprintf(&b, "id: %d\ndata: %s\n\n", i+1, d)
	}
	return b.String()
}

const (
	rs = `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`
	rf = `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`
	re = `{"type":"RUN_ERROR","message":"boom","code":"x"}`
)

func TestFrames(t *testing.T) {
	in := ": comment\n\nid: 1\r\nevent: message\r\ndata: {\"a\":\ndata: 1}\r\n\r\n: keep-alive\n\nid: 2\ndata:{\"b\":2}\n\nid: 3\ndata: {}"
	fs, err := Frames(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 3 {
		t.Fatalf("got %d frames: %+v", len(fs), fs)
	}
	if fs[0].ID != "1" || fs[0].Event != "message" || string(fs[0].Data) != "{\"a\":\n1}" || fs[0].Line != 3 {
		t.Errorf("frame 0 = %+v", fs[0])
	}
	if fs[1].ID != "2" || string(fs[1].Data) != `{"b":2}` {
		t.Errorf("frame 1 = %+v", fs[1])
	}
	if fs[2].ID != "3" || string(fs[2].Data) != `{}` {
		t.Errorf("frame 2 (unterminated) = %+v", fs[2])
	}
}

func TestVerify(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		opts   []Option
		rules  []string // expected violated rules, in order; nil = valid
	}{
		{"minimal finished", sse(rs, rf), nil, nil},
		{"minimal error", sse(rs, re), nil, nil},
		{"full valid stream", sse(rs,
			`{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}`,
			`{"type":"TEXT_MESSAGE_END","messageId":"m"}`,
			`{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"t"}`,
			`{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"{}"}`,
			`{"type":"TOOL_CALL_END","toolCallId":"c"}`,
			`{"type":"TOOL_CALL_RESULT","toolCallId":"c","messageId":"r1","content":"ok","role":"tool"}`,
			`{"type":"REASONING_START","messageId":"x"}`,
			`{"type":"REASONING_MESSAGE_START","messageId":"x","role":"reasoning"}`,
			`{"type":"REASONING_MESSAGE_CONTENT","messageId":"x","delta":"d"}`,
			`{"type":"REASONING_MESSAGE_END","messageId":"x"}`,
			`{"type":"REASONING_END","messageId":"x"}`,
			`{"type":"SUBAGENT_STARTED","subagentRunId":"s","name":"research"}`,
			`{"type":"SUBAGENT_FINISHED","subagentRunId":"s"}`,
			`{"type":"CUSTOM","name":"subagent.status","value":null}`,
			`{"type":"ACTIVITY_SNAPSHOT","messageId":"a","activityType":"x","content":{}}`,
			`{"type":"SOMETHING_NEW","x":1}`,
			rf), nil, nil},
		{"first event not RUN_STARTED", sse(`{"type":"CUSTOM","name":"x","value":1}`, rs, rf), nil, []string{"run-started-first", "run-started-once"}},
		{"missing terminal", sse(rs), nil, []string{"terminal"}},
		{"missing terminal allowed", sse(rs), []Option{AllowMissingTerminal()}, nil},
		{"empty stream", "", nil, []string{"empty"}},
		{"two terminals", sse(rs, rf, re), nil, []string{"after-terminal"}},
		{"event after terminal", sse(rs, re, `{"type":"CUSTOM","name":"x","value":1}`), nil, []string{"after-terminal"}},
		{"text pairing", sse(rs,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a"}`,
			`{"type":"TEXT_MESSAGE_START","messageId":"m"}`,
			`{"type":"TEXT_MESSAGE_START","messageId":"m"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`,
			rf), nil, []string{"text-pairing", "text-pairing", "field", "open-at-terminal"}},
		{"text end without start", sse(rs, `{"type":"TEXT_MESSAGE_END","messageId":"m"}`, rf), nil, []string{"text-pairing"}},
		{"bad text role", sse(rs, `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"tool"}`, `{"type":"TEXT_MESSAGE_END","messageId":"m"}`, rf), nil, []string{"field"}},
		{"tool pairing and result before end", sse(rs,
			`{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"x"}`,
			`{"type":"TOOL_CALL_START","toolCallId":"c"}`,
			`{"type":"TOOL_CALL_RESULT","toolCallId":"c","messageId":"m","content":"x"}`,
			`{"type":"TOOL_CALL_END","toolCallId":"c"}`,
			`{"type":"TOOL_CALL_END","toolCallId":"c"}`,
			`{"type":"TOOL_CALL_RESULT","toolCallId":"c","messageId":"m","content":[{"type":"text","text":"x"}]}`,
			rf), nil, []string{"tool-pairing", "field", "tool-result", "tool-pairing", "tool-result"}},
		{"tool call open at error", sse(rs, `{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"t"}`, re), nil, []string{"open-at-terminal"}},
		{"reasoning pairing", sse(rs,
			`{"type":"REASONING_MESSAGE_CONTENT","messageId":"x","delta":"d"}`,
			`{"type":"REASONING_MESSAGE_START","messageId":"x","role":"assistant"}`,
			`{"type":"REASONING_END","messageId":"x"}`,
			`{"type":"REASONING_START","messageId":"y"}`,
			rf), nil, []string{"reasoning-pairing", "field", "reasoning-pairing", "open-at-terminal", "open-at-terminal"}},
		{"thinking events", sse(rs, `{"type":"THINKING_START"}`, rf), nil, []string{"no-thinking"}},
		{"custom without value or name", sse(rs, `{"type":"CUSTOM","name":"x"}`, `{"type":"CUSTOM","value":1}`, rf), nil, []string{"custom-value", "field"}},
		{"cancelled outcome", sse(rs, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"}}`), nil, []string{"outcome"}},
		{"success outcome", sse(rs, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success"}}`), nil, nil},
		{"null result", sse(rs, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":null}`), nil, []string{"field"}},
		{"run error without message", sse(rs, `{"type":"RUN_ERROR","code":1}`), nil, []string{"field", "field"}},
		{"run started without ids", sse(`{"type":"RUN_STARTED"}`, rf), nil, []string{"field", "field"}},
		{"subagent pairing", sse(rs, `{"type":"SUBAGENT_FINISHED","subagentRunId":"s"}`, `{"type":"SUBAGENT_STARTED","subagentRunId":"t","name":"n"}`, rf), nil,
			[]string{"subagent-pairing", "open-at-terminal"}},
		{"not json", sse(rs, `nope`, `[1]`, `{"x":1}`, rf), nil, []string{"json", "json", "type"}},
		{"bad timestamp", sse(rs, `{"type":"CUSTOM","name":"x","value":1,"timestamp":1.5}`, `{"type":"CUSTOM","name":"x","value":1,"timestamp":"1"}`, rf), nil, []string{"timestamp", "timestamp"}},
		{"ids must increase", "id: 1\ndata: " + rs + "\n\nid: 1\ndata: " + rf + "\n\n", nil, []string{"frame-id"}},
		{"ids must be numeric and present", "id: a\ndata: " + rs + "\n\ndata: " + rf + "\n\n", nil, []string{"frame-id", "frame-id"}},
		{"ids optional", "data: " + rs + "\n\ndata: " + rf + "\n\n", []Option{WithoutFrameIDs()}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyReader(strings.NewReader(tc.stream), tc.opts...)
			var got []string
			for _, v := range Violations(err) {
				got = append(got, v.Rule)
			}
			if !slices.Equal(got, tc.rules) {
				t.Errorf("rules = %v, want %v\n%v", got, tc.rules, err)
			}
			if (err == nil) != (tc.rules == nil) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestErrorMessageListsEveryViolation(t *testing.T) {
	err := VerifyReader(strings.NewReader(sse(`{"type":"CUSTOM","name":"x"}`)))
	msg := err.Error()
	for _, want := range []string{"3 violation(s)", "[run-started-first]", "[custom-value]", "[terminal]", "id=1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if Violations(fmt.Errorf("other")) != nil {
		t.Error("Violations of a foreign error")
	}
}

func TestVerifyEvents(t *testing.T) {
	evs := []events.Event{
		events.NewRunStartedEvent("t", "r"),
		events.NewCustomEvent("x"), // no value: invalid for @ag-ui/core 1.0
		events.NewRunFinishedEvent("t", "r"),
	}
	got := Violations(VerifyEvents(evs))
	if len(got) != 1 || got[0].Rule != "custom-value" || got[0].Index != 1 {
		t.Errorf("got %v", got)
	}
}
