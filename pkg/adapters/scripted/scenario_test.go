package scripted_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
)

func TestParseScenario(t *testing.T) {
	good := []struct{ name, doc string }{
		{"list", "- say: hi\n- sleep: 10ms\n- call: {tool: whoami, args: {a: 1}}\n- say_result: \"{{.JSON.x}}\"\n- artifact: {name: n.md, text: t}\n- ask: why?\n- fail: boom\n"},
		{"steps mapping", "stream_delay: 5ms\nsteps:\n  - say: hi\n"},
		{"json", `[{"say":"hi"},{"call":{"tool":"t"}}]`},
		{"parallel", "- parallel:\n    - call: {tool: a, args: {n: \"{{.Prompt}}\"}}\n    - sleep: 1ms\n    - call: {tool: b}\n- say_result: \"{{range .Results}}{{.Text}}{{end}}\"\n"},
		{"repeat and templates", "repeat: true\nsteps:\n  - say: \"{{.Prompt}}\"\n  - call: {tool: t, args: {a: [\"{{.Prompt}}\"]}}\n"},
	}
	for _, tt := range good {
		if _, err := scripted.ParseScenario(tt.name, []byte(tt.doc)); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	sc, _ := scripted.ParseScenario("x", []byte("stream_delay: 5ms\nsteps:\n  - artifact: {name: n.md, text: t}\n"))
	if sc.StreamDelay != 5*time.Millisecond || sc.Steps[0].Artifact.MimeType != "text/plain" || sc.Repeat {
		t.Errorf("parsed %+v", sc)
	}
	if sc, _ := scripted.ParseScenario("x", []byte("repeat: true\nsteps:\n  - say: hi\n")); !sc.Repeat {
		t.Errorf("repeat: true parsed as %+v", sc)
	}

	bad := []struct {
		name, doc string
		step      int
		reason    string
	}{
		{"unknown step", "- say: hi\n- shout: HI\n", 1, `unknown step "shout"`},
		{"bad duration", "- sleep: soon\n", 0, "not a duration"},
		{"negative duration", "- sleep: -1s\n", 0, "not a duration"},
		{"missing tool", "- call: {args: {a: 1}}\n", 0, "missing tool"},
		{"unknown call field", "- call: {tool: t, endpoint_url: x}\n", 0, `unknown field "endpoint_url"`},
		{"two keys", "- say: a\n  ask: b\n", 0, "exactly one"},
		{"bad template", "- say_result: \"{{.Text\"\n", 0, "not a valid template"},
		{"bad say template", "- say: hi\n- say: \"{{.Prompt\"\n", 1, "say is not a valid template"},
		{"bad call args template", "- call: {tool: t, args: {a: {b: \"{{if}}\"}}}\n", 0, "call args is not a valid template"},
		{"bad repeat", "repeat: sometimes\nsteps:\n  - say: hi\n", -1, "not true or false"},
		{"empty fail", "- fail: \"\"\n", 0, "fail wants a message"},
		{"artifact without name", "- artifact: {text: t}\n", 0, "missing name"},
		{"not a list", "say: hi\n", -1, "unknown top-level field"},
		{"empty", "[]\n", -1, "no steps"},
		{"parallel not a list", "- parallel: {call: {tool: t}}\n", 0, "parallel wants a list of call or sleep steps, got a mapping"},
		{"parallel empty", "- say: hi\n- parallel: []\n", 1, "parallel has no steps"},
		{"parallel say", "- parallel:\n    - call: {tool: t}\n    - say: hi\n", 0, "parallel item 1: say cannot run in parallel"},
		{"parallel nested", "- parallel:\n    - parallel: [{call: {tool: t}}]\n", 0, "parallel item 0: parallel cannot run in parallel"},
		{"parallel ask", "- parallel: [{ask: why}]\n", 0, "ask cannot run in parallel"},
		{"parallel unknown", "- parallel: [{shout: hi}]\n", 0, `parallel item 0: unknown step "shout" (want call or sleep)`},
		{"parallel two keys", "- parallel: [{call: {tool: t}, sleep: 1s}]\n", 0, "parallel item 0: a step is a mapping with exactly one of call, sleep"},
		{"parallel bad call", "- parallel:\n    - call: {tool: t}\n    - call: {args: {a: 1}}\n", 0, "parallel item 1: call is missing tool"},
		{"parallel bad sleep", "- parallel: [{sleep: soon}]\n", 0, "parallel item 0: sleep \"soon\" is not a duration"},
		{"not yaml", "- say: [\n", -1, "not valid YAML"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scripted.ParseScenario("scenario.yaml", []byte(tt.doc))
			var se *scripted.ScenarioError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *ScenarioError", err)
			}
			if se.File != "scenario.yaml" || se.Step != tt.step || !strings.Contains(se.Reason, tt.reason) {
				t.Fatalf("got file %q step %d reason %q; want step %d reason containing %q", se.File, se.Step, se.Reason, tt.step, tt.reason)
			}
			if !strings.Contains(err.Error(), "scenario.yaml") {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
}

// An error in a step inside parallel names the parallel step's index and
// the nested step's own line.
func TestParallelErrorLine(t *testing.T) {
	_, err := scripted.ParseScenario("s.yaml", []byte("- say: hi\n- parallel:\n    - call: {tool: t}\n    - call: {tool: \"\"}\n"))
	var se *scripted.ScenarioError
	if !errors.As(err, &se) || se.Step != 1 || se.Line != 4 {
		t.Fatalf("err = %#v, want step 1 at line 4", err)
	}
	if want := "scenario s.yaml:4: step 1: parallel item 1: call is missing tool"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want it to start with %q", err, want)
	}
}

func TestBadScenarioFailsBeforeTheRunStarts(t *testing.T) {
	if _, err := scripted.New(scripted.Config{ScenarioData: []byte("- shout: hi\n")}); err == nil {
		t.Fatal("New accepted an invalid scenario")
	}
}
