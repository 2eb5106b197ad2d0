package scripted

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"
)

// A Scenario is the ordered list of steps the scripted agent performs in one
// session. Steps run one after another; an `ask` step ends the turn and the
// next turn of the same session resumes after it.
type Scenario struct {
	Steps []Step
	// StreamDelay is slept between text deltas when streaming, so that a UI
	// can show text arriving. Zero by default.
	StreamDelay time.Duration
	// Repeat makes a turn that resumes a session whose steps have all run
	// start over from the first step, so that every turn of a chat gets an
	// answer. Without it such a turn performs no step.
	Repeat bool
}

// Step is one scripted action. Exactly one of its fields is set; Kind names it.
type Step struct {
	Kind      string        `json:"kind"`
	Say       string        `json:"say,omitempty"`
	Call      *CallStep     `json:"call,omitempty"`
	SayResult string        `json:"say_result,omitempty"`
	Sleep     time.Duration `json:"sleep,omitempty"`
	Artifact  *ArtifactStep `json:"artifact,omitempty"`
	Ask       string        `json:"ask,omitempty"`
	Fail      string        `json:"fail,omitempty"`
	// Parallel holds the steps of a `parallel:` step (call and sleep steps
	// only), run at once; the step ends when all of them have.
	Parallel []Step `json:"parallel,omitempty"`
}

// CallStep calls an MCP tool by name on whichever MCP server of the run offers
// it. Tool may be the bare tool name or Claude's mcp__<server>__<tool> form.
type CallStep struct {
	Tool string         `json:"tool" yaml:"tool"`
	Args map[string]any `json:"args,omitempty" yaml:"args"`
}

// ArtifactStep publishes a named artifact (remote side: the A2A bridge turns
// it into an A2A artifact).
type ArtifactStep struct {
	Name     string `json:"name" yaml:"name"`
	MimeType string `json:"mime_type,omitempty" yaml:"mime_type"`
	Text     string `json:"text" yaml:"text"`
}

// Step kinds.
const (
	StepSay       = "say"
	StepCall      = "call"
	StepSayResult = "say_result"
	StepSleep     = "sleep"
	StepArtifact  = "artifact"
	StepAsk       = "ask"
	StepFail      = "fail"
	StepParallel  = "parallel"
)

var stepKinds = []string{StepSay, StepCall, StepSayResult, StepSleep, StepArtifact, StepAsk, StepFail, StepParallel}

// parallelKinds are the steps a `parallel:` step may hold: the ones that
// wait (for a tool result, for time) and write nothing but their own
// tool_call and tool_result lines, so running them at once is well defined.
var parallelKinds = []string{StepCall, StepSleep}

// ScenarioError reports an invalid scenario: the file, the 0-based index of
// the step (-1 for the document as a whole), the source line when known, and
// the reason.
type ScenarioError struct {
	File   string
	Step   int
	Line   int
	Reason string
}

// Error implements error.
func (e *ScenarioError) Error() string {
	var b strings.Builder
	b.WriteString("scenario ")
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("(inline)")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Step >= 0 {
		fmt.Fprintf(&b, ": step %d", e.Step)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// LoadScenario reads and validates a scenario file (YAML or JSON).
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ScenarioError{File: path, Step: -1, Reason: err.Error()}
	}
	return ParseScenario(path, data)
}

// ParseScenario parses and validates scenario data. The top level is the list
// of steps, or a mapping with a `steps:` key holding that list (and optional
// `stream_delay:` duration and `repeat:` boolean). name is used in errors
// only.
func ParseScenario(name string, data []byte) (*Scenario, error) {
	fail := func(step, line int, format string, args ...any) error {
		return &ScenarioError{File: name, Step: step, Line: line, Reason: fmt.Sprintf(format, args...)}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fail(-1, 0, "not valid YAML or JSON: %v", err)
	}
	if len(doc.Content) == 0 {
		return nil, fail(-1, 0, "empty document: want a list of steps")
	}
	root := doc.Content[0]
	sc := &Scenario{}
	list := root
	if root.Kind == yaml.MappingNode {
		list = nil
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i], root.Content[i+1]
			switch k.Value {
			case "steps":
				list = v
			case "stream_delay":
				d, err := time.ParseDuration(v.Value)
				if err != nil || d < 0 {
					return nil, fail(-1, v.Line, "stream_delay %q is not a duration such as 40ms", v.Value)
				}
				sc.StreamDelay = d
			case "repeat":
				if err := v.Decode(&sc.Repeat); err != nil || v.Kind != yaml.ScalarNode {
					return nil, fail(-1, v.Line, "repeat %q is not true or false", v.Value)
				}
			default:
				return nil, fail(-1, k.Line, "unknown top-level field %q (want steps, stream_delay, repeat)", k.Value)
			}
		}
		if list == nil {
			return nil, fail(-1, root.Line, "mapping has no steps: list")
		}
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fail(-1, list.Line, "want a list of steps, got %s", nodeKind(list))
	}
	if len(list.Content) == 0 {
		return nil, fail(-1, list.Line, "the scenario has no steps")
	}
	for i, n := range list.Content {
		st, err := parseStep(n)
		if err != nil {
			line := n.Line
			var le *lineError
			if errors.As(err, &le) {
				line = le.line
			}
			return nil, fail(i, line, "%v", err)
		}
		sc.Steps = append(sc.Steps, st)
	}
	return sc, nil
}

func parseStep(n *yaml.Node) (Step, error) {
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return Step{}, fmt.Errorf("a step is a mapping with exactly one of %s", strings.Join(stepKinds, ", "))
	}
	k, v := n.Content[0], n.Content[1]
	st := Step{Kind: k.Value}
	scalar := func() (string, error) {
		if v.Kind != yaml.ScalarNode {
			return "", fmt.Errorf("%s wants a text, got %s", k.Value, nodeKind(v))
		}
		return v.Value, nil
	}
	var err error
	switch k.Value {
	case StepSay:
		if st.Say, err = scalar(); err == nil {
			err = checkTemplate(k.Value, st.Say)
		}
	case StepAsk:
		if st.Ask, err = scalar(); err == nil {
			err = checkTemplate(k.Value, st.Ask)
		}
	case StepFail:
		st.Fail, err = scalar()
		if err == nil && st.Fail == "" {
			err = fmt.Errorf("fail wants a message")
		}
	case StepSayResult:
		st.SayResult, err = scalar()
		if err == nil {
			_, err = parseResultTemplate(st.SayResult)
		}
	case StepSleep:
		var s string
		if s, err = scalar(); err == nil {
			st.Sleep, err = time.ParseDuration(s)
			if err != nil || st.Sleep < 0 {
				err = fmt.Errorf("sleep %q is not a duration such as 500ms or 2s", s)
			}
		}
	case StepCall:
		var c CallStep
		if err = decodeStrict(v, &c, "tool", "args"); err == nil {
			if c.Tool == "" {
				err = fmt.Errorf("call is missing tool: the name of the MCP tool to call")
			} else {
				_, err = mapStrings(c.Args, func(s string) (string, error) { return s, checkTemplate("call args", s) })
			}
			st.Call = &c
		}
	case StepArtifact:
		var a ArtifactStep
		if err = decodeStrict(v, &a, "name", "mime_type", "text"); err == nil {
			if a.Name == "" {
				err = fmt.Errorf("artifact is missing name")
			} else if err = checkTemplate("artifact name", a.Name); err == nil {
				err = checkTemplate("artifact text", a.Text)
			}
			if a.MimeType == "" {
				a.MimeType = "text/plain"
			}
			st.Artifact = &a
		}
	case StepParallel:
		st.Parallel, err = parseParallel(v)
	default:
		return Step{}, fmt.Errorf("unknown step %q (want one of %s)", k.Value, strings.Join(stepKinds, ", "))
	}
	return st, err
}

// lineError is an error in a step nested in a `parallel:` step, with that
// step's source line.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return e.err.Error() }

// parseParallel parses the list of a `parallel:` step: at least one step,
// each a call or a sleep.
func parseParallel(v *yaml.Node) ([]Step, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("parallel wants a list of %s steps, got %s", strings.Join(parallelKinds, " or "), nodeKind(v))
	}
	if len(v.Content) == 0 {
		return nil, fmt.Errorf("parallel has no steps: give it a list of %s steps", strings.Join(parallelKinds, " or "))
	}
	out := make([]Step, 0, len(v.Content))
	for j, n := range v.Content {
		bad := func(format string, args ...any) error {
			return &lineError{n.Line, fmt.Errorf("parallel item %d: "+format, append([]any{j}, args...)...)}
		}
		if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
			return nil, bad("a step is a mapping with exactly one of %s", strings.Join(parallelKinds, ", "))
		}
		switch kind := n.Content[0].Value; {
		case slices.Contains(parallelKinds, kind):
		case slices.Contains(stepKinds, kind):
			return nil, bad("%s cannot run in parallel (parallel holds %s steps; put it before or after the parallel step)", kind, strings.Join(parallelKinds, " and "))
		default:
			return nil, bad("unknown step %q (want %s)", kind, strings.Join(parallelKinds, " or "))
		}
		st, err := parseStep(n)
		if err != nil {
			return nil, bad("%v", err)
		}
		out = append(out, st)
	}
	return out, nil
}

func decodeStrict(v *yaml.Node, into any, fields ...string) error {
	if v.Kind != yaml.MappingNode {
		return fmt.Errorf("want a mapping with %s, got %s", strings.Join(fields, ", "), nodeKind(v))
	}
	for i := 0; i < len(v.Content); i += 2 {
		name := v.Content[i].Value
		ok := false
		for _, f := range fields {
			ok = ok || f == name
		}
		if !ok {
			return fmt.Errorf("unknown field %q (want %s)", name, strings.Join(fields, ", "))
		}
	}
	return v.Decode(into)
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a scalar"
	default:
		return "nothing"
	}
}

// ResultData is the last tool result as templates see it: its text, its
// structured content (or the text parsed as JSON) and whether it was an
// error. Example: "The remote agent said: {{.JSON.summary}}".
//
// After a `parallel:` step the last result is that of all its calls
// together, in the order the calls are listed (not the order they
// finished): Text is their texts joined by newlines, JSON the list of
// their JSON values, IsError true when any of them is an error; each one
// is in [TemplateData.Results]. A parallel step without calls leaves the
// last result as it was.
type ResultData struct {
	Text    string
	JSON    any
	IsError bool
}

// TemplateData is what the templates of a scenario see: Prompt is this
// turn's prompt (for a chat, the user's message; for an answer to `ask`, the
// answer), the fields of [ResultData] are the last tool result's, and
// Results lists the results of the last `call` (one) or `parallel` step
// (one per call, in the listed order).
// say_result is always a template; say, ask, artifact name and text, and the
// string values of call args are templates when they contain "{{".
// Example: `call: {tool: delegate_to_agent, args: {objective: "{{.Prompt}}"}}`;
// after a parallel step, `{{range .Results}}{{.JSON.summary}}{{"\n"}}{{end}}`.
type TemplateData struct {
	Prompt string
	ResultData
	Results []ResultData
}

// combineResults is the last result after a parallel step's calls (see
// [ResultData]).
func combineResults(rs []ResultData) *ResultData {
	out := &ResultData{}
	texts := make([]string, len(rs))
	list := make([]any, len(rs))
	for i, r := range rs {
		texts[i], list[i] = r.Text, r.JSON
		out.IsError = out.IsError || r.IsError
	}
	out.Text, out.JSON = strings.Join(texts, "\n"), list
	return out
}

func parseResultTemplate(s string) (*template.Template, error) {
	t, err := template.New("say_result").Option("missingkey=zero").Parse(s)
	if err != nil {
		return nil, fmt.Errorf("say_result is not a valid template: %v", err)
	}
	return t, nil
}

// isTemplate tells the texts that are templates (say_result always is).
func isTemplate(s string) bool { return strings.Contains(s, "{{") }

func checkTemplate(what, s string) error {
	if !isTemplate(s) {
		return nil
	}
	if _, err := template.New(what).Option("missingkey=zero").Parse(s); err != nil {
		return fmt.Errorf("%s is not a valid template: %v", what, err)
	}
	return nil
}

// mapStrings returns a copy of v (a call's args: maps, lists, scalars) in
// which every string is replaced with f's result.
func mapStrings(v any, f func(string) (string, error)) (any, error) {
	switch x := v.(type) {
	case string:
		return f(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := mapStrings(e, f)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := mapStrings(e, f)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	default:
		return v, nil
	}
}
