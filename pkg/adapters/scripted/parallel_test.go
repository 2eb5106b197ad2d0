package scripted_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	"go.uber.org/goleak"
)

// meetMCP is a real MCP server (official SDK, streamable HTTP on loopback)
// whose tool "meet" proves that calls overlap: a call waits until `want`
// calls are in flight at once, and fails if they never are. Then call n
// returns only once release[n] is closed, which lets a test choose the
// order in which the calls end.
type meetMCP struct {
	srv  *httptest.Server
	want int

	mu       sync.Mutex
	inFlight int
	maxSeen  int
	all      chan struct{} // closed when want calls were in flight at once
	abort    chan struct{} // closed at cleanup: every call still waiting returns
	returned int
	release  map[int]chan struct{}
	methods  []string // JSON-RPC methods of the requests, in order
}

type meetIn struct {
	N int `json:"n"`
}

type meetOut struct {
	N   int `json:"n"`
	Met int `json:"met"`
}

func newMeetMCP(t *testing.T, want int) *meetMCP {
	m := &meetMCP{want: want, all: make(chan struct{}), abort: make(chan struct{}), release: map[int]chan struct{}{}}
	for n := range want {
		m.release[n] = make(chan struct{})
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "meet", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "meet", Description: "returns once every expected call is in flight"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in meetIn) (*mcp.CallToolResult, meetOut, error) {
			m.mu.Lock()
			m.inFlight++
			m.maxSeen = max(m.maxSeen, m.inFlight)
			if m.inFlight == m.want {
				close(m.all)
			}
			rel := m.release[in.N]
			m.mu.Unlock()
			defer func() {
				m.mu.Lock()
				m.inFlight--
				m.returned++
				m.mu.Unlock()
			}()
			// A generous bound, only so that a failure ends: calls made one
			// after the other never meet.
			wait := time.NewTimer(30 * time.Second)
			defer wait.Stop()
			select {
			case <-m.all:
			case <-ctx.Done():
				return nil, meetOut{}, ctx.Err()
			case <-m.abort:
				return nil, meetOut{}, fmt.Errorf("call %d: aborted", in.N)
			case <-wait.C:
				return nil, meetOut{}, fmt.Errorf("call %d: the %d calls were never in flight at once", in.N, m.want)
			}
			if rel == nil {
				return nil, meetOut{}, fmt.Errorf("no call %d expected", in.N)
			}
			select {
			case <-rel:
			case <-ctx.Done():
				return nil, meetOut{}, ctx.Err()
			case <-m.abort:
				return nil, meetOut{}, fmt.Errorf("call %d: aborted", in.N)
			}
			return nil, meetOut{N: in.N, Met: m.want}, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "returns its input"},
		func(_ context.Context, _ *mcp.CallToolRequest, in meetIn) (*mcp.CallToolResult, meetOut, error) {
			return nil, meetOut{N: in.N}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var msg struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(body, &msg)
			m.mu.Lock()
			m.methods = append(m.methods, msg.Method)
			m.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		m.stop()
		m.srv.Close()
	})
	return m
}

// stop makes every call still waiting return.
func (m *meetMCP) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.abort:
	default:
		close(m.abort)
	}
}

func (m *meetMCP) config() string {
	return `{"mcpServers":{"meet":{"type":"http","url":"` + m.srv.URL + `"}}}`
}

// lineWriter is the agent's stdout: it keeps the lines and hands each to
// onLine as it is written.
type lineWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	lines  []map[string]any
	onLine func(map[string]any)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(p)
	var got []map[string]any
	for {
		i := bytes.IndexByte(w.buf.Bytes(), '\n')
		if i < 0 {
			break
		}
		var l map[string]any
		if err := json.Unmarshal(w.buf.Next(i+1), &l); err == nil {
			w.lines = append(w.lines, l)
			got = append(got, l)
		}
	}
	w.mu.Unlock()
	for _, l := range got {
		if w.onLine != nil {
			w.onLine(l)
		}
	}
	return len(p), nil
}

func (w *lineWriter) all() []map[string]any {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]map[string]any(nil), w.lines...)
}

// A parallel step's calls really overlap (the server sees all of them in
// flight at once: its tool fails otherwise), their tool_call lines come
// first in the listed order, their results as they end, and say_result
// sees the results in the listed order whatever order they ended in (here
// the reverse one, forced by events).
func TestParallelCallsOverlapThroughARealMCPServer(t *testing.T) {
	const n = 3
	m := newMeetMCP(t, n)
	sc := writeScenario(t, `
- parallel:
    - call: {tool: meet, args: {n: 0}}
    - sleep: 1ms
    - call: {tool: meet, args: {n: 1}}
    - call: {tool: mcp__meet__meet, args: {n: 2}}
- say_result: "{{range .Results}}{{.JSON.n}} {{end}}error={{.IsError}} json={{len .JSON}}"
- say_result: "{{.Text}}"
- parallel:
    - call: {tool: no_such_tool}
    - call: {tool: echo, args: {n: 7}}
- say_result: "{{range .Results}}[{{.IsError}} {{.Text}}]{{end}} error={{.IsError}}"
- ask: more?
- say_result: "resumed: {{range .Results}}{{.IsError}} {{end}}"
`)
	// Call k ends only after the agent wrote call k+1's tool_result line:
	// the calls end in the reverse of the listed order.
	m.release[n-1] = closedChan()
	out := &lineWriter{onLine: func(l map[string]any) {
		if l["type"] != "tool_result" {
			return
		}
		if s, ok := l["structured"].(map[string]any); ok {
			if k, ok := s["n"].(float64); ok && int(k) > 0 && int(k) < n {
				close(m.release[int(k)-1])
			}
		}
	}}
	dir := t.TempDir()
	var errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := scripted.RunAgent(ctx, []string{"--scenario", sc, "--state-dir", dir, "--mcp-config", m.config(), "--prompt", "go", "--session-id", "session-parallel"}, out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := out.all()
	var calls, results []string
	for _, l := range lines {
		switch l["type"] {
		case "tool_call":
			calls = append(calls, l["id"].(string))
		case "tool_result":
			if l["is_error"] == true && strings.Contains(fmt.Sprint(l["content"]), "never in flight") {
				t.Fatalf("the calls did not overlap: %v", l["content"])
			}
			results = append(results, fmt.Sprint(l["id"]))
		}
	}
	wantCalls := []string{"call-session--0.0", "call-session--0.2", "call-session--0.3", "call-session--3.0", "call-session--3.1"}
	if fmt.Sprint(calls) != fmt.Sprint(wantCalls) {
		t.Errorf("tool_call ids %v, want %v", calls, wantCalls)
	}
	if got := fmt.Sprint(results[:3]); got != "[call-session--0.3 call-session--0.2 call-session--0.0]" {
		t.Errorf("tool_result order %s, want the reverse of the listed order (forced by the server)", got)
	}
	if m.maxSeen != n {
		t.Errorf("the server saw at most %d calls in flight, want %d", m.maxSeen, n)
	}
	texts := ofType(lines, "text")
	want := []string{
		"0 1 2 error=false json=3",
		`{"met":3,"n":0}` + "\n" + `{"met":3,"n":1}` + "\n" + `{"met":3,"n":2}`,
		`[true tool "no_such_tool" is not offered by any connected MCP server][false {"met":0,"n":7}] error=true`,
		"more?",
	}
	if len(texts) != len(want) {
		t.Fatalf("texts %v, want %q", texts, want)
	}
	for i, w := range want {
		if texts[i]["text"] != w {
			t.Errorf("text %d = %q, want %q", i, texts[i]["text"], w)
		}
	}
	// The next turn of the session still sees the last parallel step's results.
	next := turn(t, sc, dir, "yes", "--resume", "session-parallel")
	if s := ofType(next, "text"); len(s) != 1 || s[0]["text"] != "resumed: true false " {
		t.Fatalf("resumed turn said %v", s)
	}
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Cancelling the agent during a parallel step ends every call in flight
// at once (each gets its cancelled tool result, the sleep beside them ends
// too) and the agent exits with 130 without running another step. (The
// server side of a cancelled call, notifications/cancelled, is the MCP
// SDK's; the host also ends a run's calls when the run ends.)
func TestParallelCallsCancelTogether(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"), goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"), goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
	const n = 3
	m := newMeetMCP(t, n+1) // never met: every call waits until cancelled
	sc := writeScenario(t, "- parallel:\n    - call: {tool: meet, args: {n: 0}}\n    - call: {tool: meet, args: {n: 1}}\n    - call: {tool: meet, args: {n: 2}}\n    - sleep: 1h\n- say: never\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan int, 1)
	out := &lineWriter{}
	var errb bytes.Buffer
	go func() {
		done <- scripted.RunAgent(runCtx, []string{"--scenario", sc, "--state-dir", t.TempDir(), "--mcp-config", m.config()}, out, &errb)
	}()
	waitFor(t, ctx, "all calls in flight", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.inFlight == n
	})
	stop()
	select {
	case code := <-done:
		if code != 130 {
			t.Fatalf("exit %d, want 130: %s", code, errb.String())
		}
	case <-ctx.Done():
		t.Fatal("the agent did not return after cancel")
	}
	if texts := ofType(out.all(), "text"); len(texts) != 0 {
		t.Errorf("a cancelled run went on to %v", texts)
	}
	results := ofType(out.all(), "tool_result")
	if len(results) != n {
		t.Errorf("%d tool results, want %d (one per cancelled call)", len(results), n)
	}
	for _, r := range results {
		if r["is_error"] != true || r["content"] != "tool call cancelled" {
			t.Errorf("result %v, want a cancelled call", r)
		}
	}
	m.stop()
	waitFor(t, ctx, "every handler returned", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.returned == n
	})
	m.srv.CloseClientConnections()
	m.srv.Close()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// The agent opens its MCP session the way Claude Code and Codex do:
// initialize, notifications/initialized, tools/list, then its calls. (The
// MCP SDK's newer default first probes with server/discover, which a
// stateful streamable-HTTP server answers by creating a session and
// throwing it away: one more request and session per run.)
func TestAgentOpensItsSessionLikeTheRealCLIs(t *testing.T) {
	m := newMeetMCP(t, 1)
	sc := writeScenario(t, "- call: {tool: echo, args: {n: 1}}\n")
	var out, errb bytes.Buffer
	if code := scripted.RunAgent(t.Context(), []string{"--scenario", sc, "--state-dir", t.TempDir(), "--mcp-config", m.config()}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	m.mu.Lock()
	got := fmt.Sprint(m.methods)
	m.mu.Unlock()
	if want := "[initialize notifications/initialized tools/list tools/call]"; got != want {
		t.Errorf("requests %s, want %s", got, want)
	}
}
