package claude

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/internal/clibase"
)

// Custom payload names the parser emits.
const (
	// PayloadInit carries the system/init line: session_id, model, cwd,
	// permission_mode, claude_code_version, tools and mcp_servers
	// ([{name, status}]).
	PayloadInit = "claude.init"
	// PayloadResult carries the result line's metadata: subtype, is_error,
	// num_turns, duration_ms, stop_reason, api_error_status,
	// permission_denials, total_cost_usd.
	PayloadResult = "claude.result"
)

// line is one stream-json line; only the fields the parser reads.
type line struct {
	Type            string          `json:"type"`
	Subtype         string          `json:"subtype"`
	SessionID       string          `json:"session_id"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	Message         json.RawMessage `json:"message"`
	Event           json.RawMessage `json:"event"`
	Error           json.RawMessage `json:"error"`

	// system/init
	Model          string      `json:"model"`
	Cwd            string      `json:"cwd"`
	Tools          []string    `json:"tools"`
	MCPServers     []mcpStatus `json:"mcp_servers"`
	PermissionMode string      `json:"permissionMode"`
	Version        string      `json:"claude_code_version"`

	// result
	IsError           bool            `json:"is_error"`
	APIErrorStatus    json.RawMessage `json:"api_error_status"`
	Result            *string         `json:"result"`
	NumTurns          int             `json:"num_turns"`
	DurationMS        int64           `json:"duration_ms"`
	StopReason        string          `json:"stop_reason"`
	TotalCostUSD      float64         `json:"total_cost_usd"`
	Usage             *usage          `json:"usage"`
	PermissionDenials []denial        `json:"permission_denials"`
	Errors            []string        `json:"errors"`
}

type mcpStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

type denial struct {
	ToolName  string `json:"tool_name"`
	ToolUseID string `json:"tool_use_id"`
}

type message struct {
	ID      string  `json:"id"`
	Content []block `json:"content"`
}

// block is an Anthropic content block (assistant or user message).
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// streamEvent is the raw Anthropic SSE event inside a stream_event line.
type streamEvent struct {
	Type         string   `json:"type"`
	Index        int      `json:"index"`
	Message      *message `json:"message"`
	ContentBlock *block   `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
	} `json:"delta"`
}

// openBlock is a content block being streamed through stream_event lines.
type openBlock struct {
	kind string // "text", "thinking", "tool_use"
	id   string // message id (text, thinking) or tool_use id
	name string // tool name (tool_use)
	full string // the whole content, once an assistant line carried it
	args strings.Builder
}

// msgState counts a message's blocks so that stream_event blocks and the
// assistant lines repeating them map to the same ids.
type msgState struct {
	streamedText, streamedThinking int // blocks opened via stream_event
	seenText, seenThinking         int // blocks seen in assistant lines
}

// Parser maps Claude Code's stream-json output to payloads. It is created by
// Prepare for one run; NewParser makes one for tests and tools.
type Parser struct {
	required map[string]bool

	sessionID  string
	curMsg     string
	open       map[int]*openBlock
	openOrder  []int
	msgs       map[string]*msgState
	streamedTC map[string]bool

	result     *line
	mcpFailure *agentadaptor.Failure
	lastText   string
	lastError  string
}

// NewParser returns a parser for one run. Required names the MCP server keys
// whose connection failure fails the run.
func NewParser(required map[string]bool) *Parser {
	return &Parser{
		required:   required,
		open:       map[int]*openBlock{},
		msgs:       map[string]*msgState{},
		streamedTC: map[string]bool{},
	}
}

// ParseLine implements agentadaptor.Parser.
func (p *Parser) ParseLine(b []byte, emit agentadaptor.Emitter) error {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("claude stream-json line is not a JSON object: %v", err)
	}
	if l.SessionID != "" {
		p.sessionID = l.SessionID
	}
	switch l.Type {
	case "system":
		if l.Subtype == "init" {
			p.init(&l, emit)
			return nil
		}
		emit(agentadaptor.StreamPayload{Name: "claude.system." + clibase.SafeName(l.Subtype), Raw: clibase.RawMap(b)})
	case "assistant":
		return p.assistant(&l, emit)
	case "user":
		return p.user(&l, emit)
	case "stream_event":
		return p.streamEvent(&l, emit)
	case "result":
		r := l
		p.result = &r
		if u := p.usage(); u != nil {
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindUsage, Usage: u})
		}
		denials := make([]any, 0, len(l.PermissionDenials))
		for _, d := range l.PermissionDenials {
			denials = append(denials, map[string]any{"tool_name": d.ToolName, "tool_use_id": d.ToolUseID})
		}
		raw := map[string]any{
			"subtype": l.Subtype, "is_error": l.IsError, "num_turns": l.NumTurns, "duration_ms": l.DurationMS,
			"stop_reason": l.StopReason, "permission_denials": denials, "total_cost_usd": l.TotalCostUSD,
		}
		if st, ok := apiStatus(l.APIErrorStatus); ok {
			raw["api_error_status"] = st
		}
		emit(agentadaptor.StreamPayload{Name: PayloadResult, Raw: raw})
	case "":
		return fmt.Errorf("claude stream-json line has no type")
	default:
		emit(agentadaptor.StreamPayload{Name: "claude." + clibase.SafeName(l.Type), Raw: clibase.RawMap(b)})
	}
	return nil
}

func (p *Parser) init(l *line, emit agentadaptor.Emitter) {
	servers := make([]any, 0, len(l.MCPServers))
	for _, s := range l.MCPServers {
		servers = append(servers, map[string]any{"name": s.Name, "status": s.Status})
		if s.Status == "failed" && p.required[s.Name] && p.mcpFailure == nil {
			msg := fmt.Sprintf("required MCP server %q failed to connect", s.Name)
			if s.Error != "" {
				msg += ": " + s.Error
			}
			p.mcpFailure = &agentadaptor.Failure{Code: agentadaptor.FailureMCPServer, Message: msg, Detail: map[string]any{"server": s.Name}}
		}
	}
	tools := make([]any, 0, len(l.Tools))
	for _, t := range l.Tools {
		tools = append(tools, t)
	}
	emit(agentadaptor.StreamPayload{Name: PayloadInit, Raw: map[string]any{
		"session_id": l.SessionID, "model": l.Model, "cwd": l.Cwd, "permission_mode": l.PermissionMode,
		"claude_code_version": l.Version, "tools": tools, "mcp_servers": servers,
	}})
}

func (p *Parser) msg(id string) *msgState {
	m := p.msgs[id]
	if m == nil {
		m = &msgState{}
		p.msgs[id] = m
	}
	return m
}

// textID names the n-th (1-based) text block of message msgID.
func textID(msgID string, n int) string {
	if n <= 1 {
		return msgID
	}
	return msgID + "#" + strconv.Itoa(n)
}

func thinkingID(msgID string, n int) string { return msgID + "#thinking" + strconv.Itoa(n) }

func (p *Parser) assistant(l *line, emit agentadaptor.Emitter) error {
	var m message
	if err := json.Unmarshal(l.Message, &m); err != nil {
		return fmt.Errorf("claude assistant line: bad message: %v", err)
	}
	if len(l.Error) > 0 && string(l.Error) != "null" {
		var e string
		if json.Unmarshal(l.Error, &e) == nil {
			p.lastError = e
		}
	}
	st := p.msg(m.ID)
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			st.seenText++
			id := textID(m.ID, st.seenText)
			p.lastText = b.Text
			if st.seenText <= st.streamedText {
				p.fillOpen(id, "text", b.Text)
				continue
			}
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextStart, MessageID: id})
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: id, Delta: b.Text})
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextEnd, MessageID: id, Text: b.Text})
		case "thinking", "redacted_thinking":
			st.seenThinking++
			id := thinkingID(m.ID, st.seenThinking)
			if st.seenThinking <= st.streamedThinking {
				p.fillOpen(id, "thinking", b.Thinking)
				continue
			}
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindReasoningStart, MessageID: id})
			if b.Thinking != "" {
				emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindReasoningDelta, MessageID: id, Delta: b.Thinking})
			}
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindReasoningEnd, MessageID: id, Text: b.Thinking})
		case "tool_use", "server_tool_use":
			args := string(b.Input)
			if args == "" || args == "null" {
				args = "{}"
			}
			if p.streamedTC[b.ID] {
				p.fillOpen(b.ID, "tool_use", args)
				continue
			}
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallStart, ToolCallID: b.ID, ToolName: b.Name})
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallArgs, ToolCallID: b.ID, Delta: args})
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallEnd, ToolCallID: b.ID, ToolName: b.Name, ToolArgs: args})
		default:
			emit(agentadaptor.StreamPayload{Name: "claude.assistant." + clibase.SafeName(b.Type), Raw: map[string]any{"message_id": m.ID, "block_type": b.Type}})
		}
	}
	return nil
}

// fillOpen records the whole content of a block that is still streaming.
func (p *Parser) fillOpen(id, kind, full string) {
	for _, ob := range p.open {
		if ob.id == id && ob.kind == kind {
			ob.full = full
			return
		}
	}
}

func (p *Parser) user(l *line, emit agentadaptor.Emitter) error {
	var m message
	if err := json.Unmarshal(l.Message, &m); err != nil {
		// A user line whose content is a plain string carries no tool result.
		var alt struct {
			Content string `json:"content"`
		}
		if json.Unmarshal(l.Message, &alt) == nil {
			return nil
		}
		return fmt.Errorf("claude user line: bad message: %v", err)
	}
	for _, b := range m.Content {
		if b.Type != "tool_result" {
			continue
		}
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallResult, ToolCallID: b.ToolUseID, ToolResult: resultText(b.Content), ToolError: b.IsError})
	}
	return nil
}

// resultText flattens tool_result content (a string or a list of blocks) to text.
func resultText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []block
	if json.Unmarshal(raw, &parts) == nil {
		var out []string
		for _, b := range parts {
			switch b.Type {
			case "text":
				out = append(out, b.Text)
			default:
				out = append(out, "["+b.Type+"]")
			}
		}
		return strings.Join(out, "\n")
	}
	return string(raw)
}

func (p *Parser) streamEvent(l *line, emit agentadaptor.Emitter) error {
	var ev streamEvent
	if err := json.Unmarshal(l.Event, &ev); err != nil {
		return fmt.Errorf("claude stream_event line: bad event: %v", err)
	}
	switch ev.Type {
	case "message_start":
		p.closeAll(emit)
		if ev.Message != nil {
			p.curMsg = ev.Message.ID
		}
	case "content_block_start":
		if ev.ContentBlock == nil {
			return fmt.Errorf("claude content_block_start without content_block")
		}
		st := p.msg(p.curMsg)
		ob := &openBlock{kind: ev.ContentBlock.Type}
		switch ev.ContentBlock.Type {
		case "text":
			st.streamedText++
			ob.id = textID(p.curMsg, st.streamedText)
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextStart, MessageID: ob.id})
		case "thinking", "redacted_thinking":
			ob.kind = "thinking"
			st.streamedThinking++
			ob.id = thinkingID(p.curMsg, st.streamedThinking)
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindReasoningStart, MessageID: ob.id})
		case "tool_use", "server_tool_use":
			ob.kind = "tool_use"
			ob.id = ev.ContentBlock.ID
			ob.name = ev.ContentBlock.Name
			p.streamedTC[ob.id] = true
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallStart, ToolCallID: ob.id, ToolName: ob.name})
		default:
			return nil
		}
		p.open[ev.Index] = ob
		p.openOrder = append(p.openOrder, ev.Index)
	case "content_block_delta":
		ob := p.open[ev.Index]
		if ob == nil || ev.Delta == nil {
			return nil
		}
		switch ev.Delta.Type {
		case "text_delta":
			ob.args.WriteString(ev.Delta.Text)
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: ob.id, Delta: ev.Delta.Text})
		case "thinking_delta":
			ob.args.WriteString(ev.Delta.Thinking)
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindReasoningDelta, MessageID: ob.id, Delta: ev.Delta.Thinking})
		case "input_json_delta":
			ob.args.WriteString(ev.Delta.PartialJSON)
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallArgs, ToolCallID: ob.id, Delta: ev.Delta.PartialJSON})
		}
	case "content_block_stop":
		p.closeBlock(ev.Index, emit)
	case "message_stop":
		p.closeAll(emit)
	}
	return nil
}

func (p *Parser) closeBlock(index int, emit agentadaptor.Emitter) {
	ob := p.open[index]
	if ob == nil {
		return
	}
	delete(p.open, index)
	for i, x := range p.openOrder {
		if x == index {
			p.openOrder = append(p.openOrder[:i], p.openOrder[i+1:]...)
			break
		}
	}
	streamed := ob.args.String()
	switch ob.kind {
	case "text":
		text := ob.full
		if text == "" {
			text = streamed
		}
		p.lastText = text
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextEnd, MessageID: ob.id, Text: text})
	case "thinking":
		text := ob.full
		if text == "" {
			text = streamed
		}
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindReasoningEnd, MessageID: ob.id, Text: text})
	case "tool_use":
		args := ob.full
		if args == "" {
			args = streamed
		}
		if args == "" {
			args = "{}"
		}
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallEnd, ToolCallID: ob.id, ToolName: ob.name, ToolArgs: args})
	}
}

func (p *Parser) closeAll(emit agentadaptor.Emitter) {
	for len(p.openOrder) > 0 {
		p.closeBlock(p.openOrder[0], emit)
	}
}

func (p *Parser) usage() *agentadaptor.Usage {
	if p.result == nil || p.result.Usage == nil {
		return nil
	}
	u := p.result.Usage
	return &agentadaptor.Usage{
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens,
		CostUSD: p.result.TotalCostUSD,
	}
}

// Finish implements agentadaptor.Parser.
func (p *Parser) Finish(exit agentadaptor.ExitStatus, emit agentadaptor.Emitter) agentadaptor.Outcome {
	p.closeAll(emit)
	out := agentadaptor.Outcome{SessionID: p.sessionID, Output: p.lastText, Usage: p.usage(), Failure: p.mcpFailure}
	r := p.result
	if r == nil {
		if out.Failure == nil && exit.Code == 0 && !exit.Signaled {
			out.Failure = &agentadaptor.Failure{Code: agentadaptor.FailureProtocol, Message: "claude exited without a result line"}
		}
		return out
	}
	if r.Result != nil {
		out.Output = *r.Result
	}
	if out.Failure != nil {
		return out
	}
	switch {
	case r.IsError:
		msg := out.Output
		if msg == "" {
			msg = strings.Join(r.Errors, "; ")
		}
		if msg == "" {
			msg = "claude reported an error result (" + r.Subtype + ")"
		}
		detail := map[string]any{"subtype": r.Subtype}
		if p.lastError != "" {
			detail["error"] = p.lastError
		}
		if st, ok := apiStatus(r.APIErrorStatus); ok {
			detail["status"] = st
			out.Failure = &agentadaptor.Failure{Code: agentadaptor.FailureModel, Message: msg, Detail: detail, Retryable: st == 429 || st >= 500}
		} else {
			out.Failure = &agentadaptor.Failure{Code: agentadaptor.FailureAgent, Message: msg, Detail: detail}
		}
	case len(r.PermissionDenials) > 0:
		names := make([]string, 0, len(r.PermissionDenials))
		tools := make([]any, 0, len(r.PermissionDenials))
		for _, d := range r.PermissionDenials {
			names = append(names, d.ToolName)
			tools = append(tools, d.ToolName)
		}
		out.Failure = &agentadaptor.Failure{
			Code:    agentadaptor.FailurePermissionDenied,
			Message: "claude was denied permission to use " + strings.Join(names, ", "),
			Detail:  map[string]any{"tools": tools},
		}
	}
	return out
}

func apiStatus(raw json.RawMessage) (int, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false
	}
	var n int
	if json.Unmarshal(raw, &n) == nil && n != 0 {
		return n, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if n, err := strconv.Atoi(s); err == nil {
			return n, true
		}
	}
	return 0, false
}
