package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"
)

// OpenAI is a fake OpenAI Responses API for Codex. Point Codex at it with a
// model provider whose base_url is URL+"/v1" and wire_api = "responses" (see
// [OpenAI.CodexConfig]).
type OpenAI struct{ Server }

// NewOpenAI starts a fake Responses server with the given turns queued.
func NewOpenAI(turns ...Turn) *OpenAI {
	o := &OpenAI{Server{s: &script{fallback: Turn{Text: "ok"}}}}
	o.s.enqueue(turns...)
	o.Server.Server = httptest.NewServer(http.HandlerFunc(o.handle))
	return o
}

// CodexNamespace is the tool namespace Codex gives the tools of the MCP
// server with the given key ("a2a-delegation" -> "mcp__a2a_delegation").
func CodexNamespace(serverKey string) string {
	return "mcp__" + strings.ReplaceAll(serverKey, "-", "_")
}

// CodexConfig returns the `-c` overrides that make Codex use this server as
// model provider "fake" with model "fake-model", the API key read from the
// environment variable keyEnv, no retries, and the model catalog at
// catalogPath (see WriteCodexModelCatalog).
func (o *OpenAI) CodexConfig(keyEnv, catalogPath string) []string {
	return []string{
		"model_provider=fake",
		"model=" + FakeCodexModel,
		"model_catalog_json=" + tomlString(catalogPath),
		fmt.Sprintf(`model_providers.fake={name="fake", base_url=%s, wire_api="responses", env_key=%s, request_max_retries=0, stream_max_retries=0}`,
			tomlString(o.URL+"/v1"), tomlString(keyEnv)),
		"analytics.enabled=false",
	}
}

func tomlString(s string) string {
	b, _ := json.Marshal(s) // a JSON string is a valid TOML basic string for these inputs
	return string(b)
}

func (o *OpenAI) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	o.s.record(Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, Time: time.Now()})
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	var req struct {
		Model string            `json:"model"`
		Input []json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(body, &req)
	turn := o.s.next()
	defaults(&turn)
	if turn.Status != 0 && turn.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(turn.Status)
		_, _ = fmt.Fprintf(w, `{"error":{"message":"fake model error %d","type":"server_error","code":null}}`, turn.Status)
		return
	}
	result := ""
	for _, raw := range req.Input {
		var item map[string]any
		if json.Unmarshal(raw, &item) != nil {
			continue
		}
		if item["type"] == "function_call_output" {
			result = textOf(item["output"])
		}
	}
	text := fill(turn.Text, result)
	id := o.s.nextID()
	respID := fmt.Sprintf("resp_fake%04d", id)
	sse := newSSE(w)
	if sse.event("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": respID, "object": "response", "status": "in_progress", "output": []any{}}}) != nil {
		return
	}
	out := 0
	if turn.Thinking != "" {
		rid := fmt.Sprintf("rs_fake%04d", id)
		if !pause(r, turn.Delay) {
			return
		}
		_ = sse.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": out, "item": map[string]any{
			"type": "reasoning", "id": rid, "summary": []any{map[string]any{"type": "summary_text", "text": turn.Thinking}},
		}})
		out++
	}
	if text != "" || turn.Tool == nil {
		mid := fmt.Sprintf("msg_fake%04d", id)
		_ = sse.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": out, "item": map[string]any{
			"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []any{},
		}})
		_ = sse.event("response.content_part.added", map[string]any{"type": "response.content_part.added", "item_id": mid, "output_index": out, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for _, c := range chunks(text, turn.Chunks) {
			if !pause(r, turn.Delay) {
				return
			}
			if sse.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": mid, "output_index": out, "content_index": 0, "delta": c}) != nil {
				return
			}
		}
		_ = sse.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": out, "item": map[string]any{
			"type": "message", "id": mid, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
		}})
		out++
	}
	if turn.Tool != nil {
		callID := turn.Tool.ID
		if callID == "" {
			callID = fmt.Sprintf("call_fake%04d", id)
		}
		args := turn.Tool.Args
		if args == nil {
			args = map[string]any{}
		}
		argJSON, _ := json.Marshal(args)
		if !pause(r, turn.Delay) {
			return
		}
		_ = sse.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": out, "item": map[string]any{
			"type": "function_call", "id": fmt.Sprintf("fc_fake%04d", id), "call_id": callID,
			"namespace": CodexNamespace(turn.Tool.Server), "name": turn.Tool.Tool, "arguments": string(argJSON), "status": "completed",
		}})
	}
	_ = sse.event("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": respID, "object": "response", "status": "completed",
		"usage": map[string]any{
			"input_tokens": turn.InputTokens, "input_tokens_details": map[string]any{"cached_tokens": turn.CacheReadTokens},
			"output_tokens": turn.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": turn.InputTokens + turn.OutputTokens,
		},
	}})
}

// FunctionCallOutputs returns the function_call_output items (call_id ->
// text, "Wall time" preamble removed) found in the body of a Responses request.
func FunctionCallOutputs(r Request) map[string]string {
	out := map[string]string{}
	var req struct {
		Input []map[string]any `json:"input"`
	}
	if json.Unmarshal(r.Body, &req) != nil {
		return out
	}
	for _, item := range req.Input {
		if item["type"] == "function_call_output" {
			id, _ := item["call_id"].(string)
			out[id] = textOf(item["output"])
		}
	}
	return out
}
