package scripted_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
)

// turn runs one turn of the scripted agent in-process and returns its
// output lines.
func turn(t *testing.T, scenario, stateDir, prompt string, session ...string) []map[string]any {
	t.Helper()
	args := []string{"--scenario", scenario, "--state-dir", stateDir, "--prompt", prompt}
	args = append(args, session...)
	var out, errb bytes.Buffer
	if code := scripted.RunAgent(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("RunAgent %v: exit %d: %s", args, code, errb.String())
	}
	var lines []map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

func ofType(lines []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["type"] == typ {
			out = append(out, l)
		}
	}
	return out
}

func TestTemplatesSeeThePrompt(t *testing.T) {
	sc := writeScenario(t, `
- say: "You said: {{.Prompt}}"
- artifact: {name: "{{.Prompt}}.md", text: "Notes on {{.Prompt}}"}
- call: {tool: delegate_to_agent, args: {objective: "{{.Prompt}}", input: {prompt: "about {{.Prompt}}", n: 3}, fixed: "{no template}"}}
- say_result: "{{.Prompt}} / error: {{.IsError}}"
`)
	lines := turn(t, sc, t.TempDir(), "penguins", "--session-id", "session-templates")
	texts := ofType(lines, "text")
	if len(texts) != 2 || texts[0]["text"] != "You said: penguins" || texts[1]["text"] != "penguins / error: true" {
		t.Fatalf("texts: %v", texts)
	}
	art := ofType(lines, "artifact")
	if len(art) != 1 || art[0]["name"] != "penguins.md" || art[0]["text"] != "Notes on penguins" {
		t.Fatalf("artifact: %v", art)
	}
	call := ofType(lines, "tool_call")
	want := map[string]any{"objective": "penguins", "input": map[string]any{"prompt": "about penguins", "n": float64(3)}, "fixed": "{no template}"}
	if len(call) != 1 {
		t.Fatalf("tool calls: %v", call)
	}
	if got, _ := json.Marshal(call[0]["args"]); string(got) != mustJSON(want) {
		t.Fatalf("call args %s, want %s", got, mustJSON(want))
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestRepeatAnswersEveryTurn(t *testing.T) {
	dir := t.TempDir()
	sc := writeScenario(t, "repeat: true\nsteps:\n  - say: \"About {{.Prompt}}\"\n")
	first := turn(t, sc, dir, "penguins", "--session-id", "session-repeat")
	second := turn(t, sc, dir, "whales", "--resume", "session-repeat")
	a, b := ofType(first, "text"), ofType(second, "text")
	if len(a) != 1 || a[0]["text"] != "About penguins" || len(b) != 1 || b[0]["text"] != "About whales" {
		t.Fatalf("turns said %v then %v", a, b)
	}
	if a[0]["message_id"] == b[0]["message_id"] {
		t.Fatalf("both turns used message id %v", a[0]["message_id"])
	}
	if r := ofType(second, "result"); len(r) != 1 || r[0]["status"] != "completed" || r[0]["output"] != "About whales" {
		t.Fatalf("second result: %v", r)
	}

	// Without repeat, a session whose steps have all run has nothing more to say.
	once := writeScenario(t, "- say: hi\n")
	turn(t, once, dir, "x", "--session-id", "session-once")
	if again := ofType(turn(t, once, dir, "y", "--resume", "session-once"), "text"); len(again) != 0 {
		t.Fatalf("a finished scenario without repeat said %v", again)
	}
}

func TestAskResumesWithTheAnswerAsPrompt(t *testing.T) {
	dir := t.TempDir()
	sc := writeScenario(t, "repeat: true\nsteps:\n  - ask: \"Which {{.Prompt}}?\"\n  - say: \"Looking at {{.Prompt}}\"\n")
	asked := turn(t, sc, dir, "release", "--session-id", "session-ask")
	if q := ofType(asked, "ask"); len(q) != 1 || q[0]["text"] != "Which release?" {
		t.Fatalf("ask: %v", q)
	}
	if r := ofType(asked, "result"); r[0]["status"] != "input_required" {
		t.Fatalf("result: %v", r)
	}
	answered := turn(t, sc, dir, "v2.4", "--resume", "session-ask")
	if s := ofType(answered, "text"); len(s) != 1 || s[0]["text"] != "Looking at v2.4" {
		t.Fatalf("after the answer: %v", s)
	}
	// repeat: the next turn starts over and asks again.
	if q := ofType(turn(t, sc, dir, "topic", "--resume", "session-ask"), "ask"); len(q) != 1 || q[0]["text"] != "Which topic?" {
		t.Fatalf("third turn: %v", q)
	}
}
