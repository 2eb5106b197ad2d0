package a2adelegation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	agentadaptor "github.com/seed0634/agentadaptor"
)

// Names of the MCP surface.
const (
	// ToolName is the generic delegation tool.
	ToolName = "delegate_to_agent"
	// ServiceID is the runtime service's ID, Name and MCP server key: Claude
	// sees mcp__a2a-delegation__delegate_to_agent.
	ServiceID = "a2a-delegation"
	// MCPPath is the HTTP path of the MCP endpoint.
	MCPPath = "/mcp"
)

// minRunTokenLen is the shortest run token accepted from the SDK.
const minRunTokenLen = 16

func (s *Service) startMCP() error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentadaptor-a2a-delegation", Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions: "Delegate bounded tasks to host-curated remote agents with " + ToolName + ".",
	})
	srv.AddTool(&mcp.Tool{Name: ToolName, Description: s.toolDescription(), InputSchema: toolSchema(s.reg.Keys(), true)}, s.toolHandler(""))
	for _, k := range s.reg.Keys() {
		spec := s.reg.agents[k].spec
		if spec.Shortcut == "" {
			continue
		}
		desc := fmt.Sprintf("Delegate a bounded task to the remote agent %s (%s) and wait for its structured result.", spec.DisplayName, spec.Key)
		if spec.Description != "" {
			desc += " " + spec.Description
		}
		srv.AddTool(&mcp.Tool{Name: spec.Shortcut, Description: desc, InputSchema: toolSchema(nil, false)}, s.toolHandler(spec.Key))
	}
	s.mcp = srv
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{SessionTimeout: 30 * time.Minute})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		s.mu.Lock()
		rs := s.tokens[tokenHash(token)]
		s.mu.Unlock()
		if rs == nil {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: rs.id, Expiration: time.Now().Add(time.Hour)}, nil
	}
	mux := http.NewServeMux()
	mux.Handle(MCPPath, auth.RequireBearerToken(verify, nil)(handler))
	ln, err := net.Listen("tcp", s.cfg.MCPAddr)
	if err != nil {
		return fmt.Errorf("a2adelegation: listen %s: %w", s.cfg.MCPAddr, err)
	}
	s.ln = ln
	s.url = "http://" + ln.Addr().String() + MCPPath
	s.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.httpSrv.Serve(ln)
	}()
	return nil
}

func (s *Service) toolDescription() string {
	var b strings.Builder
	b.WriteString("Delegate a bounded task to a host-curated remote agent and wait for its structured result ")
	b.WriteString("(status, summary, artifact references, remote task and context ids). The remote agent works in its own ")
	b.WriteString("workspace with its own tools: put everything it needs in objective and input; local files are not shared. ")
	b.WriteString("Its live progress is shown to the user separately. Name the agent by its registry key; URLs are never accepted.\n")
	b.WriteString("Available agents:")
	for _, k := range s.reg.Keys() {
		spec := s.reg.agents[k].spec
		fmt.Fprintf(&b, "\n- %s: %s", spec.Key, spec.DisplayName)
		if spec.Description != "" {
			b.WriteString(" — ")
			b.WriteString(spec.Description)
		}
	}
	return b.String()
}

// toolSchema is the strict JSON Schema of the tool input (SPEC §11).
func toolSchema(keys []string, withAgent bool) map[string]any {
	obj := func(props map[string]any, required ...string) map[string]any {
		m := map[string]any{"type": "object", "additionalProperties": false, "properties": props}
		if len(required) > 0 {
			m["required"] = required
		}
		return m
	}
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	props := map[string]any{
		"objective": str("The bounded task for the remote agent, stated so it can be done without further questions."),
		"input": obj(map[string]any{
			"prompt":  str("Detailed instructions for the remote agent."),
			"context": str("Background the remote agent needs (it cannot see this conversation)."),
			"artifacts": map[string]any{"type": "array", "maxItems": maxInputArtifacts, "items": obj(map[string]any{
				"name": str("Artifact name."),
				"uri":  str("Artifact reference, e.g. a host://delegations/... URI from an earlier delegation result."),
			}, "name", "uri")},
		}),
		"constraints": obj(map[string]any{
			"timeout_seconds": map[string]any{"type": "integer", "minimum": 1, "description": "Upper bound on the delegation's duration; the host may lower it."},
			"stream":          map[string]any{"type": "boolean", "description": "false to ask for a non-streaming remote task."},
			"max_artifacts":   map[string]any{"type": "integer", "minimum": 1, "description": "Maximum number of remote artifacts to keep."},
		}),
	}
	required := []string{"objective"}
	if withAgent {
		props["agent"] = str("Registry key of the remote agent: one of " + strings.Join(keys, ", ") + ".")
		required = []string{"agent", "objective"}
	}
	return obj(props, required...)
}

// toolInput is the decoded delegate_to_agent input.
type toolInput struct {
	Agent       string       `json:"agent"`
	Objective   string       `json:"objective"`
	Input       *TaskInput   `json:"input,omitempty"`
	Constraints *Constraints `json:"constraints,omitempty"`
}

// shortcutInput is the input of a named shortcut: no agent field.
type shortcutInput struct {
	Objective   string       `json:"objective"`
	Input       *TaskInput   `json:"input,omitempty"`
	Constraints *Constraints `json:"constraints,omitempty"`
}

// DecodeToolInput strictly decodes tool arguments into a Request (agent,
// objective, input, constraints): unknown fields at any level (such as
// endpoint_url), wrong types, trailing data and missing required fields are
// invalid_input errors. fixedAgent, for a shortcut, is the agent key; the
// input then must not name one.
func DecodeToolInput(raw []byte, fixedAgent string) (Request, *DelegationError) {
	bad := func(format string, args ...any) (Request, *DelegationError) {
		return Request{}, &DelegationError{Code: CodeInvalidInput, Message: fmt.Sprintf(format, args...)}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return bad("the arguments must be a JSON object with at least agent and objective")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var in toolInput
	var err error
	if fixedAgent == "" {
		err = dec.Decode(&in)
	} else {
		var sc shortcutInput
		err = dec.Decode(&sc)
		in = toolInput{Agent: fixedAgent, Objective: sc.Objective, Input: sc.Input, Constraints: sc.Constraints}
	}
	if err == nil && dec.More() {
		err = errors.New("trailing data after the arguments object")
	}
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("trailing data after the arguments object")
		}
	}
	if err == nil {
		// encoding/json matches names case-insensitively: insist on the
		// exact snake_case names at every level.
		top := toolFields
		if fixedAgent != "" {
			top = shortcutFields
		}
		if f := inexactKey(raw, top); f != "" {
			err = fmt.Errorf("json: unknown field %q", f)
		}
	}
	if err != nil {
		msg := err.Error()
		if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			lf := strings.ToLower(f)
			if strings.Contains(lf, "url") || strings.Contains(lf, "endpoint") || strings.Contains(lf, "token") || strings.Contains(lf, "auth") {
				return bad("unknown field %s: remote agents are chosen by registry key only; URLs and credentials are never accepted", shortText(f, 80))
			}
			return bad("unknown field %s; allowed: agent, objective, input{prompt, context, artifacts[{name, uri}]}, constraints{timeout_seconds, stream, max_artifacts}", shortText(f, 80))
		}
		return bad("invalid arguments: %s", shortText(strings.TrimPrefix(msg, "json: "), 200))
	}
	req := Request{Agent: in.Agent, Objective: in.Objective}
	if in.Input != nil {
		req.Input = *in.Input
	}
	if in.Constraints != nil {
		req.Constraints = *in.Constraints
	}
	if derr := validateRequest(&req); derr != nil {
		return Request{}, derr
	}
	return req, nil
}

// Field sets of the tool input, for the exact-name check.
var (
	inputFields       = map[string]any{"prompt": nil, "context": nil, "artifacts": map[string]any{"name": nil, "uri": nil}}
	constraintsFields = map[string]any{"timeout_seconds": nil, "stream": nil, "max_artifacts": nil}
	toolFields        = map[string]any{"agent": nil, "objective": nil, "input": inputFields, "constraints": constraintsFields}
	shortcutFields    = map[string]any{"objective": nil, "input": inputFields, "constraints": constraintsFields}
)

// inexactKey returns the first object key of raw (recursively, following
// fields) that is not exactly one of the allowed names, or "".
func inexactKey(raw []byte, fields map[string]any) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) == nil {
			for _, el := range arr {
				if f := inexactKey(el, fields); f != "" {
					return f
				}
			}
		}
		return ""
	}
	for k, v := range obj {
		sub, ok := fields[k]
		if !ok {
			return k
		}
		if m, isObj := sub.(map[string]any); isObj {
			if f := inexactKey(v, m); f != "" {
				return f
			}
		}
	}
	return ""
}

// toolHandler serves delegate_to_agent (fixedAgent "") or a shortcut.
func (s *Service) toolHandler(fixedAgent string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		rs := s.runOf(req)
		if rs == nil {
			return toolResult(Result{DelegationID: "", Agent: fixedAgent, RemoteProtocol: ProtocolA2A, Status: StatusFailed, Artifacts: []ResultArtifact{}, Messages: []ResultMessage{},
				Error: &DelegationError{Code: CodeMissingRunContext, Message: "This tool call is not bound to a live parent run (missing or expired run token): host configuration error."}}), nil
		}
		dreq, derr := DecodeToolInput(req.Params.Arguments, fixedAgent)
		if derr != nil {
			return toolResult(Result{Agent: fixedAgent, RemoteProtocol: ProtocolA2A, Status: StatusFailed, Artifacts: []ResultArtifact{}, Messages: []ResultMessage{}, Error: derr}), nil
		}
		dreq.RunID, dreq.SessionKey = rs.id, rs.sessionKey
		dreq.ParentToolCallID = ParentToolCallIDFromMeta(req.Params.Meta)
		s.rememberSession(rs.id, req.Session)
		p := startProgress(ctx, req)
		dreq.OnEvent = p.event
		res := s.Delegate(ctx, dreq)
		p.stop()
		return toolResult(res), nil
	}
}

func (s *Service) runOf(req *mcp.CallToolRequest) *runState {
	if req.Extra == nil || req.Extra.TokenInfo == nil || req.Extra.TokenInfo.UserID == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[req.Extra.TokenInfo.UserID]
}

func (s *Service) rememberSession(runID string, ss *mcp.ServerSession) {
	if ss == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rs := s.runs[runID]; rs != nil {
		rs.sessions[ss] = true
	}
}

// toolResult renders a Result as structuredContent plus the same JSON as
// text; failures are isError results.
func toolResult(r Result) *mcp.CallToolResult {
	if r.Artifacts == nil {
		r.Artifacts = []ResultArtifact{}
	}
	if r.Messages == nil {
		r.Messages = []ResultMessage{}
	}
	b, _ := json.Marshal(r)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: r, IsError: r.Error != nil}
}

// progress forwards short, host-written status lines as MCP progress
// notifications while the tool call is blocked. Remote text is never
// forwarded (it must not enter the parent's context).
type progress struct {
	ch   chan string
	done chan struct{}
}

func startProgress(ctx context.Context, req *mcp.CallToolRequest) *progress {
	p := &progress{ch: make(chan string, 16), done: make(chan struct{})}
	token := req.Params.GetProgressToken()
	go func() {
		defer close(p.done)
		n := 0
		for msg := range p.ch {
			if token == nil || req.Session == nil || ctx.Err() != nil {
				continue
			}
			n++
			nctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_ = req.Session.NotifyProgress(nctx, &mcp.ProgressNotificationParams{ProgressToken: token, Message: msg, Progress: float64(n)})
			cancel()
		}
	}()
	return p
}

func (p *progress) event(ev DelegationEvent) {
	msg := progressText(ev)
	if msg == "" {
		return
	}
	select {
	case p.ch <- msg:
	default: // a slow client: progress is best effort
	}
}

func (p *progress) stop() {
	close(p.ch)
	<-p.done
}

func progressText(ev DelegationEvent) string {
	name := cmpOrStr(ev.AgentName, ev.AgentKey)
	switch ev.Kind {
	case DelegationStarted:
		return "Delegating to " + name
	case DelegationStatus:
		if ev.Status == StatusCorrelated {
			return ""
		}
		return name + ": " + ev.Status
	case DelegationTextStart:
		return name + " is writing"
	case DelegationArtifactCreated:
		return name + " produced an artifact"
	case DelegationInputRequired:
		return name + " needs input from the user"
	case DelegationFinished:
		return name + ": completed"
	case DelegationFailed:
		return name + ": failed"
	case DelegationCancelled:
		return name + ": cancelled"
	}
	return ""
}

// RuntimeService returns the SPEC §7 Option A runtime service manager: for
// each run, Ensure registers the run's token (the run's only key to the MCP
// endpoint) and injects the MCP server into the run; Release revokes the
// token and cancels the run's in-flight delegations.
func (s *Service) RuntimeService() agentadaptor.RuntimeServiceManager { return runtimeManager{s} }

type runtimeManager struct{ s *Service }

type runService struct {
	s     *Service
	runID string
	hash  [32]byte
	ref   agentadaptor.RuntimeServiceRef
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
	h := tokenHash(req.RunToken)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrServiceClosed
	}
	rs := s.runs[req.RunID]
	if rs == nil {
		ctx, cancel := context.WithCancelCause(s.ctx)
		rs = &runState{id: req.RunID, sessionKey: req.SessionKey, ctx: ctx, cancel: cancel, sessions: map[*mcp.ServerSession]bool{}}
		s.runs[req.RunID] = rs
	}
	rs.tokens = append(rs.tokens, h)
	s.tokens[h] = rs
	return &runService{s: s, runID: req.RunID, hash: h, ref: agentadaptor.RuntimeServiceRef{
		ID: ServiceID, Name: ServiceID, URL: s.url,
		Metadata: map[string]string{
			agentadaptor.MetaMCPEnabled:     "true",
			agentadaptor.MetaMCPTransport:   "http",
			agentadaptor.MetaMCPKey:         ServiceID,
			agentadaptor.MetaMCPAuth:        "bearer",
			agentadaptor.MetaMCPToolTimeout: s.toolTimeout().String(),
		},
	}}, nil
}

// toolTimeout is the largest policy timeout plus the margin.
func (s *Service) toolTimeout() time.Duration {
	var d time.Duration
	for _, e := range s.reg.agents {
		d = max(d, e.spec.Policy.MaxTimeout)
	}
	if d == 0 {
		d = DefaultMaxTimeout
	}
	return d + s.cfg.ToolTimeoutMargin + s.cfg.CancelTimeout
}

// Ref implements agentadaptor.RuntimeService.
func (r *runService) Ref() agentadaptor.RuntimeServiceRef { return r.ref }

// RunCancelling implements agentadaptor.RunCancelObserver: the parent run
// was cancelled (or timed out), so its delegations are cancelled now,
// cascading to the remote tasks, without waiting for the CLI to exit or to
// send notifications/cancelled. The token stays valid until Release, so the
// CLI still receives the cancelled tool results.
func (r *runService) RunCancelling() {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if rs := s.runs[r.runID]; rs != nil {
		rs.cancel(errParentCancel)
	}
}

// Release implements agentadaptor.RuntimeService: revoke the token, cancel
// the run's delegations (cascading to the remote tasks even when the CLI
// never sent notifications/cancelled) and wait for them, bounded by ctx.
func (r *runService) Release(ctx context.Context) error {
	s := r.s
	s.mu.Lock()
	delete(s.tokens, r.hash)
	rs := s.runs[r.runID]
	if rs == nil {
		s.mu.Unlock()
		return nil
	}
	for i, h := range rs.tokens {
		if h == r.hash {
			rs.tokens = append(rs.tokens[:i], rs.tokens[i+1:]...)
			break
		}
	}
	if len(rs.tokens) > 0 {
		s.mu.Unlock()
		return nil // another service instance of the same run is still live
	}
	rs.cancel(errRunEnded)
	s.mu.Unlock()

	var err error
	for {
		s.mu.Lock()
		n := rs.active
		s.mu.Unlock()
		if n <= 0 {
			break
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-t.C:
		}
		t.Stop()
		if err != nil {
			break
		}
	}
	s.mu.Lock()
	if s.runs[r.runID] == rs {
		delete(s.runs, r.runID)
	}
	sessions := rs.sessions
	rs.sessions = map[*mcp.ServerSession]bool{}
	for k := range s.contexts {
		if strings.HasPrefix(k, "run\x00"+r.runID+"\x00") {
			delete(s.contexts, k)
		}
	}
	s.mu.Unlock()
	for ss := range sessions {
		_ = ss.Close()
	}
	s.corr.ForgetRun(r.runID)
	return err
}
