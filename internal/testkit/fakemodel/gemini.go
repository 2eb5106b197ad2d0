package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"
)

// Gemini is a fake Gemini API (generativelanguage v1beta) as Gemini CLI and
// the agents built on its core call it, such as Gemini CLI's A2A server
// (@google/gemini-cli-a2a-server): POST
// /v1beta/models/{model}:streamGenerateContent?alt=sse answered as SSE
// "data:" frames of GenerateContentResponse objects, with text parts,
// thought parts (thought: true) and functionCall parts. Point them at it
// with GOOGLE_GEMINI_BASE_URL=URL and any GEMINI_API_KEY: @google/genai,
// which their core uses, reads that variable.
//
// Each streamed request takes the next queued [Turn] (then "ok"). Non-
// streaming :generateContent requests (the CLI's side tasks, such as its
// model router or next-speaker check) are answered with a small JSON text
// and do not take a turn; :countTokens answers a count. [Turn.Delay] pauses
// before each frame; a client that goes away ends the answer and is counted
// by [Gemini.Aborted].
type Gemini struct {
	Server
	aborted atomic.Int64
}

// NewGemini starts a fake Gemini API with the given turns queued (then
// "ok" for every further streamed request).
func NewGemini(turns ...Turn) *Gemini {
	g := &Gemini{Server: Server{s: &script{fallback: Turn{Text: "ok"}}}}
	g.s.enqueue(turns...)
	g.Server.Server = httptest.NewServer(http.HandlerFunc(g.handle))
	return g
}

// Aborted reports how many streamed answers were cut because the client
// went away (a cancelled request).
func (g *Gemini) Aborted() int64 { return g.aborted.Load() }

// GeminiToolName is the function name Gemini CLI gives the model for the
// tool of the MCP server with the given key ("a2a-delegation",
// "delegate_to_agent" -> "mcp_a2a-delegation_delegate_to_agent").
func GeminiToolName(server, tool string) string { return "mcp_" + server + "_" + tool }

// GeminiStreams filters a log down to the streamed model calls (the turns).
func GeminiStreams(rs []Request) []Request {
	var out []Request
	for _, r := range rs {
		if r.Method == http.MethodPost && strings.HasSuffix(r.Path, ":streamGenerateContent") {
			out = append(out, r)
		}
	}
	return out
}

func (g *Gemini) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	g.s.record(Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, Time: time.Now()})
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, ":countTokens"):
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"totalTokens":10}`)
		return
	case r.Method == http.MethodPost && strings.HasSuffix(path, ":generateContent"):
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": `{"reasoning":"fake","model_choice":"flash","next_speaker":"user"}`}}}, "finishReason": "STOP", "index": 0}},
			"usageMetadata": map[string]any{"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
		})
		return
	case r.Method == http.MethodPost && strings.HasSuffix(path, ":streamGenerateContent"):
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}`)
		return
	}
	turn := g.s.next()
	defaults(&turn)
	if turn.Status != 0 && turn.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(turn.Status)
		_, _ = fmt.Fprintf(w, `{"error":{"code":%d,"message":"fake model error %d","status":"INTERNAL"}}`, turn.Status, turn.Status)
		return
	}
	text := fill(turn.Text, GeminiFunctionResult(Request{Body: body}))
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	// send pauses for the turn's delay, then writes one frame; false (and
	// the answer counted as aborted) when the client went away.
	send := func(parts []any, finish bool) bool {
		if !pause(r, turn.Delay) {
			g.aborted.Add(1)
			return false
		}
		c := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		resp := map[string]any{"candidates": []any{c}, "modelVersion": "gemini-fake"}
		if finish {
			c["finishReason"] = "STOP"
			resp["usageMetadata"] = map[string]any{"promptTokenCount": turn.InputTokens, "candidatesTokenCount": turn.OutputTokens,
				"totalTokenCount": turn.InputTokens + turn.OutputTokens, "cachedContentTokenCount": turn.CacheReadTokens}
		}
		b, _ := json.Marshal(resp)
		if _, err := fmt.Fprintf(w, "data: %s\r\n\r\n", b); err != nil {
			g.aborted.Add(1)
			return false
		}
		if f != nil {
			f.Flush()
		}
		return true
	}
	if turn.Thinking != "" {
		if !send([]any{map[string]any{"text": turn.Thinking, "thought": true}}, false) {
			return
		}
	}
	var last []any
	if text != "" || turn.Tool == nil {
		cs := chunks(text, turn.Chunks)
		for i, c := range cs {
			if i == len(cs)-1 && turn.Tool == nil {
				last = []any{map[string]any{"text": c}}
				break
			}
			if !send([]any{map[string]any{"text": c}}, false) {
				return
			}
		}
	}
	if turn.Tool != nil {
		args := turn.Tool.Args
		if args == nil {
			args = map[string]any{}
		}
		call := map[string]any{"name": GeminiToolName(turn.Tool.Server, turn.Tool.Tool), "args": args}
		if turn.Tool.ID != "" {
			call["id"] = turn.Tool.ID
		}
		last = []any{map[string]any{"functionCall": call}}
	}
	send(last, true)
}

// GeminiFunctionResult returns the text of the last functionResponse in
// a Gemini request (its response's output, else the response as JSON),
// with the text parts that follow it in the same turn, without the
// <untrusted_context> wrapper Gemini CLI puts around MCP tool output.
func GeminiFunctionResult(r Request) string {
	var req struct {
		Contents []struct {
			Parts []map[string]any `json:"parts"`
		} `json:"contents"`
	}
	if json.Unmarshal(r.Body, &req) != nil {
		return ""
	}
	result := ""
	for _, c := range req.Contents {
		found := false
		var texts []string
		for _, p := range c.Parts {
			if fr, ok := p["functionResponse"].(map[string]any); ok {
				found = true
				resp, _ := fr["response"].(map[string]any)
				if out, ok := resp["output"].(string); ok {
					texts = append(texts, out)
				} else if resp != nil {
					b, _ := json.Marshal(resp)
					texts = append(texts, string(b))
				}
				continue
			}
			if t, ok := p["text"].(string); ok && found {
				texts = append(texts, t)
			}
		}
		if found {
			result = strings.TrimSpace(strings.Join(texts, "\n"))
			// Gemini CLI wraps MCP tool output for its model.
			if in, ok := strings.CutPrefix(result, "<untrusted_context>"); ok {
				result = strings.TrimSpace(strings.TrimSuffix(in, "</untrusted_context>"))
			}
		}
	}
	return result
}
