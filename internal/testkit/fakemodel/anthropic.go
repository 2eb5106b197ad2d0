package fakemodel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"
)

// Server is what both fake model servers share: the loopback HTTP server,
// the turn queue and the request log.
type Server struct {
	*httptest.Server
	s *script
}

// Requests returns a copy of the model requests received so far (HEAD probes
// included), oldest first.
func (s *Server) Requests() []Request { return s.s.requests() }

// AwaitRequests blocks until cond holds for the requests received so far
// (oldest first, as [Server.Requests] returns them) and returns them; cond
// is checked again after every request. It returns ctx's error, with the
// requests so far, when ctx ends first.
func (s *Server) AwaitRequests(ctx context.Context, cond func([]Request) bool) ([]Request, error) {
	return s.s.await(ctx, cond)
}

// Anthropic is a fake Anthropic Messages API for Claude Code. Point the CLI at
// it with ANTHROPIC_BASE_URL=URL and any ANTHROPIC_API_KEY.
type Anthropic struct{ Server }

// NewAnthropic starts a fake Anthropic server with the given turns queued.
// Close it when done (t.Cleanup(srv.Close)).
func NewAnthropic(turns ...Turn) *Anthropic {
	a := &Anthropic{Server{s: &script{fallback: Turn{Text: "ok"}}}}
	a.s.enqueue(turns...)
	a.Server.Server = httptest.NewServer(http.HandlerFunc(a.handle))
	return a
}

func (a *Anthropic) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.s.record(Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, Time: time.Now()})
	switch {
	case r.Method == http.MethodHead || (r.Method == http.MethodGet && r.URL.Path == "/"):
		w.WriteHeader(http.StatusOK)
		return
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"input_tokens":10}`)
		return
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
	default:
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`, http.StatusNotFound)
		return
	}
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	turn := a.s.next()
	defaults(&turn)
	if turn.Status != 0 && turn.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(turn.Status)
		_, _ = fmt.Fprintf(w, `{"type":"error","error":{"type":"api_error","message":"fake model error %d"}}`, turn.Status)
		return
	}
	// The most recent tool_result in the conversation.
	result := ""
	for _, m := range req.Messages {
		var blocks []map[string]any
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b["type"] == "tool_result" {
				result = textOf(b["content"])
			}
		}
	}
	text := fill(turn.Text, result)
	id := a.s.nextID()
	model := req.Model
	if model == "" {
		model = "claude-fake"
	}
	if !req.Stream {
		a.writeJSON(w, turn, text, id, model)
		return
	}
	sse := newSSE(w)
	usage := map[string]any{
		"input_tokens": turn.InputTokens, "output_tokens": 1,
		"cache_creation_input_tokens": turn.CacheWriteTokens, "cache_read_input_tokens": turn.CacheReadTokens,
	}
	if sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_fake%04d", id), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage,
	}}) != nil {
		return
	}
	index := 0
	if turn.Thinking != "" {
		_ = sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		for _, c := range chunks(turn.Thinking, turn.Chunks) {
			if !pause(r, turn.Delay) {
				return
			}
			_ = sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "thinking_delta", "thinking": c}})
		}
		_ = sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "signature_delta", "signature": "fakesig"}})
		_ = sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if text != "" || turn.Tool == nil {
		_ = sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, c := range chunks(text, turn.Chunks) {
			if !pause(r, turn.Delay) {
				return
			}
			if sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": c}}) != nil {
				return
			}
		}
		_ = sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	stop := "end_turn"
	if turn.Tool != nil {
		stop = "tool_use"
		callID := turn.Tool.ID
		if callID == "" {
			callID = fmt.Sprintf("toolu_fake%04d", id)
		}
		args := turn.Tool.Args
		if args == nil {
			args = map[string]any{}
		}
		argJSON, _ := json.Marshal(args)
		_ = sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{
			"type": "tool_use", "id": callID, "name": "mcp__" + turn.Tool.Server + "__" + turn.Tool.Tool, "input": map[string]any{},
		}})
		for _, c := range chunks(string(argJSON), 2) {
			if !pause(r, turn.Delay) {
				return
			}
			_ = sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": c}})
		}
		_ = sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
	}
	_ = sse.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": turn.OutputTokens}})
	_ = sse.event("message_stop", map[string]any{"type": "message_stop"})
}

// writeJSON answers a non-streaming request (Claude Code uses a few for side
// tasks) with one text message.
func (a *Anthropic) writeJSON(w http.ResponseWriter, turn Turn, text string, id int, model string) {
	if text == "" {
		text = "ok"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("msg_fake%04d", id), "type": "message", "role": "assistant", "model": model,
		"content":     []any{map[string]any{"type": "text", "text": text}},
		"stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": turn.InputTokens, "output_tokens": turn.OutputTokens},
	})
}

// ToolResults returns the tool_result blocks (tool_use_id -> text) found in
// the body of an Anthropic request.
func ToolResults(r Request) map[string]string {
	out := map[string]string{}
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(r.Body, &req) != nil {
		return out
	}
	for _, m := range req.Messages {
		var blocks []map[string]any
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b["type"] == "tool_result" {
				id, _ := b["tool_use_id"].(string)
				out[id] = textOf(b["content"])
			}
		}
	}
	return out
}

// ContainsText reports whether the request body mentions s (handy to check
// that a resumed conversation carries earlier messages).
func ContainsText(r Request, s string) bool { return strings.Contains(string(r.Body), s) }

// ModelRequests filters the log down to the model calls (POST to the
// messages or responses endpoint), dropping probes.
func ModelRequests(rs []Request) []Request {
	var out []Request
	for _, r := range rs {
		if r.Method == http.MethodPost && (r.Path == "/v1/messages" || r.Path == "/v1/responses" || strings.HasSuffix(r.Path, ":streamGenerateContent")) {
			out = append(out, r)
		}
	}
	return out
}
