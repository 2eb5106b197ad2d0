package fakemodel

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// ToolCallRecord is one tools/call the MCPService served.
type ToolCallRecord struct {
	// RunID is the run the bearer token of the request belongs to.
	RunID string
	Tool  string
	Args  map[string]any
	// Meta is the request's params._meta (Claude: "claudecode/toolUseId";
	// Codex: "callId", "threadId", ...).
	Meta map[string]any
}

// MCPService is a runtime-service manager (Option A) for end-to-end tests:
// one streamable-HTTP MCP server (official Go SDK) behind
// auth.RequireBearerToken that accepts only the bearer tokens of live runs.
// Ensure registers the run's RunToken and injects the server into the run's
// MCP set; Release revokes the token, so later requests get HTTP 401.
//
// It offers the tools "echo" ({text}) -> "echo:<text>" and "whoami" -> the
// run id resolved from the token.
type MCPService struct {
	key string
	srv *httptest.Server

	mu     sync.Mutex
	live   map[string]string // token -> run id
	tokens map[string]string // run id -> token (kept after release, for tests)
	calls  []ToolCallRecord
}

// NewMCPService starts the service's MCP server on 127.0.0.1. key is the MCP
// server key the runs see (tools appear as mcp__<key>__echo).
func NewMCPService(key string) *MCPService {
	s := &MCPService{key: key, live: map[string]string{}, tokens: map[string]string{}}
	server := mcp.NewServer(&mcp.Implementation{Name: "agentadaptor-e2e", Version: "1.0.0"}, nil)
	type echoIn struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echo the text back."}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		s.record(req, "echo", map[string]any{"text": in.Text})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo:" + in.Text}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "Report the run this call belongs to."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		runID := s.record(req, "whoami", nil)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "run:" + runID}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		s.mu.Lock()
		runID, ok := s.live[token]
		s.mu.Unlock()
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: runID, Expiration: time.Now().Add(time.Hour)}, nil
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", auth.RequireBearerToken(verify, nil)(h))
	s.srv = httptest.NewServer(mux)
	return s
}

func (s *MCPService) record(req *mcp.CallToolRequest, tool string, args map[string]any) string {
	runID := ""
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		runID = req.Extra.TokenInfo.UserID
	}
	meta := map[string]any{}
	maps.Copy(meta, req.Params.GetMeta())
	s.mu.Lock()
	s.calls = append(s.calls, ToolCallRecord{RunID: runID, Tool: tool, Args: args, Meta: meta})
	s.mu.Unlock()
	return runID
}

// URL is the MCP endpoint.
func (s *MCPService) URL() string { return s.srv.URL + "/mcp" }

// Key is the MCP server key runs see.
func (s *MCPService) Key() string { return s.key }

// Calls returns the tool calls served so far.
func (s *MCPService) Calls() []ToolCallRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ToolCallRecord(nil), s.calls...)
}

// TokenFor returns the token a run was given (also after it was revoked).
func (s *MCPService) TokenFor(runID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens[runID]
}

// Live reports how many run tokens are currently accepted.
func (s *MCPService) Live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

// Close stops the server.
func (s *MCPService) Close() { s.srv.Close() }

// Ensure implements agentadaptor.RuntimeServiceManager.
func (s *MCPService) Ensure(_ context.Context, req agentadaptor.RuntimeServiceRequest) (agentadaptor.RuntimeService, error) {
	if req.RunToken == "" {
		return nil, fmt.Errorf("no run token")
	}
	s.mu.Lock()
	s.live[req.RunToken] = req.RunID
	s.tokens[req.RunID] = req.RunToken
	s.mu.Unlock()
	return &mcpRunService{s: s, token: req.RunToken, ref: agentadaptor.RuntimeServiceRef{
		ID: "e2e-mcp", Name: s.key, URL: s.URL(),
		Metadata: map[string]string{
			agentadaptor.MetaMCPEnabled: "true", agentadaptor.MetaMCPKey: s.key,
			agentadaptor.MetaMCPAuth: "bearer", agentadaptor.MetaMCPRequired: "true",
			agentadaptor.MetaMCPToolTimeout: "2m",
		},
	}}, nil
}

type mcpRunService struct {
	s     *MCPService
	token string
	ref   agentadaptor.RuntimeServiceRef
}

// Ref implements agentadaptor.RuntimeService.
func (r *mcpRunService) Ref() agentadaptor.RuntimeServiceRef { return r.ref }

// Release implements agentadaptor.RuntimeService: it revokes the run token.
func (r *mcpRunService) Release(context.Context) error {
	r.s.mu.Lock()
	delete(r.s.live, r.token)
	r.s.mu.Unlock()
	return nil
}

// ProbeStatus POSTs an MCP initialize request with the given bearer token and
// returns the HTTP status (401 once the token is revoked).
func (s *MCPService) ProbeStatus(ctx context.Context, token string) (int, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL(), stringsReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
