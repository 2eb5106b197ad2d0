package mcptool

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/net/netutil"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// Names of the MCP surface.
const (
	// ToolName is the generic delegation tool.
	ToolName = registry.ReservedToolName
	// ServiceID is the runtime service's ID, Name and MCP server key: Claude
	// sees mcp__a2a-delegation__delegate_to_agent.
	ServiceID = "a2a-delegation"
	// Path is the HTTP path of the MCP endpoint.
	Path = "/mcp"
)

// minRunTokenLen is the shortest run token accepted from the SDK.
const minRunTokenLen = 16

// Config configures a Server. Delegator is required.
type Config struct {
	// Delegator runs the delegations the tool calls ask for.
	Delegator *delegator.Delegator
	// Addr is where the MCP endpoint listens; it must be a loopback
	// address (default "127.0.0.1:0").
	Addr string
	// ToolTimeoutMargin is added to the delegator's MaxDelegationTime to
	// form the MCP tool timeout advertised to the parent CLI (default 30s).
	ToolTimeoutMargin time.Duration
	// Logger receives operational logs (default: discard).
	Logger *slog.Logger
	// MaxConnections bounds the endpoint's open connections (default
	// DefaultMaxConnections); beyond it a new connection waits to be
	// accepted until another closes.
	MaxConnections int

	// ProgressInterval paces a tool call's MCP progress notifications: the
	// first waits this long and then one goes at most this often, the
	// newest line winning; a call that ends sooner sends none (default 1s).
	ProgressInterval time.Duration
}

// DefaultMaxConnections is Config.MaxConnections when it is 0.
const DefaultMaxConnections = 1024

// Server is the delegation MCP server: a streamable-HTTP MCP endpoint on
// loopback offering delegate_to_agent and the registry's shortcut tools,
// open only to the live per-run bearer tokens its [Server.RuntimeService]
// hands to runs.
//
// Goroutine ownership: New starts one goroutine serving the listener; each
// tool call runs on the MCP server's request goroutine, plus, while a
// progress notification is being sent, the goroutine of the timer that
// sends it; the call waits for it before it returns. Close stops the
// listener and closes every MCP session, then waits for the serving
// goroutine. It does not close the Delegator.
type Server struct {
	cfg   Config
	d     *delegator.Delegator
	mcp   *mcp.Server
	ln    net.Listener
	http  *http.Server
	url   string
	tools []string
	done  chan struct{}

	mu     sync.Mutex
	closed bool
	tokens map[[32]byte]*runState
	runs   map[string]*runState
}

// runState is one live parent run as the MCP endpoint sees it.
type runState struct {
	id         string
	sessionKey string
	// tokens counts the live service instances per token hash: one run's
	// instances share its token, which is revoked with the last of them.
	tokens   map[[32]byte]int
	sessions map[*mcp.ServerSession]bool
}

// ErrClosed is returned by the runtime service once the Server is closed.
var ErrClosed = errors.New("mcptool: the delegation MCP server is closed")

// New starts the MCP server on a loopback listener.
func New(cfg Config) (*Server, error) {
	if cfg.Delegator == nil {
		return nil, errors.New("mcptool: Config.Delegator is required")
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.ToolTimeoutMargin <= 0 {
		cfg.ToolTimeoutMargin = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ProgressInterval <= 0 {
		cfg.ProgressInterval = defaultProgressInterval
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("mcptool: Addr %q: %w", cfg.Addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("mcptool: Addr %q is not a loopback address; the delegation MCP server listens on loopback only", cfg.Addr)
	}
	s := &Server{cfg: cfg, d: cfg.Delegator, tokens: map[[32]byte]*runState{}, runs: map[string]*runState{}, done: make(chan struct{})}
	s.tools = []string{ToolName}
	reg := s.d.Registry()
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentadaptor-a2a-delegation", Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions: "Delegate bounded tasks to host-curated remote agents with " + ToolName + ".",
	})
	srv.AddTool(&mcp.Tool{Name: ToolName, Description: toolDescription(reg), InputSchema: toolSchema(reg.Keys(), true)}, s.toolHandler(""))
	for _, k := range reg.Keys() {
		spec, _ := reg.Spec(k)
		if spec.Shortcut == "" {
			continue
		}
		desc := fmt.Sprintf("Delegate a bounded task to the remote agent %s (%s) and wait for its structured result.", spec.DisplayName, spec.Key)
		if spec.Description != "" {
			desc += " " + spec.Description
		}
		srv.AddTool(&mcp.Tool{Name: spec.Shortcut, Description: desc, InputSchema: toolSchema(nil, false)}, s.toolHandler(spec.Key))
		s.tools = append(s.tools, spec.Shortcut)
	}
	s.mcp = srv
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{SessionTimeout: 30 * time.Minute})
	mux := http.NewServeMux()
	mux.Handle(Path, guardMCP(auth.RequireBearerToken(s.verify, nil)(handler)))
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("mcptool: listen %s: %w", cfg.Addr, err)
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	ln = netutil.LimitListener(ln, cfg.MaxConnections)
	s.ln = ln
	s.url = "http://" + ln.Addr().String() + Path
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() {
		defer close(s.done)
		_ = s.http.Serve(ln)
	}()
	return s, nil
}

// guardMCP refuses browser requests (any Origin: the endpoint serves
// local CLIs only; a web page reaching a loopback port must not drive it)
// and names the auth scheme on 401, as the MCP authorization spec asks.
func guardMCP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Origin") != "" {
			http.Error(w, "cross-origin requests to the delegation MCP endpoint are refused", http.StatusForbidden)
			return
		}
		next.ServeHTTP(&challenge{ResponseWriter: w}, r)
	})
}

// challenge adds WWW-Authenticate to a 401.
type challenge struct{ http.ResponseWriter }

func (c *challenge) WriteHeader(code int) {
	if code == http.StatusUnauthorized && c.Header().Get("WWW-Authenticate") == "" {
		c.Header().Set("WWW-Authenticate", `Bearer realm="agentadaptor-delegation"`)
	}
	c.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer (flush
// for streamable HTTP).
func (c *challenge) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// Flush implements http.Flusher.
func (c *challenge) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// verify accepts exactly the live run tokens.
func (s *Server) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	s.mu.Lock()
	rs := s.tokens[tokenHash(token)]
	s.mu.Unlock()
	if rs == nil {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: rs.id, Expiration: time.Now().Add(time.Hour)}, nil
}

func tokenHash(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// URL returns the loopback URL of the MCP endpoint.
func (s *Server) URL() string { return s.url }

// ToolNames returns the MCP tool names offered: delegate_to_agent and the shortcuts.
func (s *Server) ToolNames() []string { return append([]string(nil), s.tools...) }

// Close stops the listener and closes the MCP sessions. Delegations still
// running are the Delegator's to cancel (Delegator.Close).
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
	err := s.http.Close()
	<-s.done
	return err
}

func (s *Server) runOf(req *mcp.CallToolRequest) *runState {
	if req.Extra == nil || req.Extra.TokenInfo == nil || req.Extra.TokenInfo.UserID == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[req.Extra.TokenInfo.UserID]
}

func (s *Server) rememberSession(rs *runState, ss *mcp.ServerSession) {
	if ss == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs[rs.id] == rs {
		rs.sessions[ss] = true
	}
}

// toolHandler serves delegate_to_agent (fixedAgent "") or a shortcut.
func (s *Server) toolHandler(fixedAgent string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		rs := s.runOf(req)
		if rs == nil {
			return toolResult(delegation.FailedResult("", fixedAgent, delegation.ProtocolA2A, &delegation.DelegationError{Code: delegation.CodeMissingRunContext,
				Message: "This tool call is not bound to a live parent run (missing or expired run token): host configuration error."})), nil
		}
		dreq, derr := DecodeToolInput(req.Params.Arguments, fixedAgent)
		if derr != nil {
			return toolResult(delegation.FailedResult("", fixedAgent, delegation.ProtocolA2A, derr)), nil
		}
		dreq.RunID, dreq.SessionKey = rs.id, rs.sessionKey
		dreq.ParentToolCallID = ParentToolCallIDFromMeta(req.Params.Meta)
		s.rememberSession(rs, req.Session)
		p := startProgress(ctx, req, s.cfg.ProgressInterval, realAfter)
		dreq.OnEvent = p.event
		res := s.d.Delegate(ctx, dreq)
		p.stop()
		return toolResult(res), nil
	}
}

// RuntimeService returns the run-scoped MCP injection
// (docs/design.md#run-scoped-mcp-context): for each run, Ensure registers the
// run's token (the run's only key to the MCP endpoint) and injects the MCP
// server into the run; RunCancelling cancels the run's delegations at once;
// Release revokes the token, cancels the run's delegations and waits for them.
func (s *Server) RuntimeService() agentadaptor.RuntimeServiceManager { return runtimeManager{s} }

type runtimeManager struct{ s *Server }

type runService struct {
	s     *Server
	runID string
	hash  [32]byte
	ref   agentadaptor.RuntimeServiceRef
	once  sync.Once
}

// Ensure implements agentadaptor.RuntimeServiceManager.
func (m runtimeManager) Ensure(_ context.Context, req agentadaptor.RuntimeServiceRequest) (agentadaptor.RuntimeService, error) {
	s := m.s
	if req.RunID == "" {
		return nil, errors.New("a2a-delegation: the run has no RunID")
	}
	if len(req.RunToken) < minRunTokenLen {
		return nil, errors.New("a2a-delegation: the run has no usable RunToken; the delegation MCP endpoint requires a per-run token")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	rs := s.runs[req.RunID]
	if rs == nil {
		if err := s.d.BeginRun(req.RunID); err != nil {
			return nil, err
		}
		rs = &runState{id: req.RunID, sessionKey: req.SessionKey, tokens: map[[32]byte]int{}, sessions: map[*mcp.ServerSession]bool{}}
		s.runs[req.RunID] = rs
	}
	h := tokenHash(req.RunToken)
	rs.tokens[h]++
	s.tokens[h] = rs
	return &runService{s: s, runID: req.RunID, hash: h, ref: agentadaptor.RuntimeServiceRef{
		ID: ServiceID, Name: ServiceID, URL: s.url,
		Metadata: map[string]string{
			agentadaptor.MetaMCPEnabled:     "true",
			agentadaptor.MetaMCPTransport:   "http",
			agentadaptor.MetaMCPKey:         ServiceID,
			agentadaptor.MetaMCPAuth:        "bearer",
			agentadaptor.MetaMCPToolTimeout: (s.d.MaxDelegationTime() + s.cfg.ToolTimeoutMargin).String(),
		},
	}}, nil
}

// Ref implements agentadaptor.RuntimeService.
func (r *runService) Ref() agentadaptor.RuntimeServiceRef { return r.ref }

// RunCancelling implements agentadaptor.RunCancelObserver: the parent run
// was cancelled (or timed out), so its delegations are cancelled now,
// cascading to the remote tasks, without waiting for the CLI to exit or to
// send notifications/cancelled. The token stays valid until Release, so the
// CLI still receives the cancelled tool results.
func (r *runService) RunCancelling() { r.s.d.CancelRun(r.runID) }

// Release implements agentadaptor.RuntimeService: revoke the token; when
// it was the run's last, end the run in the delegator (cancelling its
// delegations even when the CLI never sent notifications/cancelled, and
// waiting for them, bounded by ctx) and close its MCP sessions.
func (r *runService) Release(ctx context.Context) error {
	var err error
	r.once.Do(func() { err = r.release(ctx) })
	return err
}

func (r *runService) release(ctx context.Context) error {
	s := r.s
	s.mu.Lock()
	rs := s.runs[r.runID]
	if rs == nil {
		delete(s.tokens, r.hash)
		s.mu.Unlock()
		return nil
	}
	if rs.tokens[r.hash]--; rs.tokens[r.hash] <= 0 {
		delete(rs.tokens, r.hash)
		delete(s.tokens, r.hash) // no live instance uses this token any more
	}
	if len(rs.tokens) > 0 {
		s.mu.Unlock()
		return nil // another service instance of the same run is still live
	}
	delete(s.runs, r.runID)
	sessions := rs.sessions
	rs.sessions = map[*mcp.ServerSession]bool{}
	s.mu.Unlock()
	err := s.d.EndRun(ctx, r.runID)
	for ss := range sessions {
		_ = ss.Close()
	}
	return err
}

// _meta keys under which parent agents send their own tool call id with an
// MCP tools/call (strong correlation, docs/design.md#correlation).
const (
	// MetaClaudeToolUseID is sent by Claude Code.
	MetaClaudeToolUseID = "claudecode/toolUseId"
	// MetaCodexCallID is sent by Codex.
	MetaCodexCallID = "callId"
	// MetaScriptedToolCallID is sent by the scripted agent
	// (pkg/adapters/scripted.MetaToolCallID).
	MetaScriptedToolCallID = "agentadaptor/toolCallId"
)

// ParentToolCallMetaKeys lists the _meta keys read, in order.
var ParentToolCallMetaKeys = []string{MetaClaudeToolUseID, MetaCodexCallID, MetaScriptedToolCallID}

// ParentToolCallIDFromMeta returns the parent's tool call id carried in an
// MCP request's _meta, or "". Values that are not short printable
// identifiers are ignored.
func ParentToolCallIDFromMeta(meta map[string]any) string {
	for _, k := range ParentToolCallMetaKeys {
		if v, ok := meta[k].(string); ok {
			if v = strings.TrimSpace(v); v != "" && len(v) <= 256 && printable(v) {
				return v
			}
		}
	}
	return ""
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || r == '\uFFFD' {
			return false
		}
	}
	return true
}
