package codex

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/internal/clibase"
)

// Custom payload names the parser emits (others are "codex.<item type>").
const (
	PayloadThread      = "codex.thread"        // Raw: thread_id
	PayloadTurnStarted = "codex.turn.started"  // Raw: {}
	PayloadError       = "codex.error"         // Raw: message (a non-fatal error event or item)
	PayloadMCPToolCall = "codex.mcp_tool_call" // Raw: item_id, server, tool, status
)

type event struct {
	Type     string          `json:"type"`
	ThreadID string          `json:"thread_id"`
	Item     json.RawMessage `json:"item"`
	Usage    *usage          `json:"usage"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	Message string `json:"message"`
}

type usage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
}

type item struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    *struct {
		Content           []map[string]any `json:"content"`
		StructuredContent any              `json:"structured_content"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

// streamState tracks an item streamed as text or reasoning.
type streamState struct {
	sent string // text emitted so far
}

// Parser maps `codex exec --json` events to payloads. NewParser makes one per
// run.
type Parser struct {
	threadID  string
	usage     *agentadaptor.Usage
	completed bool
	failure   *agentadaptor.Failure
	lastText  string
	lastError string

	texts     map[string]*streamState // agent_message items open
	reasoning map[string]*streamState // reasoning items open
	tools     map[string]bool         // mcp_tool_call items started
	order     []string                // open text/reasoning ids, to close at Finish
}

// NewParser returns a parser for one run.
func NewParser() *Parser {
	return &Parser{texts: map[string]*streamState{}, reasoning: map[string]*streamState{}, tools: map[string]bool{}}
}

// ParseLine implements agentadaptor.Parser.
func (p *Parser) ParseLine(b []byte, emit agentadaptor.Emitter) error {
	var ev event
	if err := json.Unmarshal(b, &ev); err != nil {
		return fmt.Errorf("codex --json line is not a JSON object: %v", err)
	}
	switch ev.Type {
	case "thread.started":
		p.threadID = ev.ThreadID
		emit(agentadaptor.StreamPayload{Name: PayloadThread, Raw: map[string]any{"thread_id": ev.ThreadID}})
	case "turn.started":
		emit(agentadaptor.StreamPayload{Name: PayloadTurnStarted, Raw: map[string]any{}})
	case "turn.completed":
		p.completed = true
		if ev.Usage != nil {
			u := ev.Usage
			p.usage = &agentadaptor.Usage{
				InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
				CacheReadTokens: u.CachedInputTokens, CacheWriteTokens: u.CacheWriteInputTokens,
				ReasoningTokens: u.ReasoningOutputTokens,
			}
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindUsage, Usage: p.usage})
		}
	case "turn.failed":
		msg := p.lastError
		if ev.Error != nil && ev.Error.Message != "" {
			msg = ev.Error.Message
		}
		if msg == "" {
			msg = "codex turn failed"
		}
		p.failure = classify(msg)
	case "error":
		p.lastError = ev.Message
		emit(agentadaptor.StreamPayload{Name: PayloadError, Raw: map[string]any{"message": ev.Message}})
	case "item.started", "item.updated", "item.completed":
		var it item
		if err := json.Unmarshal(ev.Item, &it); err != nil || it.Type == "" {
			return fmt.Errorf("codex %s event without a valid item", ev.Type)
		}
		p.item(strings.TrimPrefix(ev.Type, "item."), &it, ev.Item, emit)
	case "":
		return fmt.Errorf("codex --json line has no type")
	default:
		var raw map[string]any
		_ = json.Unmarshal(b, &raw)
		emit(agentadaptor.StreamPayload{Name: "codex." + clibase.SafeName(ev.Type), Raw: raw})
	}
	return nil
}

func (p *Parser) item(phase string, it *item, raw json.RawMessage, emit agentadaptor.Emitter) {
	switch it.Type {
	case "agent_message":
		p.stream(p.texts, phase, it, emit, agentadaptor.KindTextStart, agentadaptor.KindTextDelta, agentadaptor.KindTextEnd)
		if phase == "completed" {
			p.lastText = it.Text
		}
	case "reasoning":
		p.stream(p.reasoning, phase, it, emit, agentadaptor.KindReasoningStart, agentadaptor.KindReasoningDelta, agentadaptor.KindReasoningEnd)
	case "mcp_tool_call":
		if !p.tools[it.ID] {
			p.tools[it.ID] = true
			args := string(it.Arguments)
			if args == "" || args == "null" {
				args = "{}"
			}
			emit(agentadaptor.StreamPayload{Name: PayloadMCPToolCall, Raw: map[string]any{"item_id": it.ID, "server": it.Server, "tool": it.Tool, "status": it.Status}})
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallStart, ToolCallID: it.ID, ToolName: it.Tool})
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallArgs, ToolCallID: it.ID, Delta: args})
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallEnd, ToolCallID: it.ID, ToolName: it.Tool, ToolArgs: args})
		}
		if phase == "completed" {
			res, isErr := toolResult(it)
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallResult, ToolCallID: it.ID, ToolResult: res, ToolError: isErr})
		}
	case "error":
		emit(agentadaptor.StreamPayload{Name: PayloadError, Raw: map[string]any{"message": it.Message, "item_id": it.ID}})
	default:
		// command_execution, file_change, web_search, todo_list and item
		// types added later: opaque payloads carrying the item and phase.
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		if m == nil {
			m = map[string]any{}
		}
		m["phase"] = phase
		emit(agentadaptor.StreamPayload{Name: "codex." + clibase.SafeName(it.Type), Raw: m})
	}
}

// stream emits start/delta/end for an item whose text grows across
// started/updated/completed events (exec mode only sends completed).
func (p *Parser) stream(open map[string]*streamState, phase string, it *item, emit agentadaptor.Emitter, start, delta, end agentadaptor.StreamKind) {
	st := open[it.ID]
	if st == nil {
		st = &streamState{}
		open[it.ID] = st
		p.order = append(p.order, it.ID)
		emit(agentadaptor.StreamPayload{Kind: start, MessageID: it.ID})
	}
	if strings.HasPrefix(it.Text, st.sent) {
		if d := it.Text[len(st.sent):]; d != "" {
			emit(agentadaptor.StreamPayload{Kind: delta, MessageID: it.ID, Delta: d})
		}
	} else if it.Text != "" {
		// The text was rewritten: send it whole as a new delta.
		emit(agentadaptor.StreamPayload{Kind: delta, MessageID: it.ID, Delta: it.Text})
	}
	st.sent = it.Text
	if phase == "completed" {
		emit(agentadaptor.StreamPayload{Kind: end, MessageID: it.ID, Text: it.Text})
		delete(open, it.ID)
		p.dropOrder(it.ID)
	}
}

func (p *Parser) dropOrder(id string) {
	for i, x := range p.order {
		if x == id {
			p.order = append(p.order[:i], p.order[i+1:]...)
			return
		}
	}
}

func toolResult(it *item) (string, bool) {
	if it.Error != nil && it.Error.Message != "" {
		return it.Error.Message, true
	}
	if it.Result == nil {
		return "", it.Status == "failed"
	}
	var parts []string
	for _, c := range it.Result.Content {
		if s, ok := c["text"].(string); ok {
			parts = append(parts, s)
		} else if t, ok := c["type"].(string); ok {
			parts = append(parts, "["+t+"]")
		}
	}
	if len(parts) == 0 && it.Result.StructuredContent != nil {
		return mustJSON(it.Result.StructuredContent), it.Status == "failed"
	}
	return strings.Join(parts, "\n"), it.Status == "failed"
}

var statusRe = lazyRegexp(`\b(?:status:?|status code:?)\s*([1-5][0-9]{2})\b|\b([45][0-9]{2}) (?:Unauthorized|Forbidden|Too Many Requests|Internal Server Error|Bad Gateway|Service Unavailable|Bad Request|Not Found|Gateway Timeout)`)

var modelErrorHints = []string{"unexpected status", "high demand", "stream disconnected", "retry limit", "rate limit",
	"usage limit", "quota", "overloaded", "model", "provider", "responses", "api"}

// classify turns a turn.failed message into a typed failure: model/provider
// errors (HTTP statuses, overload, disconnects) are FailureModel, anything
// else FailureAgent.
func classify(msg string) *agentadaptor.Failure {
	f := &agentadaptor.Failure{Code: agentadaptor.FailureAgent, Message: msg}
	if m := statusRe().FindStringSubmatch(msg); m != nil {
		s := m[1]
		if s == "" {
			s = m[2]
		}
		n, _ := strconv.Atoi(s)
		f.Code = agentadaptor.FailureModel
		f.Detail = map[string]any{"status": n}
		f.Retryable = n == 429 || n >= 500
		return f
	}
	lower := strings.ToLower(msg)
	for _, h := range modelErrorHints {
		if strings.Contains(lower, h) {
			f.Code = agentadaptor.FailureModel
			f.Retryable = h == "high demand" || h == "stream disconnected" || h == "rate limit" || h == "overloaded"
			return f
		}
	}
	return f
}

// Finish implements agentadaptor.Parser.
func (p *Parser) Finish(exit agentadaptor.ExitStatus, emit agentadaptor.Emitter) agentadaptor.Outcome {
	for len(p.order) > 0 {
		id := p.order[0]
		if st, ok := p.texts[id]; ok {
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextEnd, MessageID: id, Text: st.sent})
			delete(p.texts, id)
		} else if st, ok := p.reasoning[id]; ok {
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindReasoningEnd, MessageID: id, Text: st.sent})
			delete(p.reasoning, id)
		}
		p.order = p.order[1:]
	}
	out := agentadaptor.Outcome{SessionID: p.threadID, Output: p.lastText, Usage: p.usage, Failure: p.failure}
	if out.Failure != nil || p.completed {
		return out
	}
	stderr := string(exit.Stderr)
	if i := strings.Index(stderr, "required MCP servers failed to initialize"); i >= 0 {
		msg := stderr[i:]
		if j := strings.IndexByte(msg, '\n'); j >= 0 {
			msg = msg[:j]
		}
		out.Failure = &agentadaptor.Failure{Code: agentadaptor.FailureMCPServer, Message: msg}
		return out
	}
	if exit.Code == 0 && !exit.Signaled {
		out.Failure = &agentadaptor.Failure{Code: agentadaptor.FailureProtocol, Message: "codex exited without turn.completed"}
	}
	return out
}

// lazyRegexp compiles expr on first use: a process that never uses a
// pattern (the scripted agent re-executing this binary, a CLI command)
// does not pay for it at start.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
