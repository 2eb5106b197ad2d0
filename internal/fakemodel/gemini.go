package fakemodel

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"
)

// Gemini is a fake Gemini API (generativelanguage v1beta) for Gemini CLI
// and the agents built on its core, such as Gemini CLI's A2A server
// (@google/gemini-cli-a2a-server). Point them at it with
// GOOGLE_GEMINI_BASE_URL=URL and any GEMINI_API_KEY: @google/genai, which
// their core uses, reads that variable.
//
// It answers POST /v1beta/models/{model}:streamGenerateContent (alt=sse)
// with the next queued Turn's text in Chunks SSE chunks (usage in the last
// one), :generateContent with the whole text as JSON, and :countTokens.
// Turn.Delay pauses before each chunk; a client that goes away ends the
// answer, and is counted by [Gemini.Aborted]. Tool calls are not supported.
type Gemini struct {
	Server
	aborted atomic.Int64
}

// NewGemini starts a fake Gemini API with the given turns queued (then
// "ok" for every further request).
func NewGemini(turns ...Turn) *Gemini {
	g := &Gemini{Server: Server{s: &script{fallback: Turn{Text: "ok"}}}}
	g.s.enqueue(turns...)
	g.Server.Server = httptest.NewServer(http.HandlerFunc(g.handle))
	return g
}

// Aborted reports how many answers were cut because the client went away
// (a cancelled request).
func (g *Gemini) Aborted() int64 { return g.aborted.Load() }

type geminiPart struct {
	Text string `json:"text"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiCandidate struct {
	Content      geminiContent `json:"content"`
	FinishReason string        `json:"finishReason,omitempty"`
	Index        int           `json:"index"`
}

type geminiUsage struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount"`
	TotalTokenCount      int `json:"totalTokenCount"`
}

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata *geminiUsage      `json:"usageMetadata,omitempty"`
	ModelVersion  string            `json:"modelVersion,omitempty"`
}

func geminiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": "INVALID_ARGUMENT"}})
	_, _ = w.Write(b)
}

func (g *Gemini) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	g.s.record(Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, Time: time.Now()})
	_, action, _ := strings.Cut(r.URL.Path, ":")
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1beta/models/") {
		geminiError(w, http.StatusNotFound, "not found")
		return
	}
	switch action {
	case "countTokens":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"totalTokens": 10}`))
		return
	case "streamGenerateContent", "generateContent":
	default:
		geminiError(w, http.StatusNotFound, "unknown method "+action)
		return
	}
	turn := g.s.next()
	defaults(&turn)
	if turn.Status != 0 && turn.Status != http.StatusOK {
		geminiError(w, turn.Status, "scripted failure")
		return
	}
	usage := &geminiUsage{PromptTokenCount: turn.InputTokens, CandidatesTokenCount: turn.OutputTokens, TotalTokenCount: turn.InputTokens + turn.OutputTokens}
	if action == "generateContent" {
		if !pause(r, turn.Delay) {
			g.aborted.Add(1)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(geminiResponse{Candidates: []geminiCandidate{{Content: geminiContent{Role: "model", Parts: []geminiPart{{Text: turn.Text}}}, FinishReason: "STOP"}}, UsageMetadata: usage})
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	n := turn.Chunks
	if n <= 0 {
		n = 3
	}
	parts := chunks(turn.Text, n)
	for i, c := range parts {
		if !pause(r, turn.Delay) {
			g.aborted.Add(1)
			return
		}
		resp := geminiResponse{Candidates: []geminiCandidate{{Content: geminiContent{Role: "model", Parts: []geminiPart{{Text: c}}}}}, ModelVersion: "fake-gemini"}
		if i == len(parts)-1 {
			resp.Candidates[0].FinishReason = "STOP"
			resp.UsageMetadata = usage
		}
		b, _ := json.Marshal(resp)
		if _, err := w.Write([]byte("data: " + string(b) + "\r\n\r\n")); err != nil {
			g.aborted.Add(1)
			return
		}
		if f != nil {
			f.Flush()
		}
	}
}
