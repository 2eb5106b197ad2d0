package fakemodel

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Turn is the scripted answer to one model request.
type Turn struct {
	// Text is the assistant's reply. "{{result}}" is replaced with the text
	// of the most recent tool result found in the request.
	Text string
	// Thinking, if set, is sent as a reasoning block before the text.
	Thinking string
	// Tool, if set, makes the reply a call of that MCP tool (after Text,
	// when Text is also set).
	Tool *ToolCall
	// Status, if non-zero and not 200, answers with this HTTP status and a
	// JSON error body instead of a stream.
	Status int
	// Delay is the pause before each delta of the stream (a slow stream).
	// The server stops as soon as the client disconnects.
	Delay time.Duration
	// Chunks splits Text into this many deltas (default 3).
	Chunks int
	// InputTokens, OutputTokens, CacheReadTokens and CacheWriteTokens are the
	// usage figures reported (defaults 10, 5, 0, 0).
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int
}

// ToolCall is a model-issued call of an MCP tool.
type ToolCall struct {
	// Server is the MCP server key as configured in the CLI (e.g.
	// "a2a-delegation"); Tool is the tool's own name.
	Server, Tool string
	// Args are the call's arguments (nil: {}).
	Args map[string]any
	// ID is the call id (default: generated, unique per server).
	ID string
}

// Request is one logged model request.
type Request struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
	Time   time.Time
}

// script is the state shared by both servers.
type script struct {
	mu       sync.Mutex
	turns    []Turn
	fallback Turn
	log      []Request
	seq      int
	logged   chan struct{} // closed by the next record; nil until awaited
}

func (s *script) enqueue(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

func (s *script) next() Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.turns) == 0 {
		return s.fallback
	}
	t := s.turns[0]
	s.turns = s.turns[1:]
	return t
}

func (s *script) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, r)
	if s.logged != nil {
		close(s.logged)
		s.logged = nil
	}
}

func (s *script) requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// await blocks until cond holds for the log or ctx ends.
func (s *script) await(ctx context.Context, cond func([]Request) bool) ([]Request, error) {
	for {
		s.mu.Lock()
		log := append([]Request(nil), s.log...)
		if s.logged == nil {
			s.logged = make(chan struct{})
		}
		next := s.logged
		s.mu.Unlock()
		if cond(log) {
			return log, nil
		}
		select {
		case <-next:
		case <-ctx.Done():
			return log, ctx.Err()
		}
	}
}

func (s *script) nextID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

// chunks splits text into n roughly equal parts (at least one).
func chunks(text string, n int) []string {
	if n <= 0 {
		n = 3
	}
	r := []rune(text)
	if len(r) == 0 {
		return []string{""}
	}
	if n > len(r) {
		n = len(r)
	}
	out := make([]string, 0, n)
	size := (len(r) + n - 1) / n
	for i := 0; i < len(r); i += size {
		out = append(out, string(r[i:min(i+size, len(r))]))
	}
	return out
}

// fill replaces {{result}} with the last tool result.
func fill(text, result string) string {
	return strings.ReplaceAll(text, "{{result}}", result)
}

func defaults(t *Turn) {
	if t.InputTokens == 0 {
		t.InputTokens = 10
	}
	if t.OutputTokens == 0 {
		t.OutputTokens = 5
	}
}

// sseWriter writes SSE frames and flushes each one.
type sseWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sseWriter{w: w, f: f}
}

func (s *sseWriter) event(name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if _, err := s.w.Write([]byte("event: " + name + "\ndata: " + string(b) + "\n\n")); err != nil {
		return err
	}
	if s.f != nil {
		s.f.Flush()
	}
	return nil
}

// pause waits d or until the request is gone; it reports false in the latter case.
func pause(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// textOf joins the text found in a tool-result content value (a string, or a
// list of parts with "text"), skipping Codex's "Wall time:" preamble part.
func textOf(v any) string {
	switch c := v.(type) {
	case string:
		return stripWallTime(c)
	case []any:
		var parts []string
		for _, p := range c {
			m, ok := p.(map[string]any)
			if !ok {
				continue
			}
			if s, ok := m["text"].(string); ok {
				if s = stripWallTime(s); s != "" {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

func stripWallTime(s string) string {
	if !strings.HasPrefix(s, "Wall time:") {
		return s
	}
	// "Wall time: 0.0047 seconds\nOutput:" possibly followed by "\n<text>".
	lines := strings.Split(s, "\n")[1:]
	if len(lines) > 0 && strings.TrimSpace(lines[0]) == "Output:" {
		lines = lines[1:]
	}
	out := strings.Join(lines, "\n")
	// The Codex core of codex-acp 0.16.0 writes the MCP result's content
	// list as JSON after the preamble: its text parts are the result.
	var parts []any
	if strings.HasPrefix(out, "[{") && json.Unmarshal([]byte(out), &parts) == nil {
		return textOf(parts)
	}
	return out
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
