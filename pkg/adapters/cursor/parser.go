package cursor

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/internal/clibase"
)

// PayloadInit carries the system/init line: session_id, model, cwd,
// api_key_source, permission_mode.
const PayloadInit = "cursor.init"

type line struct {
	Type        string          `json:"type"`
	Subtype     string          `json:"subtype"`
	SessionID   string          `json:"session_id"`
	Model       string          `json:"model"`
	Cwd         string          `json:"cwd"`
	APIKey      string          `json:"apiKeySource"`
	PermMode    string          `json:"permissionMode"`
	Message     json.RawMessage `json:"message"`
	Text        string          `json:"text"`
	TimestampMS *int64          `json:"timestamp_ms"`
	CallID      string          `json:"call_id"`
	ToolCall    map[string]struct {
		Args      json.RawMessage `json:"args"`
		Result    json.RawMessage `json:"result"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
	} `json:"tool_call"`
	IsError    bool            `json:"is_error"`
	Result     *string         `json:"result"`
	DurationMS int64           `json:"duration_ms"`
	RequestID  string          `json:"request_id"`
	Usage      json.RawMessage `json:"usage"`
}

type message struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// Parser maps Cursor's stream-json output to payloads.
type Parser struct {
	streaming bool

	sessionID string
	msgN      int
	openText  string // id of the open text message, "" if none
	textBuf   strings.Builder
	thinkN    int
	openThink string
	thinkBuf  strings.Builder
	tools     map[string]string // call id -> tool name, started calls

	result   *line
	lastText string
	usage    *agentadaptor.Usage
}

// NewParser returns a parser for one run. streaming says whether the run
// used --stream-partial-output (assistant lines are then text deltas).
func NewParser(streaming bool) *Parser {
	return &Parser{streaming: streaming, tools: map[string]string{}}
}

// ParseLine implements agentadaptor.Parser.
func (p *Parser) ParseLine(b []byte, emit agentadaptor.Emitter) error {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("cursor stream-json line is not a JSON object: %v", err)
	}
	if l.SessionID != "" {
		p.sessionID = l.SessionID
	}
	switch l.Type {
	case "system":
		if l.Subtype == "init" {
			emit(agentadaptor.StreamPayload{Name: PayloadInit, Raw: map[string]any{
				"session_id": l.SessionID, "model": l.Model, "cwd": l.Cwd, "api_key_source": l.APIKey, "permission_mode": l.PermMode,
			}})
			return nil
		}
		emit(agentadaptor.StreamPayload{Name: "cursor.system." + clibase.SafeName(l.Subtype), Raw: clibase.RawMap(b)})
	case "user":
		// The prompt echoed back: nothing to report.
	case "assistant":
		var m message
		if err := json.Unmarshal(l.Message, &m); err != nil {
			return fmt.Errorf("cursor assistant line: bad message: %v", err)
		}
		var text strings.Builder
		for _, c := range m.Content {
			if c.Type == "text" {
				text.WriteString(c.Text)
			}
		}
		p.assistant(text.String(), l.TimestampMS != nil, emit)
	case "thinking":
		p.closeText(emit)
		switch l.Subtype {
		case "delta":
			if p.openThink == "" {
				p.thinkN++
				p.openThink = "cursor-thinking-" + strconv.Itoa(p.thinkN)
				p.thinkBuf.Reset()
				emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindReasoningStart, MessageID: p.openThink})
			}
			if l.Text != "" {
				p.thinkBuf.WriteString(l.Text)
				emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindReasoningDelta, MessageID: p.openThink, Delta: l.Text})
			}
		default: // "completed"
			p.closeThink(emit)
		}
	case "tool_call":
		p.closeText(emit)
		p.closeThink(emit)
		p.toolCall(&l, emit)
	case "result":
		p.closeText(emit)
		p.closeThink(emit)
		r := l
		p.result = &r
		if u := parseUsage(l.Usage); u != nil {
			p.usage = u
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindUsage, Usage: u})
		}
	case "":
		return fmt.Errorf("cursor stream-json line has no type")
	default:
		emit(agentadaptor.StreamPayload{Name: "cursor." + clibase.SafeName(l.Type), Raw: clibase.RawMap(b)})
	}
	return nil
}

func (p *Parser) assistant(text string, isDelta bool, emit agentadaptor.Emitter) {
	p.closeThink(emit)
	if !p.streaming {
		p.closeText(emit)
		p.msgN++
		id := "cursor-msg-" + strconv.Itoa(p.msgN)
		p.lastText = text
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextStart, MessageID: id})
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: id, Delta: text})
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextEnd, MessageID: id, Text: text})
		return
	}
	// Partial output: each assistant line is a delta of the open message; a
	// line without timestamp_ms that repeats the whole text closes it.
	if p.openText != "" && !isDelta && text == p.textBuf.String() {
		p.closeText(emit)
		return
	}
	if p.openText == "" {
		p.msgN++
		p.openText = "cursor-msg-" + strconv.Itoa(p.msgN)
		p.textBuf.Reset()
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextStart, MessageID: p.openText})
	}
	if text != "" {
		p.textBuf.WriteString(text)
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: p.openText, Delta: text})
	}
}

func (p *Parser) closeText(emit agentadaptor.Emitter) {
	if p.openText == "" {
		return
	}
	t := p.textBuf.String()
	p.lastText = t
	emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextEnd, MessageID: p.openText, Text: t})
	p.openText = ""
}

func (p *Parser) closeThink(emit agentadaptor.Emitter) {
	if p.openThink == "" {
		return
	}
	emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindReasoningEnd, MessageID: p.openThink, Text: p.thinkBuf.String()})
	p.openThink = ""
}

// toolCall maps tool_call started/completed. The tool_call object holds one
// key naming the tool kind ("readToolCall", "shellToolCall", "mcpToolCall",
// ..., or "function" with name/arguments).
func (p *Parser) toolCall(l *line, emit agentadaptor.Emitter) {
	var kind string
	for k := range l.ToolCall {
		kind = k
	}
	tc := l.ToolCall[kind]
	name := strings.TrimSuffix(kind, "ToolCall")
	args := string(tc.Args)
	if kind == "function" {
		name, args = tc.Name, tc.Arguments
	} else if kind == "mcpToolCall" {
		var a struct {
			Name     string `json:"name"`
			ToolName string `json:"toolName"`
			Args     json.RawMessage
		}
		if json.Unmarshal(tc.Args, &a) == nil {
			if a.ToolName != "" {
				name = a.ToolName
			} else if a.Name != "" {
				name = a.Name
			}
			if len(a.Args) > 0 {
				args = string(a.Args)
			}
		}
	}
	if args == "" || args == "null" {
		args = "{}"
	}
	id := l.CallID
	if _, started := p.tools[id]; !started {
		p.tools[id] = name
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallStart, ToolCallID: id, ToolName: name})
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallArgs, ToolCallID: id, Delta: args})
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallEnd, ToolCallID: id, ToolName: name, ToolArgs: args})
	}
	if l.Subtype == "completed" {
		res, isErr := toolResult(tc.Result)
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallResult, ToolCallID: id, ToolResult: res, ToolError: isErr})
	}
}

// toolResult flattens a tool result: {"success": {...}} or {"error"|"failure"|"rejected": ...}.
func toolResult(raw json.RawMessage) (string, bool) {
	var r map[string]any
	if json.Unmarshal(raw, &r) != nil || r == nil {
		return "", false
	}
	if s, ok := r["success"]; ok {
		return flatten(s), false
	}
	for _, k := range []string{"error", "failure", "rejected"} {
		if v, ok := r[k]; ok {
			return flatten(v), true
		}
	}
	return flatten(r), false
}

// flatten prefers human text: a "content" string, the text parts of a
// content list, an "error"/"message" string; else the JSON.
func flatten(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		for _, k := range []string{"content", "output", "stdout", "message", "error", "text"} {
			if c, ok := x[k]; ok {
				if s := texts(c); s != "" {
					return s
				}
			}
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func texts(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var parts []string
		for _, e := range x {
			if s := texts(e); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n")
	case map[string]any:
		if s, ok := x["text"]; ok {
			return texts(s)
		}
	}
	return ""
}

func parseUsage(raw json.RawMessage) *agentadaptor.Usage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var m map[string]float64
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	get := func(keys ...string) int64 {
		for _, k := range keys {
			if v, ok := m[k]; ok {
				return int64(v)
			}
		}
		return 0
	}
	return &agentadaptor.Usage{
		InputTokens:      get("input_tokens", "inputTokens"),
		OutputTokens:     get("output_tokens", "outputTokens"),
		CacheReadTokens:  get("cache_read_input_tokens", "cacheReadTokens"),
		CacheWriteTokens: get("cache_creation_input_tokens", "cacheWriteTokens"),
	}
}

// Finish implements agentadaptor.Parser.
func (p *Parser) Finish(exit agentadaptor.ExitStatus, emit agentadaptor.Emitter) agentadaptor.Outcome {
	p.closeText(emit)
	p.closeThink(emit)
	out := agentadaptor.Outcome{SessionID: p.sessionID, Output: p.lastText, Usage: p.usage}
	if p.result == nil {
		if exit.Code == 0 && !exit.Signaled {
			out.Failure = &agentadaptor.Failure{Code: agentadaptor.FailureProtocol, Message: "cursor-agent exited without a result line"}
		}
		return out
	}
	if p.result.Result != nil {
		out.Output = *p.result.Result
	}
	if p.result.IsError {
		msg := out.Output
		if msg == "" {
			msg = "cursor-agent reported an error result (" + p.result.Subtype + ")"
		}
		out.Failure = &agentadaptor.Failure{Code: agentadaptor.FailureAgent, Message: msg, Detail: map[string]any{"subtype": p.result.Subtype}}
	}
	return out
}
