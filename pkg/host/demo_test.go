package host_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestDemoAnswersEveryMessage: the embedded demo answers each message of a
// thread (the scripted parent's session is resumed for the second one), and
// each time delegates the user's own words to its research agent, whose
// reply is about them.
func TestDemoAnswersEveryMessage(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	_, srv := newHost(t, nil)
	history := []map[string]string{}
	for i, msg := range []string{"How do penguins sleep?", "And whales?"} {
		history = append(history, map[string]string{"id": "u" + string(rune('1'+i)), "role": "user", "content": msg})
		body, _ := json.Marshal(map[string]any{"threadId": "thread-demo", "runId": "run-demo-" + string(rune('1'+i)),
			"messages": history, "tools": []any{}, "context": []any{}, "state": map[string]any{}, "forwardedProps": map[string]any{}})
		resp := post(t, srv.URL+"/agui", string(body))
		stream, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		objective, parent, remote := "", "", ""
		for l := range strings.SplitSeq(string(stream), "\n") {
			data, ok := strings.CutPrefix(l, "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Type, Delta, Name string
				Value             struct{ Delta string }
			}
			_ = json.Unmarshal([]byte(data), &ev)
			switch {
			case ev.Type == "TOOL_CALL_ARGS":
				var args struct{ Objective string }
				_ = json.Unmarshal([]byte(ev.Delta), &args)
				objective = args.Objective
			case ev.Type == "TEXT_MESSAGE_CONTENT":
				parent += ev.Delta
			case ev.Name == "subagent.text.delta":
				remote += ev.Value.Delta
			}
		}
		if !bytes.Contains(stream, []byte("RUN_FINISHED")) || objective != msg || !strings.Contains(remote, msg) ||
			!strings.Contains(parent, "The research agent answered “"+msg+"”") {
			t.Fatalf("message %d %q: objective %q, remote said %q, parent said %q\n%s", i+1, msg, objective, remote, parent, stream)
		}
	}
}
