// Package fakeacp is a scriptable Agent Client Protocol agent for tests: a
// test binary that calls [MaybeRun] first thing in TestMain turns into a
// real ACP agent on its stdio (the Go ACP SDK's agent side) when [Env]
// holds a [Script]. It answers initialize, session/new, session/load
// (replaying the session's history), session/prompt and session/cancel; it
// calls MCP tools of the servers session/new gave it (streamable HTTP with
// the given headers, or stdio with the given environment, through the MCP
// Go SDK's client), asking session/request_permission first when told to;
// it records every request it received in a JSON-lines file.
//
// It is test support: only tests import it.
package fakeacp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Env holds the JSON Script that turns a test binary into the fake agent.
const Env = "AGENTADAPTOR_FAKE_ACP"

// Script is what the fake agent does.
type Script struct {
	// NoHTTP leaves http out of mcpCapabilities: the client must reach
	// http MCP servers through stdio.
	NoHTTP bool `json:"no_http,omitempty"`
	// LoadSession advertises loadSession; sessions are kept in StateDir.
	LoadSession bool `json:"load_session,omitempty"`
	// LateReplay replays a loaded session's history the way Gemini CLI
	// 0.61.0 does: the first message before answering session/load, the
	// rest shortly after the answer.
	LateReplay bool   `json:"late_replay,omitempty"`
	StateDir   string `json:"state_dir,omitempty"`
	// Record, if set, receives one JSON line per request received.
	Record string `json:"record,omitempty"`
	// Turns are the answers to the session's prompts, in order (the n-th
	// prompt of a session, counting loaded history, gets Turns[n]; the
	// last turn repeats).
	Turns []Turn `json:"turns"`
	// HangSetup never answers initialize.
	HangSetup bool `json:"hang_setup,omitempty"`
	// Stubborn ignores SIGINT and stays alive after its stdin closed.
	Stubborn bool `json:"stubborn,omitempty"`
	// Grandchild starts `sleep 1000` in the agent's process group and
	// records its pid ({"grandchild": pid}).
	Grandchild bool `json:"grandchild,omitempty"`
	// Noise is written to stdout before anything else (lines that are not
	// JSON-RPC).
	Noise string `json:"noise,omitempty"`
}

// Turn answers one prompt.
type Turn struct {
	Steps []Step `json:"steps"`
	// Stop is the stop reason (default end_turn).
	Stop string `json:"stop,omitempty"`
	// Error, if set, answers the prompt with this JSON-RPC error.
	Error *sdk.RequestError `json:"error,omitempty"`
	// Usage reports token counts in the response's usage field.
	Usage *sdk.Usage `json:"usage,omitempty"`
	// QuotaMeta reports them the way Gemini CLI does (_meta.quota).
	QuotaMeta bool `json:"quota_meta,omitempty"`
}

// Step is one thing a turn does. Text may hold {{result}} (the last tool
// result) and {{history}} (the session's earlier prompts, joined by "|").
type Step struct {
	Text    string   `json:"text,omitempty"`
	Chunks  int      `json:"chunks,omitempty"`
	Thought string   `json:"thought,omitempty"`
	Plan    []string `json:"plan,omitempty"`
	Tool    *Tool    `json:"tool,omitempty"`
	// WaitCancel blocks until session/cancel (then the turn stops
	// cancelled); with IgnoreCancel it keeps blocking after it.
	WaitCancel   bool `json:"wait_cancel,omitempty"`
	IgnoreCancel bool `json:"ignore_cancel,omitempty"`
	// Permission asks session/request_permission for a tool call that is
	// not an MCP tool (Title, Kind) and reports the answer as text
	// "permission:<optionId|cancelled>".
	Permission *Tool `json:"permission,omitempty"`
}

// Tool is a call of a tool of one of the session's MCP servers.
type Tool struct {
	Server string         `json:"server"`
	Name   string         `json:"name"`
	Args   map[string]any `json:"args,omitempty"`
	// ID is the ACP tool call id (default call-<n>).
	ID    string `json:"id,omitempty"`
	Title string `json:"title,omitempty"`
	Kind  string `json:"kind,omitempty"`
	// Ask asks session/request_permission first (Gemini's way: no
	// tool_call update before the answer).
	Ask bool `json:"ask,omitempty"`
	// Meta is sent as the MCP request's _meta.
	Meta map[string]any `json:"meta,omitempty"`
	// CodexStyle reports the call as codex-acp does: titled
	// "Tool: <server>/<name>" with rawInput {server, tool, arguments}.
	CodexStyle bool `json:"codex_style,omitempty"`
}

// MaybeRun turns the process into the fake agent when Env is set, and
// exits; otherwise it returns at once.
func MaybeRun() {
	raw := os.Getenv(Env)
	if raw == "" {
		return
	}
	var s Script
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		fmt.Fprintln(os.Stderr, "fakeacp: bad script:", err)
		os.Exit(2)
	}
	os.Exit(run(&s))
}

// Option returns Env set to s, for agentadaptor.WithEnv.
func Option(s Script) map[string]string {
	b, _ := json.Marshal(s)
	return map[string]string{Env: string(b)}
}

// Records reads a Record file.
func Records(path string) []map[string]any {
	data, _ := os.ReadFile(path)
	var out []map[string]any
	for l := range strings.SplitSeq(string(data), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func run(s *Script) int {
	if s.Stubborn {
		signal.Ignore(syscall.SIGINT)
	}
	a := &agent{s: s, sessions: map[string]*session{}}
	if s.Grandchild {
		cmd := exec.Command("sleep", "1000")
		if cmd.Start() == nil {
			a.record(map[string]any{"grandchild": cmd.Process.Pid})
		}
	}
	if s.Noise != "" {
		fmt.Fprintln(os.Stdout, s.Noise)
	}
	conn := sdk.NewAgentSideConnection(a, os.Stdout, os.Stdin)
	a.conn = conn
	<-conn.Done()
	a.record(map[string]any{"eof": true})
	if s.Stubborn {
		select {}
	}
	return 0
}

type agent struct {
	s    *Script
	conn *sdk.AgentSideConnection

	mu       sync.Mutex
	sessions map[string]*session
	recMu    sync.Mutex
	calls    int
}

type session struct {
	ID      string          `json:"id"`
	History []string        `json:"history"` // earlier prompts
	Answers []string        `json:"answers"`
	servers []sdk.McpServer // this process's servers
	result  string
	// replayed, when set, is closed once a late replay is sent: the next
	// prompt's answer waits for it (Gemini's replay is over long before
	// its model answers).
	replayed chan struct{}
}

func (a *agent) record(m map[string]any) {
	if a.s.Record == "" {
		return
	}
	a.recMu.Lock()
	defer a.recMu.Unlock()
	b, _ := json.Marshal(m)
	f, err := os.OpenFile(a.s.Record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(b, '\n'))
}

func (a *agent) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	a.record(map[string]any{"method": "initialize", "params": p})
	if a.s.HangSetup {
		<-ctx.Done()
		select {}
	}
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentInfo:       &sdk.Implementation{Name: "fakeacp", Version: "1.0.0"},
		AgentCapabilities: sdk.AgentCapabilities{LoadSession: a.s.LoadSession,
			McpCapabilities: sdk.McpCapabilities{Http: !a.s.NoHTTP}},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

func (a *agent) Authenticate(_ context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	a.record(map[string]any{"method": "authenticate", "params": p})
	return sdk.AuthenticateResponse{}, nil
}

func (a *agent) NewSession(_ context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	a.record(map[string]any{"method": "session/new", "params": p})
	id := fmt.Sprintf("fake-session-%d-%d", os.Getpid(), time.Now().UnixNano())
	a.mu.Lock()
	a.sessions[id] = &session{ID: id, servers: p.McpServers}
	a.mu.Unlock()
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(id)}, nil
}

func (a *agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	a.record(map[string]any{"method": "session/load", "params": p})
	if !a.s.LoadSession || a.s.StateDir == "" {
		return sdk.LoadSessionResponse{}, sdk.NewMethodNotFound("session/load")
	}
	data, err := os.ReadFile(filepath.Join(a.s.StateDir, string(p.SessionId)+".json"))
	if err != nil {
		return sdk.LoadSessionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "unknown session"})
	}
	var s session
	if err := json.Unmarshal(data, &s); err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	s.servers = p.McpServers
	// Replay the history, as the protocol says a loaded session does.
	var replay []sdk.SessionUpdate
	for i, h := range s.History {
		replay = append(replay, sdk.UpdateUserMessageText(h))
		if i < len(s.Answers) {
			replay = append(replay, sdk.UpdateAgentMessageText(s.Answers[i]))
		}
	}
	send := func(us []sdk.SessionUpdate) {
		for _, u := range us {
			_ = a.conn.SessionUpdate(context.Background(), sdk.SessionNotification{SessionId: p.SessionId, Update: u})
		}
	}
	if a.s.LateReplay && len(replay) > 1 {
		send(replay[:1])
		rest := replay[1:]
		s.replayed = make(chan struct{})
		go func() {
			defer close(s.replayed)
			time.Sleep(20 * time.Millisecond) // after the answer, as Gemini CLI's unawaited replay
			send(rest)
		}()
	} else {
		send(replay)
	}
	a.mu.Lock()
	a.sessions[s.ID] = &s
	a.mu.Unlock()
	return sdk.LoadSessionResponse{}, nil
}

func (a *agent) Cancel(_ context.Context, p sdk.CancelNotification) error {
	a.record(map[string]any{"method": "session/cancel", "params": p})
	return nil
}

func (a *agent) CloseSession(context.Context, sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	return sdk.CloseSessionResponse{}, sdk.NewMethodNotFound("session/close")
}

func (a *agent) ListSessions(context.Context, sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, sdk.NewMethodNotFound("session/list")
}

func (a *agent) ResumeSession(context.Context, sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound("session/resume")
}

func (a *agent) SetSessionConfigOption(context.Context, sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, sdk.NewMethodNotFound("session/set_config_option")
}

func (a *agent) SetSessionMode(context.Context, sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	return sdk.SetSessionModeResponse{}, sdk.NewMethodNotFound("session/set_mode")
}

func (a *agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	a.record(map[string]any{"method": "session/prompt", "params": p})
	a.mu.Lock()
	s := a.sessions[string(p.SessionId)]
	a.mu.Unlock()
	if s == nil {
		return sdk.PromptResponse{}, sdk.NewInvalidParams(map[string]any{"error": "unknown session"})
	}
	var text strings.Builder
	for _, b := range p.Prompt {
		if b.Text != nil {
			text.WriteString(b.Text.Text)
		}
	}
	if s.replayed != nil {
		<-s.replayed
	}
	if len(a.s.Turns) == 0 {
		return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
	}
	turn := a.s.Turns[min(len(s.History), len(a.s.Turns)-1)]
	say := func(u sdk.SessionUpdate) {
		_ = a.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: p.SessionId, Update: u})
	}
	var answer strings.Builder
	for _, st := range turn.Steps {
		if st.Thought != "" {
			say(sdk.UpdateAgentThoughtText(st.Thought))
		}
		if st.Plan != nil {
			var entries []sdk.PlanEntry
			for _, e := range st.Plan {
				entries = append(entries, sdk.PlanEntry{Content: e, Priority: sdk.PlanEntryPriorityMedium, Status: sdk.PlanEntryStatusPending})
			}
			say(sdk.SessionUpdate{Plan: &sdk.SessionUpdatePlan{SessionUpdate: "plan", Entries: entries}})
		}
		if st.Tool != nil {
			a.callTool(ctx, p.SessionId, s, st.Tool, say)
		}
		if st.Permission != nil {
			out := a.ask(ctx, p.SessionId, st.Permission)
			say(sdk.UpdateAgentMessageText("permission:" + out))
			answer.WriteString("permission:" + out)
		}
		if st.Text != "" {
			t := strings.ReplaceAll(st.Text, "{{result}}", s.result)
			t = strings.ReplaceAll(t, "{{history}}", strings.Join(s.History, "|"))
			for _, c := range split(t, st.Chunks) {
				say(sdk.UpdateAgentMessageText(c))
			}
			answer.WriteString(t)
		}
		if st.WaitCancel {
			<-ctx.Done()
			// session/cancel ends the prompt's context with a plain
			// cancel; a lost connection says so in the cause.
			a.record(map[string]any{"method": "prompt-ended", "cause": context.Cause(ctx).Error()})
			if st.IgnoreCancel {
				select {}
			}
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
	}
	if turn.Error != nil {
		return sdk.PromptResponse{}, turn.Error
	}
	s.History = append(s.History, text.String())
	s.Answers = append(s.Answers, answer.String())
	if a.s.StateDir != "" {
		b, _ := json.Marshal(s)
		_ = os.WriteFile(filepath.Join(a.s.StateDir, s.ID+".json"), b, 0o600)
	}
	resp := sdk.PromptResponse{StopReason: sdk.StopReason(turn.Stop), Usage: turn.Usage}
	if resp.StopReason == "" {
		resp.StopReason = sdk.StopReasonEndTurn
	}
	if turn.QuotaMeta {
		resp.Meta = map[string]any{"quota": map[string]any{"token_count": map[string]any{"input_tokens": 21, "output_tokens": 8}}}
	}
	return resp, nil
}

func split(t string, n int) []string {
	if n <= 1 || len(t) < n {
		return []string{t}
	}
	var out []string
	size := (len(t) + n - 1) / n
	for i := 0; i < len(t); i += size {
		out = append(out, t[i:min(i+size, len(t))])
	}
	return out
}

func (a *agent) ask(ctx context.Context, sid sdk.SessionId, t *Tool) string {
	a.mu.Lock()
	a.calls++
	id := t.ID
	if id == "" {
		id = fmt.Sprintf("call-%d", a.calls)
	}
	a.mu.Unlock()
	kind := sdk.ToolKind(t.Kind)
	resp, err := a.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: sid,
		ToolCall:  sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(id), Title: new(t.Title), Kind: &kind, Status: sdk.Ptr(sdk.ToolCallStatusPending)},
		Options: []sdk.PermissionOption{
			{Kind: sdk.PermissionOptionKindAllowOnce, Name: "Allow", OptionId: "proceed_once"},
			{Kind: sdk.PermissionOptionKindAllowAlways, Name: "Always", OptionId: "proceed_always"},
			{Kind: sdk.PermissionOptionKindRejectOnce, Name: "Reject", OptionId: "cancel"},
		},
	})
	a.record(map[string]any{"method": "permission-answer", "tool_call_id": id, "outcome": resp.Outcome, "err": fmt.Sprint(err)})
	switch {
	case err != nil:
		return "error"
	case resp.Outcome.Selected != nil:
		return string(resp.Outcome.Selected.OptionId)
	default:
		return "cancelled"
	}
}

// callTool calls an MCP tool the way an agent does: tool_call (or a
// permission request first), the MCP tools/call, tool_call_update.
func (a *agent) callTool(ctx context.Context, sid sdk.SessionId, s *session, t *Tool, say func(sdk.SessionUpdate)) {
	a.mu.Lock()
	a.calls++
	id := t.ID
	if id == "" {
		id = fmt.Sprintf("call-%d", a.calls)
	}
	a.mu.Unlock()
	title := t.Title
	var rawInput any = t.Args
	switch {
	case t.CodexStyle:
		title = "Tool: " + t.Server + "/" + t.Name
		rawInput = map[string]any{"server": t.Server, "tool": t.Name, "arguments": t.Args}
	case title == "":
		title = t.Name + " (" + t.Server + " MCP Server)"
	}
	if t.Ask {
		tt := *t
		tt.ID, tt.Title, tt.Kind = id, title, "other"
		if out := a.ask(ctx, sid, &tt); out != "proceed_once" && out != "proceed_always" {
			say(sdk.UpdateToolCall(sdk.ToolCallId(id), sdk.WithUpdateStatus(sdk.ToolCallStatusFailed),
				sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock("denied: " + out))})))
			s.result = "denied"
			return
		}
	} else {
		say(sdk.StartToolCall(sdk.ToolCallId(id), title, sdk.WithStartKind(sdk.ToolKindOther), sdk.WithStartStatus(sdk.ToolCallStatusInProgress), sdk.WithStartRawInput(rawInput)))
	}
	res, err := a.mcpCall(ctx, s, t)
	if err != nil {
		a.record(map[string]any{"mcp_error": err.Error()})
		say(sdk.UpdateToolCall(sdk.ToolCallId(id), sdk.WithUpdateStatus(sdk.ToolCallStatusFailed),
			sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(err.Error()))})))
		s.result = "error: " + err.Error()
		return
	}
	s.result = res
	say(sdk.UpdateToolCall(sdk.ToolCallId(id), sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted),
		sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(res))})))
}

func (a *agent) mcpCall(ctx context.Context, s *session, t *Tool) (string, error) {
	var transport mcp.Transport
	for _, m := range s.servers {
		switch {
		case m.Http != nil && m.Http.Name == t.Server:
			hdr := http.Header{}
			for _, h := range m.Http.Headers {
				hdr.Set(h.Name, h.Value)
			}
			transport = &mcp.StreamableClientTransport{Endpoint: m.Http.Url, HTTPClient: &http.Client{Transport: headerRT{hdr}}, DisableStandaloneSSE: true, MaxRetries: -1}
		case m.Stdio != nil && m.Stdio.Name == t.Server:
			cmd := exec.Command(m.Stdio.Command, m.Stdio.Args...)
			cmd.Env = os.Environ()
			for _, e := range m.Stdio.Env {
				cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
			}
			cmd.Stderr = os.Stderr
			transport = &mcp.CommandTransport{Command: cmd}
		}
	}
	if transport == nil {
		return "", fmt.Errorf("no MCP server %q in the session", t.Server)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "fakeacp", Version: "1"}, nil)
	cs, err := cl.Connect(cctx, transport, nil)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: t.Name, Arguments: t.Args}
	if t.Meta != nil {
		params.Meta = mcp.Meta(t.Meta)
	}
	res, err := cs.CallTool(cctx, params)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	out := strings.Join(parts, "\n")
	if res.IsError {
		return "", errors.New(out)
	}
	return out, nil
}

type headerRT struct{ h http.Header }

func (rt headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	maps.Copy(r.Header, rt.h)
	return http.DefaultTransport.RoundTrip(r)
}
