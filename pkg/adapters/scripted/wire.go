package scripted

import "encoding/json"

// line is one line of the scripted agent's stdout (JSON Lines). The format is
// documented in doc.go; every line has a "type".
type line struct {
	Type       string          `json:"type"`
	SessionID  string          `json:"session_id,omitempty"`
	Model      string          `json:"model,omitempty"`
	MCPServers []serverStatus  `json:"mcp_servers,omitempty"`
	MessageID  string          `json:"message_id,omitempty"`
	Delta      string          `json:"delta,omitempty"`
	Text       string          `json:"text,omitempty"`
	ID         string          `json:"id,omitempty"`
	Name       string          `json:"name,omitempty"`
	Server     string          `json:"server,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	Content    string          `json:"content,omitempty"`
	// Structured is kept as JSON text: the host's parser never looks
	// into it, so decoding it would only make garbage.
	Structured json.RawMessage `json:"structured,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	MimeType   string          `json:"mime_type,omitempty"`
	Output     string          `json:"output,omitempty"`
	Status     string          `json:"status,omitempty"`
	Error      string          `json:"error,omitempty"`
	Usage      *lineUsage      `json:"usage,omitempty"`
}

type serverStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"` // "connected" or "failed"
	Error  string `json:"error,omitempty"`
	Tools  int    `json:"tools,omitempty"`
}

type lineUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Line types.
const (
	lineInit       = "init"
	lineTextStart  = "text_start"
	lineTextDelta  = "text_delta"
	lineTextEnd    = "text_end"
	lineText       = "text"
	lineToolCall   = "tool_call"
	lineToolResult = "tool_result"
	lineArtifact   = "artifact"
	lineAsk        = "ask"
	lineResult     = "result"
)

// Result statuses on the "result" line.
const (
	resultCompleted     = "completed"
	resultFailed        = "failed"
	resultInputRequired = "input_required"
)
