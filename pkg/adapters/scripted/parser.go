package scripted

import (
	"encoding/json"
	"fmt"
	"strings"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// Custom payload names the scripted parser emits. They are generic, so other
// adapters and the A2A bridge can share them.
const (
	PayloadInit          = "scripted.init"        // Raw: session_id, model, mcp_servers
	PayloadArtifact      = "agent.artifact"       // Raw: name, mime_type, text
	PayloadInputRequired = "agent.input_required" // Raw: text
)

// parser maps the scripted agent's JSON Lines to payloads.
type parser struct {
	required  map[string]bool
	sessionID string
	result    *line
	failure   *agentadaptor.Failure
	lastText  string
}

func newParser(specs []agentadaptor.MCPServerSpec) *parser {
	p := &parser{required: map[string]bool{}}
	for _, s := range specs {
		if s.Required {
			p.required[s.Key] = true
		}
	}
	return p
}

func (p *parser) ParseLine(b []byte, emit agentadaptor.Emitter) error {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("scripted agent output is not a JSON object: %v", err)
	}
	switch l.Type {
	case lineInit:
		p.sessionID = l.SessionID
		servers := make([]any, 0, len(l.MCPServers))
		for _, s := range l.MCPServers {
			servers = append(servers, map[string]any{"name": s.Name, "status": s.Status, "tools": s.Tools})
			if s.Status == "failed" && p.required[s.Name] && p.failure == nil {
				p.failure = &agentadaptor.Failure{
					Code:    agentadaptor.FailureMCPServer,
					Message: fmt.Sprintf("required MCP server %q failed to connect: %s", s.Name, s.Error),
				}
			}
		}
		emit(agentadaptor.StreamPayload{Name: PayloadInit, Raw: map[string]any{
			"session_id": l.SessionID, "model": l.Model, "mcp_servers": servers,
		}})
	case lineTextStart:
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextStart, MessageID: l.MessageID})
	case lineTextDelta:
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: l.MessageID, Delta: l.Delta})
	case lineTextEnd:
		p.lastText = l.Text
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextEnd, MessageID: l.MessageID, Text: l.Text})
	case lineText:
		p.lastText = l.Text
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextStart, MessageID: l.MessageID})
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: l.MessageID, Delta: l.Text})
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextEnd, MessageID: l.MessageID, Text: l.Text})
	case lineToolCall:
		args := string(l.Args)
		if args == "" || args == "null" {
			args = "{}"
		}
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallStart, ToolCallID: l.ID, ToolName: l.Name})
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallArgs, ToolCallID: l.ID, Delta: args})
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallEnd, ToolCallID: l.ID, ToolName: l.Name, ToolArgs: args})
	case lineToolResult:
		emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallResult, ToolCallID: l.ID, ToolResult: l.Content, ToolError: l.IsError})
	case lineArtifact:
		emit(agentadaptor.StreamPayload{Name: PayloadArtifact, Raw: map[string]any{"name": l.Name, "mime_type": l.MimeType, "text": l.Text}})
	case lineAsk:
		emit(agentadaptor.StreamPayload{Name: PayloadInputRequired, Raw: map[string]any{"text": l.Text}})
	case lineResult:
		r := l
		p.result = &r
		if l.SessionID != "" {
			p.sessionID = l.SessionID
		}
		if l.Usage != nil {
			emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindUsage, Usage: usage(l.Usage)})
		}
	case "":
		return fmt.Errorf("scripted agent line has no type")
	default:
		var raw map[string]any
		_ = json.Unmarshal(b, &raw)
		emit(agentadaptor.StreamPayload{Name: "scripted." + strings.ReplaceAll(l.Type, " ", "_"), Raw: raw})
	}
	return nil
}

func usage(u *lineUsage) *agentadaptor.Usage {
	if u == nil {
		return nil
	}
	return &agentadaptor.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
}

func (p *parser) Finish(exit agentadaptor.ExitStatus, _ agentadaptor.Emitter) agentadaptor.Outcome {
	out := agentadaptor.Outcome{SessionID: p.sessionID, Output: p.lastText, Failure: p.failure}
	if p.result == nil {
		if out.Failure == nil && exit.Code == 0 {
			out.Failure = &agentadaptor.Failure{Code: agentadaptor.FailureProtocol, Message: "the scripted agent exited without a result line"}
		}
		return out
	}
	out.Output = p.result.Output
	out.Usage = usage(p.result.Usage)
	if p.result.IsError && out.Failure == nil {
		out.Failure = &agentadaptor.Failure{Code: agentadaptor.FailureAgent, Message: p.result.Error}
	}
	return out
}
