package aguiverify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
)

// Frame is one SSE event frame.
type Frame struct {
	// ID is the frame's id: field ("" when absent).
	ID string
	// Event is the frame's event: field ("" when absent).
	Event string
	// Data is the frame's data: lines joined with "\n".
	Data []byte
	// Line is the 1-based line number where the frame starts.
	Line int
}

// Frames parses an SSE byte stream into its frames. Comment lines (starting
// with ':') and frames without data are skipped; "\r\n" line endings are
// accepted. A final frame without its terminating blank line is returned too.
func Frames(r io.Reader) ([]Frame, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var (
		out   []Frame
		cur   Frame
		data  [][]byte
		has   bool
		line  int
		flush = func() {
			if len(data) > 0 {
				cur.Data = bytes.Join(data, []byte("\n"))
				out = append(out, cur)
			}
			cur, data, has = Frame{}, nil, false
		}
	)
	for sc.Scan() {
		line++
		l := strings.TrimSuffix(sc.Text(), "\r")
		if l == "" {
			flush()
			continue
		}
		if strings.HasPrefix(l, ":") {
			continue
		}
		if !has {
			cur.Line, has = line, true
		}
		field, value, _ := strings.Cut(l, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			cur.ID = value
		case "event":
			cur.Event = value
		case "data":
			data = append(data, []byte(value))
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("aguiverify: reading the SSE stream: %w", err)
	}
	flush()
	return out, nil
}

// Violation is one broken rule.
type Violation struct {
	Index   int    // 0-based event index in the stream
	FrameID string // the frame's id, if any
	Type    string // the event type, if known
	Rule    string // a short rule name, e.g. "run-started-first"
	Message string
}

// String formats the violation as "event I id=N TYPE: [rule] message".
func (v Violation) String() string {
	id := ""
	if v.FrameID != "" {
		id = " id=" + v.FrameID
	}
	return fmt.Sprintf("event %d%s %s: [%s] %s", v.Index, id, v.Type, v.Rule, v.Message)
}

// Error lists every violation of a stream.
type Error struct {
	Violations []Violation
}

// Error lists the violations, one per line.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "aguiverify: %d violation(s):", len(e.Violations))
	for _, v := range e.Violations {
		b.WriteString("\n  ")
		b.WriteString(v.String())
	}
	return b.String()
}

// Option adjusts the rules.
type Option func(*config)

type config struct {
	noIDs        bool
	unnumbered   bool
	allowUnended bool
}

// WithoutFrameIDs skips the frame-id rule (for streams without ids).
func WithoutFrameIDs() Option { return func(c *config) { c.noIDs = true } }

// AllowUnnumberedFrames accepts frames without an id: field (SSE allows
// them; they leave the client's last event id unchanged), as a resumed
// stream's re-opening preamble has. Ids that are present must still increase.
func AllowUnnumberedFrames() Option { return func(c *config) { c.unnumbered = true } }

// AllowMissingTerminal accepts a stream that ends without a terminal event,
// e.g. one captured from a client that disconnected.
func AllowMissingTerminal() Option { return func(c *config) { c.allowUnended = true } }

var errSkip = errors.New("unnumbered frame")

// Verify applies the rules to frames and returns nil or an *Error listing
// every violation.
func Verify(frames []Frame, opts ...Option) error {
	var c config
	for _, o := range opts {
		o(&c)
	}
	v := newVerifier(c)
	var last uint64
	for i, f := range frames {
		if !c.noIDs {
			n, err := strconv.ParseUint(f.ID, 10, 64)
			switch {
			case f.ID == "" && c.unnumbered:
				err = errSkip
			case f.ID == "":
				v.add(i, f.ID, "", "frame-id", "the frame has no id: field")
			case err != nil:
				v.add(i, f.ID, "", "frame-id", fmt.Sprintf("id %q is not a decimal integer", f.ID))
			case last > 0 && n <= last:
				v.add(i, f.ID, "", "frame-id", fmt.Sprintf("id %d does not increase (previous %d)", n, last))
			}
			if err == nil {
				last = n
			}
		}
		v.event(i, f.ID, f.Data)
	}
	return v.finish(len(frames))
}

// VerifyEvents applies the rules (without the frame-id rule) to Go SDK
// events, serialized with ToJSON as they would be on the wire.
func VerifyEvents(evs []events.Event, opts ...Option) error {
	frames := make([]Frame, 0, len(evs))
	for i, ev := range evs {
		b, err := ev.ToJSON()
		if err != nil {
			return fmt.Errorf("aguiverify: event %d (%s) does not serialize: %w", i, ev.Type(), err)
		}
		frames = append(frames, Frame{Data: b})
	}
	return Verify(frames, append(opts, WithoutFrameIDs())...)
}

// VerifyReader parses an SSE stream and verifies it.
func VerifyReader(r io.Reader, opts ...Option) error {
	frames, err := Frames(r)
	if err != nil {
		return err
	}
	return Verify(frames, opts...)
}

type verifier struct {
	cfg        config
	vs         []Violation
	started    bool
	terminal   int // index of the terminal event, -1 if none
	texts      map[string]bool
	reasonMsgs map[string]bool
	reasonSpan map[string]bool
	tools      map[string]bool // open
	ended      map[string]bool // ended tool calls
	subagents  map[string]bool
}

func newVerifier(c config) *verifier {
	return &verifier{cfg: c, terminal: -1, texts: map[string]bool{}, reasonMsgs: map[string]bool{},
		reasonSpan: map[string]bool{}, tools: map[string]bool{}, ended: map[string]bool{}, subagents: map[string]bool{}}
}

func (v *verifier) add(i int, id, typ, rule, msg string) {
	v.vs = append(v.vs, Violation{Index: i, FrameID: id, Type: typ, Rule: rule, Message: msg})
}

func str(m map[string]any, k string) (string, bool) {
	s, ok := m[k].(string)
	return s, ok
}

func (v *verifier) event(i int, id string, data []byte) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil {
		v.add(i, id, "", "json", fmt.Sprintf("data is not a JSON object: %.120q", data))
		return
	}
	if dec.More() {
		v.add(i, id, "", "json", "data holds more than one JSON value")
	}
	typ, ok := str(m, "type")
	if !ok || typ == "" {
		v.add(i, id, "", "type", "the event has no string type")
		return
	}
	bad := func(rule, format string, a ...any) { v.add(i, id, typ, rule, fmt.Sprintf(format, a...)) }
	need := func(field string) string {
		s, ok := str(m, field)
		if !ok || s == "" {
			bad("field", "%s must be a non-empty string", field)
		}
		return s
	}
	if ts, ok := m["timestamp"]; ok {
		if n, isNum := ts.(json.Number); !isNum {
			bad("timestamp", "timestamp must be a number")
		} else if _, err := n.Int64(); err != nil {
			bad("timestamp", "timestamp %s is not an integer", n)
		}
	}
	if v.terminal >= 0 {
		bad("after-terminal", "event after the terminal event (index %d)", v.terminal)
	}
	if !v.started && typ != "RUN_STARTED" {
		bad("run-started-first", "the first event must be RUN_STARTED")
		v.started = true // report once
	}
	switch typ {
	case "RUN_STARTED":
		need("threadId")
		need("runId")
		if v.started && i > 0 {
			bad("run-started-once", "RUN_STARTED occurs more than once or not first")
		}
		v.started = true
	case "RUN_FINISHED", "RUN_ERROR":
		if typ == "RUN_FINISHED" {
			need("threadId")
			need("runId")
			if oc, ok := m["outcome"]; ok && oc != nil {
				o, _ := oc.(map[string]any)
				t, _ := str(o, "type")
				if t != "success" && t != "interrupt" {
					bad("outcome", "outcome type %q is not success or interrupt (@ag-ui/core 0.0.59 rejects it)", t)
				}
			}
			if r, ok := m["result"]; ok && r == nil {
				bad("field", "result must not be null")
			}
		} else {
			need("message")
			if c, ok := m["code"]; ok {
				if _, isStr := c.(string); !isStr {
					bad("field", "code must be a string")
				}
			}
		}
		if v.terminal < 0 {
			v.terminal = i
		}
		v.checkClosed(i, id, typ)
	case "TEXT_MESSAGE_START":
		mid := need("messageId")
		if r, ok := m["role"]; ok {
			if s, _ := r.(string); s != "assistant" && s != "user" && s != "system" && s != "developer" {
				bad("field", "role %v is not a text message role", r)
			}
		}
		if v.texts[mid] {
			bad("text-pairing", "text message %q already started", mid)
		}
		v.texts[mid] = true
	case "TEXT_MESSAGE_CONTENT":
		mid := need("messageId")
		if !v.texts[mid] {
			bad("text-pairing", "content for text message %q that is not open", mid)
		}
		need("delta")
	case "TEXT_MESSAGE_END":
		mid := need("messageId")
		if !v.texts[mid] {
			bad("text-pairing", "end of text message %q that is not open", mid)
		}
		delete(v.texts, mid)
	case "TOOL_CALL_START":
		tid := need("toolCallId")
		need("toolCallName")
		if v.tools[tid] {
			bad("tool-pairing", "tool call %q already started", tid)
		}
		v.tools[tid] = true
	case "TOOL_CALL_ARGS":
		tid := need("toolCallId")
		if !v.tools[tid] {
			bad("tool-pairing", "args for tool call %q that is not open", tid)
		}
		need("delta")
	case "TOOL_CALL_END":
		tid := need("toolCallId")
		if !v.tools[tid] {
			bad("tool-pairing", "end of tool call %q that is not open", tid)
		}
		delete(v.tools, tid)
		v.ended[tid] = true
	case "TOOL_CALL_RESULT":
		tid := need("toolCallId")
		need("messageId")
		if _, ok := str(m, "content"); !ok {
			bad("tool-result", "content must be a string (@ag-ui/core 0.0.59 rejects content parts)")
		}
		if !v.ended[tid] {
			bad("tool-result", "result for tool call %q that was not started and ended", tid)
		}
	case "REASONING_START":
		mid := need("messageId")
		if v.reasonSpan[mid] {
			bad("reasoning-pairing", "reasoning span %q already started", mid)
		}
		v.reasonSpan[mid] = true
	case "REASONING_END":
		mid := need("messageId")
		if !v.reasonSpan[mid] {
			bad("reasoning-pairing", "end of reasoning span %q that is not open", mid)
		}
		delete(v.reasonSpan, mid)
	case "REASONING_MESSAGE_START":
		mid := need("messageId")
		if r, _ := str(m, "role"); r != "reasoning" {
			bad("field", "role must be \"reasoning\"")
		}
		if v.reasonMsgs[mid] {
			bad("reasoning-pairing", "reasoning message %q already started", mid)
		}
		v.reasonMsgs[mid] = true
	case "REASONING_MESSAGE_CONTENT":
		mid := need("messageId")
		if !v.reasonMsgs[mid] {
			bad("reasoning-pairing", "content for reasoning message %q that is not open", mid)
		}
		need("delta")
	case "REASONING_MESSAGE_END":
		mid := need("messageId")
		if !v.reasonMsgs[mid] {
			bad("reasoning-pairing", "end of reasoning message %q that is not open", mid)
		}
		delete(v.reasonMsgs, mid)
	case "SUBAGENT_STARTED":
		sid := need("subagentRunId")
		need("name")
		if v.subagents[sid] {
			bad("subagent-pairing", "subagent %q already started", sid)
		}
		v.subagents[sid] = true
	case "SUBAGENT_FINISHED", "SUBAGENT_ERROR":
		sid := need("subagentRunId")
		if typ == "SUBAGENT_ERROR" {
			need("message")
		}
		if !v.subagents[sid] {
			bad("subagent-pairing", "subagent %q is not active", sid)
		}
		delete(v.subagents, sid)
	case "CUSTOM":
		need("name")
		if _, ok := m["value"]; !ok {
			bad("custom-value", "CUSTOM must carry a value (@ag-ui/core 1.0.0 rejects an absent value)")
		}
	default:
		if strings.HasPrefix(typ, "THINKING_") {
			bad("no-thinking", "THINKING_* events were removed in @ag-ui/core 1.0.0; use REASONING_*")
		}
	}
}

func (v *verifier) checkClosed(i int, id, typ string) {
	for _, open := range []struct {
		what string
		m    map[string]bool
	}{{"text message", v.texts}, {"reasoning message", v.reasonMsgs}, {"reasoning span", v.reasonSpan},
		{"tool call", v.tools}, {"subagent", v.subagents}} {
		keys := make([]string, 0, len(open.m))
		for k := range open.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v.add(i, id, typ, "open-at-terminal", fmt.Sprintf("%s %q is still open", open.what, k))
		}
	}
}

func (v *verifier) finish(n int) error {
	if n == 0 {
		v.add(0, "", "", "empty", "the stream has no events")
	} else if v.terminal < 0 && !v.cfg.allowUnended {
		v.add(n, "", "", "terminal", "the stream ended without RUN_FINISHED or RUN_ERROR")
	}
	if len(v.vs) == 0 {
		return nil
	}
	return &Error{Violations: v.vs}
}

// Violations returns the violations in err, or nil if err is not an *Error.
func Violations(err error) []Violation {
	var e *Error
	if errors.As(err, &e) {
		return e.Violations
	}
	return nil
}
