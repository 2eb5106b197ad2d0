package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/seed0634/agentadaptor/pkg/adapters/internal/clibase"
)

// AgentEnv is the environment variable that turns a binary into the scripted
// agent: the adapter sets it on the child, and MaybeRunAgent checks it.
const AgentEnv = "AGENTADAPTOR_SCRIPTED_AGENT"

// MetaToolCallID is the _meta key under which the scripted agent sends its
// tool call id with every MCP tools/call, as Claude Code sends
// "claudecode/toolUseId" and Codex "callId".
const MetaToolCallID = "agentadaptor/toolCallId"

// mcpProtocolVersion is the MCP version the agent asks for in initialize.
// The MCP SDK's newer default first probes the server with server/discover,
// which real CLIs do not send and a stateful streamable-HTTP server (the
// host's) answers by creating a session and throwing it away: one more
// request, session and decode for the host on every run. Asking for the
// version the host negotiates anyway opens the session as Claude Code and
// Codex do (initialize, notifications/initialized, tools/list).
const mcpProtocolVersion = "2025-11-25"

// MaybeRunAgent runs the scripted agent and exits the process if the current
// process was started by the scripted adapter (AgentEnv=1). Call it first
// thing in main, and in TestMain of test binaries that use the adapter with
// its default executable.
func MaybeRunAgent() {
	if os.Getenv(AgentEnv) != "1" {
		return
	}
	// Whatever this agent spawns (stdio MCP servers) must not become an agent.
	os.Unsetenv(AgentEnv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := RunAgent(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// RunAgent is the scripted agent's main: it parses its flags, connects to the
// MCP servers of its --mcp-config, performs the scenario's steps and writes
// JSON Lines to stdout. It returns the exit code: 0 on success or when asking
// for input, 1 when the scenario fails, 2 on usage errors, 130 when ctx is
// cancelled (SIGINT).
func RunAgent(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scripted-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenarioPath := fs.String("scenario", "", "scenario file (YAML or JSON)")
	mcpPath := fs.String("mcp-config", "", "MCP configuration: a file or the JSON itself (Claude's --mcp-config shape)")
	prompt := fs.String("prompt", "", "the user's prompt")
	stream := fs.Bool("stream", false, "stream text as deltas")
	sessionID := fs.String("session-id", "", "start a new session with this id")
	resume := fs.String("resume", "", "resume the session with this id")
	model := fs.String("model", "scripted", "model name to report")
	stateDir := fs.String("state-dir", "", "where sessions are kept (default: $TMPDIR/agentadaptor-scripted)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *scenarioPath == "" {
		fmt.Fprintln(stderr, "scripted-agent: --scenario is required")
		return 2
	}
	sc, err := LoadScenario(*scenarioPath)
	if err != nil {
		fmt.Fprintln(stderr, "scripted-agent:", err)
		return 2
	}
	a := &agent{
		sc: sc, out: json.NewEncoder(stdout), stream: *stream, prompt: *prompt,
		stateDir: *stateDir, stderr: stderr,
	}
	if a.stateDir == "" {
		a.stateDir = filepath.Join(os.TempDir(), "agentadaptor-scripted")
	}
	a.session = *sessionID
	start := 0
	if *resume != "" {
		a.session = *resume
		st, err := a.loadState()
		if err != nil {
			fmt.Fprintf(stderr, "scripted-agent: cannot resume session %s: %v\n", *resume, err)
			return 1
		}
		start = st.Next
		a.lastResult, a.lastResults = st.LastResult, st.LastResults
		a.turn = st.Turn + 1
		if start >= len(sc.Steps) && sc.Repeat {
			start = 0
		}
	}
	if a.session == "" {
		a.session = clibase.NewUUID()
	}
	cfg, err := readMCPConfig(*mcpPath)
	if err != nil {
		fmt.Fprintln(stderr, "scripted-agent:", err)
		return 2
	}
	defer a.closeServers()
	statuses := a.connect(ctx, cfg)
	a.write(line{Type: lineInit, SessionID: a.session, Model: *model, MCPServers: statuses})
	return a.run(ctx, start)
}

type agent struct {
	sc         *Scenario
	out        *json.Encoder
	outMu      sync.Mutex
	stream     bool
	prompt     string
	session    string
	stateDir   string
	stderr     io.Writer
	servers    []*connected
	msgN       int
	lastText   string
	lastResult *ResultData
	// lastResults are the results of the last call or parallel step, in
	// the listed order (TemplateData.Results).
	lastResults []ResultData
	words       int64
	// turn counts the turns of the session (0 for the first); it keeps the
	// message and tool call ids of a resumed turn distinct from earlier ones.
	turn int
}

type connected struct {
	name    string
	session *mcp.ClientSession
	tools   map[string]bool
}

type sessionState struct {
	Next        int          `json:"next"`
	LastResult  *ResultData  `json:"last_result,omitempty"`
	LastResults []ResultData `json:"last_results,omitempty"`
	Turn        int          `json:"turn,omitempty"`
}

func (a *agent) write(l line) {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	_ = a.out.Encode(l)
}

func (a *agent) statePath() string {
	return filepath.Join(a.stateDir, filepath.Base(a.session)+".json")
}

func (a *agent) loadState() (sessionState, error) {
	var st sessionState
	data, err := os.ReadFile(a.statePath())
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(data, &st)
}

func (a *agent) saveState(next int) {
	if err := os.MkdirAll(a.stateDir, 0o700); err != nil {
		fmt.Fprintln(a.stderr, "scripted-agent: saving session:", err)
		return
	}
	data, _ := json.Marshal(sessionState{Next: next, LastResult: a.lastResult, LastResults: a.lastResults, Turn: a.turn})
	if err := os.WriteFile(a.statePath(), data, 0o600); err != nil {
		fmt.Fprintln(a.stderr, "scripted-agent: saving session:", err)
	}
}

// headerTransport adds the configured headers to every MCP request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

func (a *agent) connect(ctx context.Context, cfg mcpConfig) []serverStatus {
	var out []serverStatus
	names := make([]string, 0, len(cfg.MCPServers))
	for k := range cfg.MCPServers {
		names = append(names, k)
	}
	sortStrings(names)
	for _, name := range names {
		srv := cfg.MCPServers[name]
		st := serverStatus{Name: name, Status: "connected"}
		c, err := a.connectOne(ctx, name, srv)
		if err != nil {
			st.Status, st.Error = "failed", err.Error()
		} else {
			st.Tools = len(c.tools)
			a.servers = append(a.servers, c)
		}
		out = append(out, st)
	}
	return out
}

func (a *agent) connectOne(ctx context.Context, name string, srv mcpServer) (*connected, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "agentadaptor-scripted", Version: "1"}, nil)
	var transport mcp.Transport
	switch srv.Type {
	case "http", "":
		headers := map[string]string{}
		for k, v := range srv.Headers {
			headers[k] = expandEnv(v, os.Getenv)
		}
		hc := &http.Client{Transport: &headerTransport{headers: headers, base: http.DefaultTransport}}
		transport = &mcp.StreamableClientTransport{Endpoint: expandEnv(srv.URL, os.Getenv), HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	case "stdio":
		args := make([]string, len(srv.Args))
		for i, v := range srv.Args {
			args[i] = expandEnv(v, os.Getenv)
		}
		cmd := exec.Command(expandEnv(srv.Command, os.Getenv), args...)
		cmd.Env = os.Environ()
		for k, v := range srv.Env {
			cmd.Env = append(cmd.Env, k+"="+expandEnv(v, os.Getenv))
		}
		cmd.Stderr = a.stderr
		transport = &mcp.CommandTransport{Command: cmd}
	default:
		return nil, fmt.Errorf("unknown server type %q", srv.Type)
	}
	sess, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: mcpProtocolVersion})
	if err != nil {
		return nil, err
	}
	c := &connected{name: name, session: sess, tools: map[string]bool{}}
	for tool, err := range sess.Tools(ctx, nil) {
		if err != nil {
			sess.Close()
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		c.tools[tool.Name] = true
	}
	return c, nil
}

func (a *agent) closeServers() {
	for _, c := range a.servers {
		_ = c.session.Close()
	}
}

func (a *agent) run(ctx context.Context, start int) int {
	for i := start; i < len(a.sc.Steps); i++ {
		if ctx.Err() != nil {
			return 130
		}
		st := a.sc.Steps[i]
		switch st.Kind {
		case StepSay:
			a.say(ctx, a.render("say", st.Say))
		case StepSayResult:
			a.say(ctx, a.render("say_result", st.SayResult))
		case StepSleep:
			select {
			case <-time.After(st.Sleep):
			case <-ctx.Done():
				return 130
			}
		case StepCall:
			res := a.finishCall(ctx, a.startCall(a.id("call", i), st.Call))
			a.lastResult, a.lastResults = res, []ResultData{*res}
		case StepParallel:
			a.parallel(ctx, i, st.Parallel)
		case StepArtifact:
			a.write(line{Type: lineArtifact, Name: a.render("artifact name", st.Artifact.Name), MimeType: st.Artifact.MimeType,
				Text: a.render("artifact text", st.Artifact.Text)})
		case StepAsk:
			q := a.render("ask", st.Ask)
			a.say(ctx, q)
			a.write(line{Type: lineAsk, Text: q})
			a.saveState(i + 1)
			a.result(resultInputRequired, "")
			return 0
		case StepFail:
			a.saveState(i + 1)
			a.result(resultFailed, st.Fail)
			return 1
		}
	}
	if ctx.Err() != nil {
		return 130
	}
	a.saveState(len(a.sc.Steps))
	a.result(resultCompleted, "")
	return 0
}

// render executes a scenario text as a template with this turn's prompt and
// the last tool result (texts without "{{" are returned as they are, except
// say_result, which always is a template). A template that fails to execute
// renders as a note saying so.
func (a *agent) render(what, text string) string {
	if what != "say_result" && !isTemplate(text) {
		return text
	}
	t, err := template.New(what).Option("missingkey=zero").Parse(text) // validated at load
	if err != nil {
		return fmt.Sprintf("(could not render %s: %v)", what, err)
	}
	data := TemplateData{Prompt: a.prompt, Results: a.lastResults}
	if a.lastResult != nil {
		data.ResultData = *a.lastResult
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return fmt.Sprintf("(could not render %s: %v)", what, err)
	}
	return b.String()
}

// id names this turn's n-th message or tool call: kind-<session>-<n> in the
// first turn, kind-<session>-<turn>-<n> after it.
func (a *agent) id(kind string, n int) string {
	if a.turn == 0 {
		return fmt.Sprintf("%s-%s-%d", kind, a.session[:8], n)
	}
	return fmt.Sprintf("%s-%s-%d-%d", kind, a.session[:8], a.turn, n)
}

func (a *agent) result(status, errMsg string) {
	a.write(line{
		Type: lineResult, Status: status, SessionID: a.session, Output: a.lastText,
		IsError: status == resultFailed, Error: errMsg,
		Usage: &lineUsage{InputTokens: int64(len(strings.Fields(a.prompt))), OutputTokens: a.words},
	})
}

func (a *agent) say(ctx context.Context, text string) {
	a.msgN++
	id := a.id("msg", a.msgN)
	a.lastText = text
	a.words += int64(len(strings.Fields(text)))
	if !a.stream {
		a.write(line{Type: lineText, MessageID: id, Text: text})
		return
	}
	a.write(line{Type: lineTextStart, MessageID: id})
	for _, chunk := range chunks(text) {
		a.write(line{Type: lineTextDelta, MessageID: id, Delta: chunk})
		if a.sc.StreamDelay > 0 {
			select {
			case <-time.After(a.sc.StreamDelay):
			case <-ctx.Done():
			}
		}
	}
	a.write(line{Type: lineTextEnd, MessageID: id, Text: text})
}

// chunks splits text into pieces of a few words, keeping all whitespace.
func chunks(text string) []string {
	var out []string
	words := 0
	startIdx := 0
	inWord := false
	for i, r := range text {
		space := r == ' ' || r == '\n' || r == '\t'
		if !space && !inWord {
			inWord = true
			if words == 3 {
				out = append(out, text[startIdx:i])
				startIdx, words = i, 0
			}
		}
		if space && inWord {
			inWord = false
			words++
		}
	}
	if startIdx < len(text) {
		out = append(out, text[startIdx:])
	}
	return out
}

// pendingCall is a tool call whose tool_call line is written and whose
// tools/call is still to be made.
type pendingCall struct {
	id, server, tool string
	args             map[string]any
}

// startCall renders c's args, resolves its server and writes its tool_call
// line.
func (a *agent) startCall(id string, c *CallStep) *pendingCall {
	server, tool := a.resolve(c.Tool)
	callArgs := c.Args
	if callArgs != nil {
		v, _ := mapStrings(c.Args, func(s string) (string, error) { return a.render("call args", s), nil })
		callArgs, _ = v.(map[string]any)
	}
	args, _ := json.Marshal(callArgs)
	if callArgs == nil {
		args = []byte("{}")
	}
	a.write(line{Type: lineToolCall, ID: id, Name: tool, Server: server, Args: args})
	return &pendingCall{id: id, server: server, tool: tool, args: callArgs}
}

// finishCall makes the tools/call and writes its tool_result line. It is
// safe to run for several calls at once (a parallel step).
func (a *agent) finishCall(ctx context.Context, c *pendingCall) *ResultData {
	res := a.doCall(ctx, c.id, c.server, c.tool, c.args)
	var structured json.RawMessage
	if res.JSON != nil {
		structured, _ = json.Marshal(res.JSON)
	}
	a.write(line{Type: lineToolResult, ID: c.id, Content: res.Text, Structured: structured, IsError: res.IsError})
	return res
}

// parallel runs the steps of a parallel step at once and returns when all
// have ended. The tool_call lines come first, in the listed order (as a
// model's message lists its tool uses), with ids <call id of the step>.<j>;
// the tool_result lines come as the calls end. The last result becomes all
// the calls' results, in the listed order (see ResultData).
func (a *agent) parallel(ctx context.Context, step int, steps []Step) {
	base := a.id("call", step)
	calls := make([]*pendingCall, len(steps))
	n := 0
	for j, st := range steps {
		if st.Kind == StepCall {
			calls[j] = a.startCall(base+"."+strconv.Itoa(j), st.Call)
			n++
		}
	}
	results := make([]*ResultData, len(steps))
	var wg sync.WaitGroup
	for j, st := range steps {
		switch st.Kind {
		case StepCall:
			wg.Go(func() { results[j] = a.finishCall(ctx, calls[j]) })
		case StepSleep:
			wg.Go(func() {
				t := time.NewTimer(st.Sleep)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
				}
			})
		}
	}
	wg.Wait()
	if n == 0 {
		return
	}
	a.lastResults = make([]ResultData, 0, n)
	for _, r := range results {
		if r != nil {
			a.lastResults = append(a.lastResults, *r)
		}
	}
	a.lastResult = combineResults(a.lastResults)
}

// resolve finds which server offers tool (bare or mcp__server__tool).
func (a *agent) resolve(name string) (server, tool string) {
	if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
		for _, c := range a.servers {
			if t, ok := strings.CutPrefix(rest, c.name+"__"); ok && c.tools[t] {
				return c.name, t
			}
		}
	}
	for _, c := range a.servers {
		if c.tools[name] {
			return c.name, name
		}
	}
	return "", name
}

func (a *agent) doCall(ctx context.Context, id, server, tool string, args map[string]any) *ResultData {
	var sess *mcp.ClientSession
	for _, c := range a.servers {
		if c.name == server {
			sess = c.session
		}
	}
	if sess == nil {
		return &ResultData{Text: fmt.Sprintf("tool %q is not offered by any connected MCP server", tool), IsError: true}
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: args, Meta: mcp.Meta{MetaToolCallID: id}}
	params.SetProgressToken(id)
	res, err := sess.CallTool(ctx, params)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return &ResultData{Text: "tool call cancelled", IsError: true}
		}
		return &ResultData{Text: "tool call failed: " + err.Error(), IsError: true}
	}
	out := &ResultData{IsError: res.IsError, JSON: res.StructuredContent}
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	out.Text = strings.Join(texts, "\n")
	if out.JSON == nil {
		var v any
		if json.Unmarshal([]byte(out.Text), &v) == nil {
			out.JSON = v
		}
	}
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
