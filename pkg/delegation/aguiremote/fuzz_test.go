package aguiremote

import (
	"bytes"
	"encoding/json"
	"testing"

	aguiclient "github.com/seed0634/agentadaptor/pkg/clients/agui"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// FuzzAGUIEventMapping feeds arbitrary AG-UI event sequences (one JSON
// event per line) through the client's decoder and the AG-UI mapper: it
// must never panic, must emit subagent.started first, at most one terminal
// event and nothing after it, only the ten known kinds, and events that
// serialize.
func FuzzAGUIEventMapping(f *testing.F) {
	for _, s := range []string{
		`{"type":"RUN_STARTED","threadId":"t","runId":"r"}` + "\n" + `{"type":"TEXT_MESSAGE_START","messageId":"m"}` + "\n" +
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}` + "\n" + `{"type":"TEXT_MESSAGE_END","messageId":"m"}` + "\n" +
			`{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":"done"}`,
		`{"type":"TEXT_MESSAGE_CHUNK","delta":"x"}` + "\n" + `{"type":"TEXT_MESSAGE_CHUNK","messageId":"b","delta":"y"}` + "\n" + `{"type":"RUN_ERROR","message":"m","code":"c"}`,
		`{"type":"TOOL_CALL_START","toolCallId":"1","toolCallName":"s"}` + "\n" + `{"type":"TOOL_CALL_ARGS","toolCallId":"1","delta":"{"}` + "\n" +
			`{"type":"TOOL_CALL_END","toolCallId":"1"}` + "\n" + `{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"1","content":"c"}` + "\n" +
			`{"type":"TOOL_CALL_CHUNK","toolCallId":"2","delta":"x"}`,
		`{"type":"CUSTOM","name":"agent.artifact","value":{"name":"../../x","mime_type":"a/b;;","text":"\u0000"}}` + "\n" +
			`{"type":"CUSTOM","name":"artifact","value":{"name":"u","uri":"javascript:1"}}` + "\n" + `{"type":"CUSTOM","name":"agent.artifact","value":7}`,
		`{"type":"CUSTOM","name":"subagent.started","value":{"delegationId":"d","agentName":1}}` + "\n" + `{"type":"SUBAGENT_STARTED","subagentRunId":"s","name":"n"}` + "\n" +
			`{"type":"SUBAGENT_FINISHED","subagentRunId":"s","result":{"a":[1,2]}}` + "\n" + `{"type":"THINKING_START"}`,
		`{"type":"CUSTOM","name":"agent.input_required","value":{"text":"q?"}}` + "\n" + `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"r","message":"m"}]}}`,
		`{"type":"STEP_STARTED","stepName":"s"}` + "\n" + `{"type":"RAW","event":{"x":1},"source":"y"}` + "\n" + `{"type":"STATE_DELTA","delta":[]}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r"}` + "\n" + `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`,
		`{}`, `null`, `{"type":1}`, `{"type":"TEXT_MESSAGE_CONTENT","messageId":1}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, allowInput bool) {
		m := newMapper(remote.NewTranscript(remote.TranscriptConfig{AllowInput: allowInput, MaxArtifactBytes: 64}))
		var out []delegation.DelegationEvent
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			ev, err := aguiclient.DecodeEvent(line)
			if err != nil {
				continue // the client turns these into a KindProtocol error
			}
			out = append(out, m.Map(ev)...)
		}
		terminals := 0
		for i, ev := range out {
			if (i == 0) != (ev.Kind == delegation.DelegationStarted) {
				t.Fatalf("event %d is %s (started must be first and only once)", i, ev.Kind)
			}
			if !ev.Kind.Known() {
				t.Fatalf("unknown kind %q", ev.Kind)
			}
			if terminals > 0 {
				t.Fatalf("%s after the terminal event", ev.Kind)
			}
			if ev.Kind.Terminal() {
				terminals++
			}
			if _, err := json.Marshal(ev); err != nil {
				t.Fatalf("event does not serialize: %v", err)
			}
		}
		_ = m.t.Summary()
		_ = m.t.Messages()
	})
}
