package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// ClientName is how the adapter introduces itself in initialize.
const ClientName = "agentadaptor"

// conversation is one run's ACP client: initialize, the session (new or
// loaded), one prompt turn, and the mapping of what the agent reports.
type conversation struct {
	cfg          Config
	prompt       string
	cwd          string
	resume       string
	servers      []server
	setupTimeout time.Duration

	interrupt chan struct{} // closed by Interrupt
	intOnce   sync.Once

	mu        sync.Mutex // the mapping state below
	emit      agentadaptor.Emitter
	loading   bool // session/load replays history: not this run's payloads
	sessionID string
	open      string // "", "text" or "reasoning": the block being streamed
	openID    string
	nMsg      int
	cur       strings.Builder // text of the open message
	output    string          // text of the last message
	tools     map[string]*toolState
	order     *updateOrder
	usage     *agentadaptor.Usage
	failure   *agentadaptor.Failure
}

type toolState struct {
	name   string
	kind   string
	result bool
}

// Interrupt implements agentadaptor.Conversation: Converse sends
// session/cancel for the prompt under way (or abandons the setup).
func (c *conversation) Interrupt() { c.intOnce.Do(func() { close(c.interrupt) }) }

func (c *conversation) interrupted() bool {
	select {
	case <-c.interrupt:
		return true
	default:
		return false
	}
}

// Converse implements agentadaptor.Conversation.
func (c *conversation) Converse(ctx context.Context, rw agentadaptor.ConversationIO, emit agentadaptor.Emitter) error {
	c.emit = emit
	c.tools = map[string]*toolState{}
	c.order = newUpdateOrder()
	defer c.order.close()
	conn := sdk.NewClientSideConnection(client{c}, rw.Stdin, c.order.reader(rw.Stdout))
	conn.SetLogger(slog.New(diagHandler{c: c}))

	sessionID, err := c.setup(ctx, conn)
	if err != nil || sessionID == "" {
		return err
	}

	type answer struct {
		resp sdk.PromptResponse
		err  error
	}
	done := make(chan answer, 1)
	pctx, stop := context.WithCancel(ctx)
	defer stop() // ends the prompt goroutine when the child is gone
	go func() {
		r, err := conn.Prompt(pctx, sdk.PromptRequest{SessionId: sdk.SessionId(sessionID), Prompt: []sdk.ContentBlock{sdk.TextBlock(c.prompt)}})
		done <- answer{r, err}
	}()
	interrupt := c.interrupt
	for {
		select {
		case a := <-done:
			return c.answered(a.resp, a.err)
		case <-interrupt:
			interrupt = nil
			c.custom("acp.cancel", map[string]any{"session_id": sessionID})
			if err := conn.Cancel(ctx, sdk.CancelNotification{SessionId: sdk.SessionId(sessionID)}); err != nil {
				return fmt.Errorf("acp: sending session/cancel: %w", err)
			}
		case <-ctx.Done():
			return errors.New("acp: the agent ended before answering the prompt")
		}
	}
}

// setup runs initialize, authenticate and session/new or session/load,
// bounded by the setup timeout and abandoned when the run is interrupted.
// It returns "" without an error when the run failed or was interrupted
// (the failure is recorded).
func (c *conversation) setup(ctx context.Context, conn *sdk.ClientSideConnection) (string, error) {
	sctx, cancel := context.WithTimeout(ctx, c.setupTimeout)
	defer cancel()
	watchDone := make(chan struct{})
	defer close(watchDone)
	go func() {
		select {
		case <-c.interrupt:
			cancel()
		case <-watchDone:
		}
	}()
	fail := func(what string, err error) (string, error) {
		switch {
		case c.interrupted():
			return "", nil // the run is cancelled: the SDK says so
		case ctx.Err() != nil:
			return "", fmt.Errorf("acp: the agent ended during %s", what)
		case sctx.Err() != nil:
			c.setFailure(&agentadaptor.Failure{Code: agentadaptor.FailureStart, Message: fmt.Sprintf("the ACP agent did not answer %s within %s", what, c.setupTimeout), Retryable: true})
			return "", nil
		}
		c.setFailure(requestFailure(what, err))
		return "", nil
	}

	init, err := conn.Initialize(sctx, sdk.InitializeRequest{
		ProtocolVersion:    sdk.ProtocolVersionNumber,
		ClientCapabilities: sdk.ClientCapabilities{},
		ClientInfo:         &sdk.Implementation{Name: ClientName, Version: "1"},
	})
	if err != nil {
		return fail("initialize", err)
	}
	agent := map[string]any{"protocol_version": init.ProtocolVersion, "load_session": init.AgentCapabilities.LoadSession,
		"mcp_http": init.AgentCapabilities.McpCapabilities.Http}
	if init.AgentInfo != nil {
		agent["name"], agent["version"] = init.AgentInfo.Name, init.AgentInfo.Version
	}
	servers, err := acpServers(c.servers, init.AgentCapabilities.McpCapabilities, c.cfg.StdioBridge)
	if err != nil {
		c.setFailure(&agentadaptor.Failure{Code: agentadaptor.FailureInvalidConfig, Message: err.Error(), Err: err})
		return "", nil
	}
	if c.cfg.AuthMethod != "" {
		if _, err := conn.Authenticate(sctx, sdk.AuthenticateRequest{MethodId: c.cfg.AuthMethod}); err != nil {
			return fail("authenticate", err)
		}
	}
	resumed, note := false, ""
	var sessionID string
	switch {
	case c.resume != "" && init.AgentCapabilities.LoadSession:
		c.mu.Lock()
		c.loading = true
		c.mu.Unlock()
		_, err := conn.LoadSession(sctx, sdk.LoadSessionRequest{SessionId: sdk.SessionId(c.resume), Cwd: c.cwd, McpServers: servers})
		if err == nil {
			// The protocol replays the history before the answer; Gemini
			// CLI 0.61.0 goes on replaying after it. Nothing the agent
			// sends before it has the prompt is this run's work: the
			// prompt waits until the replay has gone quiet.
			c.order.settle(sctx, replayQuiet, replayMax)
		}
		c.mu.Lock()
		c.loading = false
		c.mu.Unlock()
		if err == nil {
			sessionID, resumed = c.resume, true
			break
		}
		if c.interrupted() || ctx.Err() != nil || sctx.Err() != nil {
			return fail("session/load", err)
		}
		note = "session/load failed; a new session starts: " + errText(err)
	case c.resume != "":
		note = "the agent does not support session/load; a new session starts"
	}
	if sessionID == "" {
		ns, err := conn.NewSession(sctx, sdk.NewSessionRequest{Cwd: c.cwd, McpServers: servers})
		if err != nil {
			return fail("session/new", err)
		}
		sessionID = string(ns.SessionId)
	}
	c.mu.Lock()
	c.sessionID = sessionID
	c.mu.Unlock()
	raw := map[string]any{"session_id": sessionID, "resumed": resumed, "agent": agent}
	if note != "" {
		raw["note"] = note
	}
	c.custom("acp.session", raw)
	if c.interrupted() {
		return "", nil
	}
	return sessionID, nil
}

// answered maps the prompt's answer: its stop reason decides the run.
func (c *conversation) answered(resp sdk.PromptResponse, err error) error {
	if err != nil {
		if c.interrupted() {
			return nil
		}
		var re *sdk.RequestError
		if errors.As(err, &re) && !strings.Contains(re.Message, "peer disconnected") && re.Code != -32603 {
			c.setFailure(requestFailure("session/prompt", err))
			return nil
		}
		return fmt.Errorf("acp: the agent did not answer the prompt: %s", errText(err))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeOpenLocked()
	if u := usageOf(resp); u != nil {
		c.usage = u
	}
	c.emitLocked(agentadaptor.StreamPayload{Name: "acp.stop", Raw: map[string]any{"stop_reason": string(resp.StopReason)}})
	switch resp.StopReason {
	case sdk.StopReasonEndTurn, sdk.StopReasonMaxTokens, sdk.StopReasonMaxTurnRequests:
		// Completed; a truncated answer is still the answer (acp.stop says why).
	case sdk.StopReasonRefusal:
		c.failure = &agentadaptor.Failure{Code: agentadaptor.FailureAgent, Message: "the agent refused to continue (stop reason refusal)", Detail: map[string]any{"stop_reason": "refusal"}}
	case sdk.StopReasonCancelled:
		if !c.interrupted() {
			c.failure = &agentadaptor.Failure{Code: agentadaptor.FailureCancelled, Message: "the agent cancelled the turn (stop reason cancelled)", Detail: map[string]any{"stop_reason": "cancelled"}}
		}
	default:
		c.failure = &agentadaptor.Failure{Code: agentadaptor.FailureProtocol, Message: fmt.Sprintf("unknown stop reason %q", resp.StopReason)}
	}
	return nil
}

// Finish implements agentadaptor.Conversation.
func (c *conversation) Finish(_ agentadaptor.ExitStatus, emit agentadaptor.Emitter) agentadaptor.Outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.emit == nil {
		c.emit = emit
	}
	c.closeOpenLocked()
	if c.usage != nil {
		u := *c.usage
		c.emitLocked(agentadaptor.StreamPayload{Kind: agentadaptor.KindUsage, Usage: &u})
	}
	return agentadaptor.Outcome{Output: c.output, SessionID: c.sessionID, Usage: c.usage, Failure: c.failure}
}

func (c *conversation) setFailure(f *agentadaptor.Failure) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failure == nil {
		c.failure = f
	}
}

// requestFailure types a JSON-RPC error of the agent. Agents that relay a
// model API error use its HTTP status as the code (Gemini CLI does):
// model_error, retryable for 429 and 5xx.
func requestFailure(what string, err error) *agentadaptor.Failure {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		msg := fmt.Sprintf("the agent answered %s with error %d: %s", what, re.Code, oneLine(re.Message))
		if re.Code >= 400 && re.Code <= 599 {
			return &agentadaptor.Failure{Code: agentadaptor.FailureModel, Message: msg, Retryable: re.Code == 429 || re.Code >= 500, Detail: map[string]any{"status": re.Code}, Err: err}
		}
		if re.Code == -32000 { // ACP auth_required
			return &agentadaptor.Failure{Code: agentadaptor.FailureAgent, Message: msg + " (authenticate the agent, or set acp.Config.AuthMethod)", Detail: map[string]any{"code": re.Code}, Err: err}
		}
		return &agentadaptor.Failure{Code: agentadaptor.FailureAgent, Message: msg, Detail: map[string]any{"code": re.Code}, Err: err}
	}
	return &agentadaptor.Failure{Code: agentadaptor.FailureProtocol, Message: fmt.Sprintf("%s: %s", what, errText(err)), Err: err}
}

func errText(err error) string {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		return oneLine(re.Message)
	}
	return oneLine(err.Error())
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// usageOf reads the turn's token counts: the (unstable) usage field, else
// the _meta.quota.token_count Gemini CLI reports.
func usageOf(resp sdk.PromptResponse) *agentadaptor.Usage {
	if u := resp.Usage; u != nil {
		out := &agentadaptor.Usage{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens)}
		if u.CachedReadTokens != nil {
			out.CacheReadTokens = int64(*u.CachedReadTokens)
		}
		if u.CachedWriteTokens != nil {
			out.CacheWriteTokens = int64(*u.CachedWriteTokens)
		}
		if u.ThoughtTokens != nil {
			out.ReasoningTokens = int64(*u.ThoughtTokens)
		}
		return out
	}
	quota, _ := resp.Meta["quota"].(map[string]any)
	tc, _ := quota["token_count"].(map[string]any)
	in, ok1 := tc["input_tokens"].(float64)
	out, ok2 := tc["output_tokens"].(float64)
	if !ok1 && !ok2 {
		return nil
	}
	return &agentadaptor.Usage{InputTokens: int64(in), OutputTokens: int64(out)}
}

// custom emits a custom payload.
func (c *conversation) custom(name string, raw map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.emitLocked(agentadaptor.StreamPayload{Name: name, Raw: raw})
}

func (c *conversation) emitLocked(p agentadaptor.StreamPayload) {
	if c.emit != nil {
		c.emit(p)
	}
}

// closeOpenLocked ends the text or reasoning block being streamed.
func (c *conversation) closeOpenLocked() {
	switch c.open {
	case "text":
		c.output = c.cur.String()
		c.emitLocked(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextEnd, MessageID: c.openID, Text: c.output})
	case "reasoning":
		c.emitLocked(agentadaptor.StreamPayload{Kind: agentadaptor.KindReasoningEnd, MessageID: c.openID})
	}
	c.open, c.openID = "", ""
}

// chunk appends text to a block of kind ("text" or "reasoning"), opening
// it (and closing another) first.
func (c *conversation) chunkLocked(kind, text string, messageID *string) {
	id := ""
	if messageID != nil {
		id = *messageID
	}
	if c.open != kind || (id != "" && id != c.openID) {
		c.closeOpenLocked()
		c.nMsg++
		if id == "" {
			id = fmt.Sprintf("acp-%s-%d", map[string]string{"text": "msg", "reasoning": "thought"}[kind], c.nMsg)
		}
		c.open, c.openID = kind, id
		start := agentadaptor.KindTextStart
		if kind == "reasoning" {
			start = agentadaptor.KindReasoningStart
		} else {
			c.cur.Reset()
		}
		c.emitLocked(agentadaptor.StreamPayload{Kind: start, MessageID: id})
	}
	delta := agentadaptor.KindTextDelta
	if kind == "reasoning" {
		delta = agentadaptor.KindReasoningDelta
	} else {
		c.cur.WriteString(text)
	}
	c.emitLocked(agentadaptor.StreamPayload{Kind: delta, MessageID: c.openID, Delta: text})
}

// update maps one session/update.
func (c *conversation) update(u sdk.SessionUpdate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loading {
		return // the history of a loaded session, not this run's work
	}
	switch {
	case u.AgentMessageChunk != nil:
		if t := u.AgentMessageChunk.Content.Text; t != nil {
			c.chunkLocked("text", t.Text, u.AgentMessageChunk.MessageId)
		} else {
			c.emitLocked(agentadaptor.StreamPayload{Name: "acp.content", Raw: rawOf(u.AgentMessageChunk.Content)})
		}
	case u.AgentThoughtChunk != nil:
		if t := u.AgentThoughtChunk.Content.Text; t != nil {
			c.chunkLocked("reasoning", t.Text, u.AgentThoughtChunk.MessageId)
		}
	case u.ToolCall != nil:
		tc := u.ToolCall
		c.toolStartLocked(string(tc.ToolCallId), tc.Title, string(tc.Kind), tc.Meta, tc.RawInput)
		c.toolStatusLocked(string(tc.ToolCallId), string(tc.Status), tc.Content, tc.RawOutput)
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		title, kind := "", ""
		if tu.Title != nil {
			title = *tu.Title
		}
		if tu.Kind != nil {
			kind = string(*tu.Kind)
		}
		c.toolStartLocked(string(tu.ToolCallId), title, kind, tu.Meta, tu.RawInput)
		if tu.Status != nil {
			c.toolStatusLocked(string(tu.ToolCallId), string(*tu.Status), tu.Content, tu.RawOutput)
		}
	case u.Plan != nil:
		c.emitLocked(agentadaptor.StreamPayload{Name: "acp.plan", Raw: rawOf(u.Plan)})
	case u.UsageUpdate != nil:
		c.emitLocked(agentadaptor.StreamPayload{Name: "acp.usage_update", Raw: rawOf(u.UsageUpdate)})
	case u.CurrentModeUpdate != nil:
		c.emitLocked(agentadaptor.StreamPayload{Name: "acp.mode", Raw: rawOf(u.CurrentModeUpdate)})
	case u.SessionInfoUpdate != nil:
		c.emitLocked(agentadaptor.StreamPayload{Name: "acp.session_info", Raw: rawOf(u.SessionInfoUpdate)})
	case u.ConfigOptionUpdate != nil:
		c.emitLocked(agentadaptor.StreamPayload{Name: "acp.config_options", Raw: rawOf(u.ConfigOptionUpdate)})
	}
	// user_message_chunk echoes the prompt; available_commands_update lists
	// slash commands: neither is the run's work.
}

// toolStartLocked emits tool_call.start/args/end the first time a tool
// call id is seen (from a tool_call, a tool_call_update or a permission
// request, whichever comes first).
func (c *conversation) toolStartLocked(id, title, kind string, meta map[string]any, rawInput any) *toolState {
	if ts := c.tools[id]; ts != nil {
		return ts
	}
	c.closeOpenLocked()
	ts := &toolState{name: c.toolName(title, kind, meta, rawInput), kind: kind}
	c.tools[id] = ts
	if _, _, a, ok := c.codexMCPInput(rawInput); ok {
		rawInput = a // the tool's own arguments, not codex-acp's wrapper
	}
	args := "{}"
	if rawInput != nil {
		if b, err := json.Marshal(rawInput); err == nil {
			args = string(b)
		}
	}
	c.emitLocked(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallStart, ToolCallID: id, ToolName: ts.name})
	c.emitLocked(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallArgs, ToolCallID: id, Delta: args})
	c.emitLocked(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallEnd, ToolCallID: id, ToolName: ts.name, ToolArgs: args})
	return ts
}

// toolStatusLocked emits tool_call.result once the call completed or failed.
func (c *conversation) toolStatusLocked(id, status string, content []sdk.ToolCallContent, rawOutput any) {
	ts := c.tools[id]
	if ts == nil || ts.result || (status != string(sdk.ToolCallStatusCompleted) && status != string(sdk.ToolCallStatusFailed)) {
		return
	}
	ts.result = true
	c.emitLocked(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallResult, ToolCallID: id, ToolName: ts.name,
		ToolResult: toolText(content, rawOutput), ToolError: status == string(sdk.ToolCallStatusFailed)})
}

// toolText flattens a tool call's content to text: text blocks joined,
// diffs and terminals named; the raw output when there is no content.
func toolText(content []sdk.ToolCallContent, rawOutput any) string {
	var parts []string
	for _, tc := range content {
		switch {
		case tc.Content != nil && tc.Content.Content.Text != nil:
			parts = append(parts, tc.Content.Content.Text.Text)
		case tc.Diff != nil:
			parts = append(parts, "diff of "+tc.Diff.Path)
		case tc.Terminal != nil:
			parts = append(parts, "terminal "+tc.Terminal.TerminalId)
		}
	}
	if len(parts) == 0 && rawOutput != nil {
		if s, ok := rawOutput.(string); ok {
			return s
		}
		b, _ := json.Marshal(rawOutput)
		return string(b)
	}
	return strings.Join(parts, "\n")
}

// rawOf turns an ACP value into a payload's Raw map.
func rawOf(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// diagHandler turns the ACP connection's error logs (a line it could not
// parse, a notification it could not decode) into diagnostic payloads of
// the run. It keeps only the message and the error: never the raw line.
type diagHandler struct {
	c     *conversation
	attrs []slog.Attr
}

func (h diagHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h diagHandler) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	add := func(a slog.Attr) bool {
		if a.Key == "err" || a.Key == "method" {
			msg += "; " + a.Key + ": " + oneLine(a.Value.String())
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	h.c.emitLocked(agentadaptor.StreamPayload{Kind: agentadaptor.KindDiagnostic, Diagnostic: &agentadaptor.Diagnostic{Code: agentadaptor.DiagMalformedLine, Message: "acp: " + msg}})
	return nil
}

func (h diagHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return diagHandler{c: h.c, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h diagHandler) WithGroup(string) slog.Handler { return h }
