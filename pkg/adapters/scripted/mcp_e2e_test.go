package scripted_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	"go.uber.org/goleak"
)

// runScopedMCP is a RuntimeServiceManager in the shape of the delegation MCP
// server: one loopback MCP endpoint, and per run a bearer token that
// identifies the run while it is live (Option A of
// docs/design.md#run-scoped-mcp-context).
type runScopedMCP struct {
	srv *httptest.Server

	mu      sync.Mutex
	tokens  map[string]string // token -> run id
	runs    map[string]context.CancelFunc
	calls   []toolCall
	blocked chan struct{} // closed when a "block" call started
	done    chan struct{} // closed when a "block" call returned
}

type toolCall struct {
	RunID      string
	ToolCallID string
	Tool       string
}

type whoamiIn struct {
	Note string `json:"note,omitempty"`
}

type whoamiOut struct {
	RunID      string `json:"run_id"`
	ToolCallID string `json:"tool_call_id"`
}

func newRunScopedMCP(t *testing.T) *runScopedMCP {
	m := &runScopedMCP{tokens: map[string]string{}, runs: map[string]context.CancelFunc{}, blocked: make(chan struct{}), done: make(chan struct{})}
	server := mcp.NewServer(&mcp.Implementation{Name: "run-scoped-test", Version: "1"}, nil)
	record := func(req *mcp.CallToolRequest, tool string) toolCall {
		c := toolCall{Tool: tool, RunID: req.Extra.TokenInfo.UserID}
		if id, ok := req.Params.Meta[scripted.MetaToolCallID].(string); ok {
			c.ToolCallID = id
		}
		m.mu.Lock()
		m.calls = append(m.calls, c)
		m.mu.Unlock()
		return c
	}
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "reports the run the call belongs to"},
		func(ctx context.Context, req *mcp.CallToolRequest, in whoamiIn) (*mcp.CallToolResult, whoamiOut, error) {
			c := record(req, "whoami")
			return nil, whoamiOut{RunID: c.RunID, ToolCallID: c.ToolCallID}, nil
		})
	var once sync.Once
	mcp.AddTool(server, &mcp.Tool{Name: "block", Description: "blocks until cancelled"},
		func(ctx context.Context, req *mcp.CallToolRequest, in whoamiIn) (*mcp.CallToolResult, whoamiOut, error) {
			c := record(req, "block")
			// Like the delegation server, a call also ends when its run's
			// service is released, whether or not the client sent
			// notifications/cancelled.
			ctx, stop := m.runContext(ctx, c.RunID)
			defer stop()
			once.Do(func() { close(m.blocked) })
			defer func() {
				select {
				case <-m.done:
				default:
					close(m.done)
				}
			}()
			<-ctx.Done()
			return nil, whoamiOut{}, ctx.Err()
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		runID, ok := m.tokens[token]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: runID, Expiration: time.Now().Add(time.Hour)}, nil
	}
	m.srv = httptest.NewServer(auth.RequireBearerToken(verify, nil)(handler))
	t.Cleanup(m.srv.Close)
	return m
}

// runContext returns ctx, also cancelled when runID's service is released.
func (m *runScopedMCP) runContext(ctx context.Context, runID string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	m.mu.Lock()
	prev := m.runs[runID]
	if prev == nil {
		m.mu.Unlock()
		cancel()
		return ctx, cancel
	}
	m.runs[runID] = func() { prev(); cancel() }
	m.mu.Unlock()
	return ctx, cancel
}

type runScopedService struct {
	m     *runScopedMCP
	runID string
	token string
	ref   agentadaptor.RuntimeServiceRef
}

func (m *runScopedMCP) Ensure(_ context.Context, req agentadaptor.RuntimeServiceRequest) (agentadaptor.RuntimeService, error) {
	m.mu.Lock()
	m.tokens[req.RunToken] = req.RunID
	m.runs[req.RunID] = func() {}
	m.mu.Unlock()
	return &runScopedService{m: m, runID: req.RunID, token: req.RunToken, ref: agentadaptor.RuntimeServiceRef{
		ID: "run-scoped", Name: "run-scoped", URL: m.srv.URL,
		Metadata: map[string]string{
			agentadaptor.MetaMCPEnabled: "true", agentadaptor.MetaMCPKey: "run-scoped",
			agentadaptor.MetaMCPAuth: "bearer", agentadaptor.MetaMCPRequired: "true",
		},
	}}, nil
}

func (s *runScopedService) Ref() agentadaptor.RuntimeServiceRef { return s.ref }

func (s *runScopedService) Release(context.Context) error {
	s.m.mu.Lock()
	delete(s.m.tokens, s.token)
	cancel := s.m.runs[s.runID]
	delete(s.m.runs, s.runID)
	s.m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return nil
}

// status posts an MCP initialize with the given token and returns the HTTP status.
func (m *runScopedMCP) status(t *testing.T, token string) int {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, m.srv.URL, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestRuntimeServiceMCPEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := newRunScopedMCP(t)
	scenario := writeScenario(t, `
- say: Let me check which run I am.
- call: {tool: whoami, args: {note: no run id passed by the model}}
- say_result: "I belong to {{.JSON.run_id}}"
`)
	a, err := scripted.New(scripted.Config{Scenario: scenario, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sdk, _ := agentadaptor.New(agentadaptor.WithAdapters(a))
	var token string
	probe := &tokenProbe{inner: m, token: &token}
	h, err := sdk.Start(ctx, "who am I?", agentadaptor.WithRuntimeServices(probe))
	if err != nil {
		t.Fatal(err)
	}
	var toolCallID string
	for p := range h.StreamEvents() {
		if p.Kind == agentadaptor.KindToolCallStart {
			toolCallID = p.ToolCallID
		}
	}
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("status %s: %v\nstderr: %s", res.Status, res.Failure, res.RawStreams.Stderr)
	}
	if want := "I belong to " + h.RunID(); res.Output != want {
		t.Errorf("output %q, want %q", res.Output, want)
	}
	m.mu.Lock()
	calls := append([]toolCall(nil), m.calls...)
	m.mu.Unlock()
	if len(calls) != 1 || calls[0].RunID != h.RunID() || calls[0].ToolCallID != toolCallID || toolCallID == "" {
		t.Fatalf("calls = %+v, want one from run %s with tool call id %q", calls, h.RunID(), toolCallID)
	}
	if strings.Contains(string(res.RawStreams.Stdout), token) || strings.Contains(fmt.Sprint(res), token) {
		t.Errorf("the run token leaked into the result")
	}
	if got := m.status(t, token); got != http.StatusUnauthorized {
		t.Errorf("token of an ended run: HTTP %d, want 401", got)
	}
	if got := m.status(t, "not-a-token"); got != http.StatusUnauthorized {
		t.Errorf("unknown token: HTTP %d, want 401", got)
	}
}

// tokenProbe wraps a manager to let the test see the run token.
type tokenProbe struct {
	inner agentadaptor.RuntimeServiceManager
	token *string
}

func (p *tokenProbe) Ensure(ctx context.Context, req agentadaptor.RuntimeServiceRequest) (agentadaptor.RuntimeService, error) {
	*p.token = req.RunToken
	return p.inner.Ensure(ctx, req)
}

func TestCancelMidToolCallDoesNotLeak(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"), goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"), goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := newRunScopedMCP(t)
	defer m.srv.Close()
	scenario := writeScenario(t, "- call: {tool: block}\n- say: never\n")
	a, _ := scripted.New(scripted.Config{Scenario: scenario, StateDir: t.TempDir()})
	sdk, _ := agentadaptor.New(agentadaptor.WithAdapters(a))
	h, err := sdk.Start(ctx, "x", agentadaptor.WithRuntimeServices(m))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range h.StreamEvents() {
		}
	}()
	select {
	case <-m.blocked:
	case <-ctx.Done():
		t.Fatal("tool call never started")
	}
	if err := h.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCancelled {
		t.Fatalf("status %s", res.Status)
	}
	select {
	case <-m.done:
	case <-ctx.Done():
		t.Fatal("the tool handler was not released after the client went away")
	}
	m.srv.CloseClientConnections()
	http.DefaultClient.CloseIdleConnections()
}

func TestConcurrentScriptedRuns(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"), goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"), goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	m := newRunScopedMCP(t)
	defer m.srv.Close()
	scenario := writeScenario(t, "- call: {tool: whoami}\n- say_result: \"{{.JSON.run_id}}\"\n")
	a, _ := scripted.New(scripted.Config{Scenario: scenario, StateDir: t.TempDir()})
	sdk, _ := agentadaptor.New(agentadaptor.WithAdapters(a))
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			h, err := sdk.Start(ctx, "x", agentadaptor.WithRuntimeServices(m), agentadaptor.WithStreaming())
			if err != nil {
				t.Error(err)
				return
			}
			for range h.StreamEvents() {
			}
			res, _ := h.Wait(ctx)
			if res.Status != agentadaptor.StatusCompleted || res.Output != h.RunID() {
				t.Errorf("run %s: %s output %q (%v)", h.RunID(), res.Status, res.Output, res.Failure)
			}
		})
	}
	wg.Wait()
	m.mu.Lock()
	n := len(m.tokens)
	m.mu.Unlock()
	if n != 0 {
		t.Errorf("%d run tokens still live after all runs ended", n)
	}
	m.srv.CloseClientConnections()
}
