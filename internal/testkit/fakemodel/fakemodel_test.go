package fakemodel

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
)

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAnthropic(t *testing.T) {
	a := NewAnthropic(
		Turn{Text: "calling", Tool: &ToolCall{Server: "a2a-delegation", Tool: "delegate_to_agent", Args: map[string]any{"task": "x"}, ID: "toolu_1"}},
		Turn{Text: "got {{result}}"},
		Turn{Status: 500},
	)
	defer a.Close()
	tests := []struct {
		name, body string
		status     int
		contains   []string
	}{
		{"tool call", `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`, 200,
			[]string{"event: message_start", `"name":"mcp__a2a-delegation__delegate_to_agent"`, `"id":"toolu_1"`, `"stop_reason":"tool_use"`, "input_json_delta", "message_stop"}},
		{"templated result", `{"stream":true,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"DONE"}]}]}]}`, 200,
			[]string{`"text":"got"`, `"text":" DO"`}},
		{"http 500", `{"stream":true,"messages":[]}`, 500, []string{"api_error"}},
		{"fallback non-streaming", `{"messages":[]}`, 200, []string{`"text":"ok"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, body := post(t, a.URL+"/v1/messages?beta=true", tc.body)
			if st != tc.status {
				t.Fatalf("status %d: %s", st, body)
			}
			for _, c := range tc.contains {
				if !strings.Contains(body, c) {
					t.Errorf("body lacks %q:\n%s", c, body)
				}
			}
		})
	}
	req, _ := http.NewRequest(http.MethodHead, a.URL+"/", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("HEAD /: %v %v", resp, err)
	}
	if n := len(ModelRequests(a.Requests())); n != 4 {
		t.Errorf("logged %d model requests, want 4", n)
	}
	if got := ToolResults(a.Requests()[1])["toolu_1"]; got != "DONE" {
		t.Errorf("ToolResults = %q", got)
	}
}

func TestOpenAI(t *testing.T) {
	o := NewOpenAI(
		Turn{Tool: &ToolCall{Server: "a2a-delegation", Tool: "echo", ID: "call_1"}},
		Turn{Text: "said {{result}}", Thinking: "hmm"},
	)
	defer o.Close()
	_, body := post(t, o.URL+"/v1/responses", `{"input":[]}`)
	for _, c := range []string{`"type":"function_call"`, `"namespace":"mcp__a2a_delegation"`, `"call_id":"call_1"`, "response.completed"} {
		if !strings.Contains(body, c) {
			t.Errorf("body lacks %q:\n%s", c, body)
		}
	}
	in := `{"input":[{"type":"function_call_output","call_id":"call_1","output":[{"type":"input_text","text":"Wall time: 0.0047 seconds\nOutput:"},{"type":"input_text","text":"pong"}]}]}`
	_, body = post(t, o.URL+"/v1/responses", in)
	if !strings.Contains(body, `"text":"said pong"`) || !strings.Contains(body, `"type":"reasoning"`) {
		t.Errorf("templated reply:\n%s", body)
	}
	if got := FunctionCallOutputs(o.Requests()[1])["call_1"]; got != "pong" {
		t.Errorf("FunctionCallOutputs = %q", got)
	}
	cfg := strings.Join(o.CodexConfig("KEY", "/tmp/c.json"), "\n")
	if !strings.Contains(cfg, `base_url="`+o.URL+`/v1"`) || !strings.Contains(cfg, `env_key="KEY"`) {
		t.Errorf("codex config %s", cfg)
	}
}

func TestSlowStreamStopsOnDisconnect(t *testing.T) {
	a := NewAnthropic(Turn{Text: "a b c d", Chunks: 4, Delay: time.Hour})
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+"/v1/messages", strings.NewReader(`{"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("the slow stream ended on its own")
	}
	a.Close() // returns only once the handler has stopped
}

func TestStripWallTime(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                                "plain",
		"Wall time: 0.1 seconds\nOutput:":      "",
		"Wall time: 0.1 seconds\nOutput:\nabc": "abc",
	} {
		if got := stripWallTime(in); got != want {
			t.Errorf("stripWallTime(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCatalog(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.json")
	if err := WriteCodexModelCatalog(p); err != nil {
		t.Fatal(err)
	}
	var c struct {
		Models []map[string]any `json:"models"`
	}
	b, _ := os.ReadFile(p)
	if err := json.Unmarshal(b, &c); err != nil || len(c.Models) != 1 || c.Models[0]["slug"] != FakeCodexModel || c.Models[0]["supports_search_tool"] != false {
		t.Errorf("catalog %s (%v)", b, err)
	}
}

func TestMCPServiceRevokesTokens(t *testing.T) {
	s := NewMCPService("k")
	defer s.Close()
	ctx := context.Background()
	svc, err := s.Ensure(ctx, agentadaptor.RuntimeServiceRequest{RunID: "run-1", RunToken: "tok-1"})
	if err != nil {
		t.Fatal(err)
	}
	ref := svc.Ref()
	spec, ok, err := agentadaptor.MCPServerFromRef(ref)
	if err != nil || !ok || spec.Key != "k" || spec.BearerTokenEnvVar != agentadaptor.EnvRunToken || !spec.Required {
		t.Errorf("ref %+v -> %+v %v %v", ref, spec, ok, err)
	}
	if st, _ := s.ProbeStatus(ctx, "tok-1"); st != http.StatusOK {
		t.Errorf("live token: %d", st)
	}
	if st, _ := s.ProbeStatus(ctx, "wrong"); st != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", st)
	}
	_ = svc.Release(ctx)
	if st, _ := s.ProbeStatus(ctx, "tok-1"); st != http.StatusUnauthorized {
		t.Errorf("revoked token: %d", st)
	}
}

func TestAwaitRequests(t *testing.T) {
	a := NewAnthropic(Turn{Text: "one"}, Turn{Text: "two"})
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	twoCalls := func(rs []Request) bool { return len(ModelRequests(rs)) >= 2 }
	done := make(chan []Request, 1)
	go func() {
		rs, err := a.AwaitRequests(ctx, twoCalls)
		if err != nil {
			t.Error(err)
		}
		done <- rs
	}()
	for range 2 {
		post(t, a.URL+"/v1/messages", `{"messages":[{"role":"user","content":"hi"}]}`)
	}
	if rs := <-done; len(ModelRequests(rs)) != 2 {
		t.Errorf("got %d model requests, want 2", len(ModelRequests(rs)))
	}
	// Already true: returns at once. Never true: returns with ctx's error.
	if _, err := a.AwaitRequests(ctx, twoCalls); err != nil {
		t.Error(err)
	}
	short, cancelShort := context.WithCancel(ctx)
	cancelShort()
	if _, err := a.AwaitRequests(short, func([]Request) bool { return false }); err != context.Canceled {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

func TestGemini(t *testing.T) {
	g := NewGemini(
		Turn{Text: "asking", Chunks: 1, Thinking: "hmm", Tool: &ToolCall{Server: "a2a-delegation", Tool: "delegate_to_agent", Args: map[string]any{"task": "x"}, ID: "gem-1"}},
		Turn{Text: "got {{result}}"},
		Turn{Status: 500},
	)
	defer g.Close()
	const stream = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
	tests := []struct {
		name, path, body string
		status           int
		contains         []string
	}{
		{"tool call", stream, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, 200,
			[]string{`"thought":true`, `"text":"hmm"`, `"text":"asking"`, `"name":"mcp_a2a-delegation_delegate_to_agent"`, `"id":"gem-1"`, `"finishReason":"STOP"`, `"usageMetadata"`}},
		// A side task answers JSON and does not take the next turn.
		{"side task", "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[]}`, 200, []string{`next_speaker`}},
		{"templated result", stream, `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"x","response":{"output":"<untrusted_context>DONE</untrusted_context>"}}}]}]}`, 200,
			[]string{`"text":"got"`, `"text":" DO"`}},
		{"http 500", stream, `{"contents":[]}`, 500, []string{`"code":500`}},
		{"fallback", stream, `{"contents":[]}`, 200, []string{`"text":"o"`, `"text":"k"`}},
		{"count tokens", "/v1beta/models/gemini-2.5-flash:countTokens", `{}`, 200, []string{`"totalTokens"`}},
		{"unknown path", "/v1/other", `{}`, 404, []string{"NOT_FOUND"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, body := post(t, g.URL+tc.path, tc.body)
			if st != tc.status {
				t.Fatalf("status %d: %s", st, body)
			}
			for _, c := range tc.contains {
				if !strings.Contains(body, c) {
					t.Errorf("body lacks %q:\n%s", c, body)
				}
			}
		})
	}
	if n := len(GeminiStreams(g.Requests())); n != 4 {
		t.Errorf("logged %d streamed requests, want 4", n)
	}
	if n := len(ModelRequests(g.Requests())); n != 4 {
		t.Errorf("ModelRequests found %d streamed requests, want 4", n)
	}
	if got := GeminiFunctionResult(g.Requests()[2]); got != "DONE" {
		t.Errorf("GeminiFunctionResult = %q", got)
	}
	if n := g.Aborted(); n != 0 {
		t.Errorf("Aborted = %d after answers that all completed", n)
	}
}

// A client that goes away mid-answer ends the stream, and the fake counts
// it (Gemini CLI's A2A server aborts its model request on a cancel).
func TestGeminiCountsAbortedAnswers(t *testing.T) {
	g := NewGemini(Turn{Text: "never finished", Chunks: 2, Delay: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reqCtx, abort := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(reqCtx, http.MethodPost, g.URL+"/v1beta/models/m:streamGenerateContent?alt=sse", strings.NewReader(`{}`))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		errc <- err
	}()
	if _, err := g.AwaitRequests(ctx, func(rs []Request) bool { return len(GeminiStreams(rs)) == 1 }); err != nil {
		t.Fatal(err)
	}
	abort()
	if err := <-errc; err == nil {
		t.Fatal("the slow stream ended on its own")
	}
	g.Close() // returns only once the handler has stopped
	if n := g.Aborted(); n != 1 {
		t.Errorf("Aborted = %d, want 1", n)
	}
}
