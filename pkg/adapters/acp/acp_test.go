package acp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/goleak"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/fakeacp"
	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	"github.com/seed0634/agentadaptor/pkg/adapters/acp"
	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
)

func TestMain(m *testing.M) {
	fakeacp.MaybeRun()
	os.Exit(m.Run())
}

// newAdapter returns an ACP adapter whose agent is this test binary acting
// as the fake ACP agent.
func newAdapter(t testing.TB, cfg acp.Config) *acp.Adapter {
	t.Helper()
	cfg.Binary = adaptertest.TestBinary(t)
	a, err := acp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func script(s fakeacp.Script) agentadaptor.RunOption { return agentadaptor.WithEnv(fakeacp.Option(s)) }

func say(text string) fakeacp.Turn {
	return fakeacp.Turn{Steps: []fakeacp.Step{{Text: text, Chunks: 3}}}
}

func newSDK(t testing.TB, a agentadaptor.Adapter) *agentadaptor.SDK {
	t.Helper()
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(a))
	if err != nil {
		t.Fatal(err)
	}
	return sdk
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, adaptertest.Harness{
		Adapter: newAdapter(t, acp.Config{}),
		Plain:   []agentadaptor.RunOption{script(fakeacp.Script{Turns: []fakeacp.Turn{say("Hello from ACP.")}})},
		Slow:    []agentadaptor.RunOption{script(fakeacp.Script{Turns: []fakeacp.Turn{{Steps: []fakeacp.Step{{WaitCancel: true}}}}})},
	})
}

func TestMapping(t *testing.T) {
	a := newAdapter(t, acp.Config{})
	ctx := ctxT(t)
	ps, res := adaptertest.RunToEnd(ctx, t, newSDK(t, a), "map it", script(fakeacp.Script{Turns: []fakeacp.Turn{{
		Steps: []fakeacp.Step{
			{Thought: "thinking hard"},
			{Plan: []string{"look", "answer"}},
			{Text: "First part.", Chunks: 2},
			{Text: "Final answer.", Chunks: 2, Thought: "again"},
		},
		Usage: &sdk.Usage{InputTokens: 11, OutputTokens: 7, TotalTokens: 18, ThoughtTokens: new(3)},
	}}}))
	if res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("status %s %v\n%s", res.Status, res.Failure, res.RawStreams.Stderr)
	}
	got := strings.Join(adaptertest.Names(ps), " ")
	want := "run.started custom:acp.session reasoning.start reasoning.delta custom:acp.plan reasoning.end " +
		"text.start text.delta text.delta text.end reasoning.start reasoning.delta reasoning.end " +
		"text.start text.delta text.delta text.end custom:acp.stop usage run.finished"
	if got != want {
		t.Errorf("kinds\n got %s\nwant %s", got, want)
	}
	if res.Output != "Final answer." {
		t.Errorf("output %q, want the last message", res.Output)
	}
	if res.Usage == nil || res.Usage.InputTokens != 11 || res.Usage.OutputTokens != 7 || res.Usage.ReasoningTokens != 3 {
		t.Errorf("usage %+v", res.Usage)
	}
	if !strings.HasPrefix(res.SessionID, "fake-session-") {
		t.Errorf("session id %q", res.SessionID)
	}
	for _, p := range ps {
		if p.Kind == agentadaptor.KindCustom && p.Name == "acp.plan" {
			if entries, _ := p.Raw["entries"].([]any); len(entries) != 2 {
				t.Errorf("plan payload %v", p.Raw)
			}
		}
	}
}

func TestGeminiQuotaUsage(t *testing.T) {
	a := newAdapter(t, acp.Config{})
	_, res := adaptertest.RunToEnd(ctxT(t), t, newSDK(t, a), "q", script(fakeacp.Script{Turns: []fakeacp.Turn{{Steps: []fakeacp.Step{{Text: "ok"}}, QuotaMeta: true}}}))
	if res.Usage == nil || res.Usage.InputTokens != 21 || res.Usage.OutputTokens != 8 {
		t.Errorf("usage %+v, want the _meta.quota counts", res.Usage)
	}
}

func TestStopReasons(t *testing.T) {
	a := newAdapter(t, acp.Config{})
	ctx := ctxT(t)
	for _, tc := range []struct {
		stop   string
		status agentadaptor.RunStatus
		code   agentadaptor.FailureCode
	}{
		{"end_turn", agentadaptor.StatusCompleted, ""},
		{"max_tokens", agentadaptor.StatusCompleted, ""},
		{"max_turn_requests", agentadaptor.StatusCompleted, ""},
		{"refusal", agentadaptor.StatusFailed, agentadaptor.FailureAgent},
		{"cancelled", agentadaptor.StatusFailed, agentadaptor.FailureCancelled},
		{"bogus", agentadaptor.StatusFailed, agentadaptor.FailureProtocol},
	} {
		t.Run(tc.stop, func(t *testing.T) {
			ps, res := adaptertest.RunToEnd(ctx, t, newSDK(t, a), "p", script(fakeacp.Script{Turns: []fakeacp.Turn{{Steps: []fakeacp.Step{{Text: "t"}}, Stop: tc.stop}}}))
			if res.Status != tc.status || (tc.code != "" && res.Failure.Code != tc.code) {
				t.Fatalf("status %s failure %+v", res.Status, res.Failure)
			}
			stop := ""
			for _, p := range ps {
				if p.Name == "acp.stop" {
					stop, _ = p.Raw["stop_reason"].(string)
				}
			}
			if stop != tc.stop {
				t.Errorf("acp.stop payload says %q", stop)
			}
		})
	}
}

// A model error the agent relays as a JSON-RPC error with the HTTP status
// as code (Gemini CLI) is a model_error with the status.
func TestPromptErrors(t *testing.T) {
	a := newAdapter(t, acp.Config{})
	ctx := ctxT(t)
	for _, tc := range []struct {
		err       sdk.RequestError
		code      agentadaptor.FailureCode
		retryable bool
	}{
		{sdk.RequestError{Code: 429, Message: "Rate limit exceeded."}, agentadaptor.FailureModel, true},
		{sdk.RequestError{Code: 500, Message: "boom"}, agentadaptor.FailureModel, true},
		{sdk.RequestError{Code: -32000, Message: "Authentication required"}, agentadaptor.FailureAgent, false},
	} {
		res, err := newSDK(t, a).Run(ctx, "p", script(fakeacp.Script{Turns: []fakeacp.Turn{{Error: &tc.err}}}))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != agentadaptor.StatusFailed || res.Failure.Code != tc.code || res.Failure.Retryable != tc.retryable {
			t.Errorf("%d: status %s failure %+v", tc.err.Code, res.Status, res.Failure)
		}
	}
}

// The run's MCP server reaches the agent through session/new with the run
// token as a header (never argv, never a file), the tool call is in the
// stream with the agent's tool call id and an mcp__<server>__<tool> name,
// and its result feeds the answer.
func TestMCPToolOverHTTP(t *testing.T) {
	svc := fakemodel.NewMCPService("e2e-tools")
	t.Cleanup(svc.Close)
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.jsonl")
	a := newAdapter(t, acp.Config{})
	ctx := ctxT(t)
	ps, res := adaptertest.RunToEnd(ctx, t, newSDK(t, a), "use the tool", agentadaptor.WithRuntimeServices(svc),
		script(fakeacp.Script{Record: rec, Turns: []fakeacp.Turn{{Steps: []fakeacp.Step{
			{Tool: &fakeacp.Tool{Server: "e2e-tools", Name: "echo", Args: map[string]any{"text": "ping"}, ID: "tc-1"}},
			{Text: "The tool said {{result}}."},
		}}}}))
	if res.Status != agentadaptor.StatusCompleted || res.Output != "The tool said echo:ping." {
		t.Fatalf("status %s %v output %q", res.Status, res.Failure, res.Output)
	}
	var start, result *agentadaptor.StreamPayload
	for i, p := range ps {
		switch p.Kind {
		case agentadaptor.KindToolCallStart:
			start = &ps[i]
		case agentadaptor.KindToolCallResult:
			result = &ps[i]
		}
	}
	if start == nil || start.ToolCallID != "tc-1" || start.ToolName != "mcp__e2e-tools__echo" {
		t.Errorf("tool_call.start %+v", start)
	}
	if result == nil || result.ToolResult != "echo:ping" || result.ToolError {
		t.Errorf("tool_call.result %+v", result)
	}
	calls := svc.Calls()
	if len(calls) != 1 || calls[0].RunID != res.RunID {
		t.Fatalf("calls %+v", calls)
	}
	token := svc.TokenFor(res.RunID)
	for _, r := range fakeacp.Records(rec) {
		if r["method"] == "initialize" && strings.Contains(toJSON(r), token) {
			t.Errorf("the token went out before session/new")
		}
	}
	if strings.Contains(string(res.RawStreams.Stdout), token) || strings.Contains(string(res.RawStreams.Stderr), token) {
		t.Errorf("the token is in the raw streams")
	}
}

// Permissions: the host's own tools are allowed; every other request is
// decided by the deny and allow lists (default deny), at once, and each
// decision is in the stream.
func TestPermissions(t *testing.T) {
	svc := fakemodel.NewMCPService("host-tools")
	t.Cleanup(svc.Close)
	a := newAdapter(t, acp.Config{Permissions: acp.Permissions{Allow: []string{"kind:read", "Fetch*"}, Deny: []string{"Fetch secrets"}}})
	ctx := ctxT(t)
	ps, res := adaptertest.RunToEnd(ctx, t, newSDK(t, a), "p", agentadaptor.WithRuntimeServices(svc),
		script(fakeacp.Script{Turns: []fakeacp.Turn{{Steps: []fakeacp.Step{
			{Tool: &fakeacp.Tool{Server: "host-tools", Name: "echo", Args: map[string]any{"text": "x"}, Ask: true}},
			{Permission: &fakeacp.Tool{Title: "Shell", Kind: "execute"}},
			{Permission: &fakeacp.Tool{Title: "ReadFile", Kind: "read"}},
			{Permission: &fakeacp.Tool{Title: "Fetch docs", Kind: "fetch"}},
			{Permission: &fakeacp.Tool{Title: "Fetch secrets", Kind: "fetch"}},
		}}}}))
	if res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("status %s %v", res.Status, res.Failure)
	}
	var decisions []string
	for _, p := range ps {
		if p.Name == "acp.permission" {
			decisions = append(decisions, p.Raw["tool"].(string)+"="+p.Raw["decision"].(string))
		}
	}
	want := "mcp__host-tools__echo=allowed Shell=denied ReadFile=allowed Fetch docs=allowed Fetch secrets=denied"
	if strings.Join(decisions, " ") != want {
		t.Errorf("decisions\n got %v\nwant %s", decisions, want)
	}
	if len(svc.Calls()) != 1 {
		t.Errorf("the host tool was not called after its permission: %+v", svc.Calls())
	}
	if !strings.Contains(res.Output, "permission:cancel") {
		t.Errorf("output %q: the last denial did not reach the agent as reject", res.Output)
	}
}

// Cancel sends session/cancel first: an agent that honours it ends the
// turn cancelled; the run is cancelled and the agent saw the request.
func TestCancelSendsSessionCancel(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	a := newAdapter(t, acp.Config{})
	ctx := ctxT(t)
	h, err := newSDK(t, a).Start(ctx, "p", agentadaptor.WithCancelGrace(5*time.Second),
		script(fakeacp.Script{Record: rec, Turns: []fakeacp.Turn{{Steps: []fakeacp.Step{{Text: "working"}, {WaitCancel: true}}}}}))
	if err != nil {
		t.Fatal(err)
	}
	for p := range h.StreamEvents() {
		if p.Kind == agentadaptor.KindTextDelta {
			break
		}
	}
	if err := h.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCancelled {
		t.Fatalf("status %s", res.Status)
	}
	ended := ""
	for _, r := range fakeacp.Records(rec) {
		if r["method"] == "prompt-ended" {
			ended, _ = r["cause"].(string)
		}
	}
	if ended != context.Canceled.Error() {
		t.Errorf("the prompt did not end by session/cancel (cause %q): %v", ended, fakeacp.Records(rec))
	}
}

// An agent that ignores session/cancel and SIGINT, with a grandchild:
// the SIGKILL after the grace ends the whole group, and the run is
// cancelled.
func TestCancelStubbornAgentGroupGone(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	a := newAdapter(t, acp.Config{})
	ctx := ctxT(t)
	h, err := newSDK(t, a).Start(ctx, "p", agentadaptor.WithCancelGrace(300*time.Millisecond),
		script(fakeacp.Script{Record: rec, Stubborn: true, Grandchild: true, Turns: []fakeacp.Turn{{Steps: []fakeacp.Step{{Text: "working"}, {WaitCancel: true, IgnoreCancel: true}}}}}))
	if err != nil {
		t.Fatal(err)
	}
	for p := range h.StreamEvents() {
		if p.Kind == agentadaptor.KindTextDelta {
			break
		}
	}
	if err := h.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCancelled {
		t.Fatalf("status %s", res.Status)
	}
	checkGrandchildGone(t, rec)
}

// A stubborn agent that stays after its stdin closed: once the prompt is
// answered the run completes and the SDK still ends the group.
func TestCompletedStubbornAgentGroupGone(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	a := newAdapter(t, acp.Config{})
	res, err := newSDK(t, a).Run(ctxT(t), "p", agentadaptor.WithCancelGrace(200*time.Millisecond),
		script(fakeacp.Script{Record: rec, Stubborn: true, Grandchild: true, Turns: []fakeacp.Turn{say("done")}}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentadaptor.StatusCompleted || res.Output != "done" {
		t.Fatalf("status %s %v output %q", res.Status, res.Failure, res.Output)
	}
	checkGrandchildGone(t, rec)
}

// A run interrupted while the agent has not even answered initialize is
// cancelled, and a setup that never answers is bounded.
func TestSetupHang(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := ctxT(t)
	a := newAdapter(t, acp.Config{SetupTimeout: 300 * time.Millisecond})
	res, err := newSDK(t, a).Run(ctx, "p", script(fakeacp.Script{HangSetup: true}), agentadaptor.WithCancelGrace(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentadaptor.StatusFailed || res.Failure.Code != agentadaptor.FailureStart || !strings.Contains(res.Failure.Message, "initialize") {
		t.Errorf("status %s failure %+v", res.Status, res.Failure)
	}
	b := newAdapter(t, acp.Config{})
	h, err := newSDK(t, b).Start(ctx, "p", script(fakeacp.Script{HangSetup: true}), agentadaptor.WithCancelGrace(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	<-h.StreamEvents()
	if err := h.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if res, _ := h.Wait(ctx); res.Status != agentadaptor.StatusCancelled {
		t.Errorf("status %s", res.Status)
	}
}

// A chat thread continues its ACP session: the second run loads the first
// run's session (its history replay is not shown again) and the agent
// answers with the earlier turn in context. Without loadSession, a new
// session starts and the stream says so.
func TestSessionLoad(t *testing.T) {
	state := t.TempDir()
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	a := newAdapter(t, acp.Config{})
	s := newSDK(t, a)
	ctx := ctxT(t)
	opt := script(fakeacp.Script{LoadSession: true, StateDir: state, Record: rec, Turns: []fakeacp.Turn{say("first answer"), say("earlier: {{history}}")}})
	_, r1 := adaptertest.RunToEnd(ctx, t, s, "first question", opt, agentadaptor.WithSessionKey("thread-1"))
	ps, r2 := adaptertest.RunToEnd(ctx, t, s, "second question", opt, agentadaptor.WithSessionKey("thread-1"))
	if r1.Status != agentadaptor.StatusCompleted || r2.Status != agentadaptor.StatusCompleted {
		t.Fatalf("runs %s %s", r1.Status, r2.Status)
	}
	if r2.SessionID != r1.SessionID || r2.Output != "earlier: first question" {
		t.Errorf("second run: session %q (first %q), output %q", r2.SessionID, r1.SessionID, r2.Output)
	}
	for _, p := range ps {
		if p.Kind == agentadaptor.KindTextDelta && strings.Contains(p.Delta, "first answer") {
			t.Errorf("the loaded history was replayed into the run's stream")
		}
		if p.Name == "acp.session" && p.Raw["resumed"] != true {
			t.Errorf("acp.session %v", p.Raw)
		}
	}
	if !hasMethod(rec, "session/load") {
		t.Errorf("no session/load")
	}

	// Without loadSession: a new session, said in the stream.
	b := newSDK(t, newAdapter(t, acp.Config{}))
	noLoad := script(fakeacp.Script{Turns: []fakeacp.Turn{say("a"), say("b")}})
	adaptertest.RunToEnd(ctx, t, b, "q1", noLoad, agentadaptor.WithSessionKey("t"))
	ps, _ = adaptertest.RunToEnd(ctx, t, b, "q2", noLoad, agentadaptor.WithSessionKey("t"))
	note := ""
	for _, p := range ps {
		if p.Name == "acp.session" {
			note, _ = p.Raw["note"].(string)
		}
	}
	if !strings.Contains(note, "does not support session/load") {
		t.Errorf("note %q", note)
	}
}

// Output that is not JSON-RPC becomes a diagnostic, never a crash.
func TestNoiseOnStdout(t *testing.T) {
	a := newAdapter(t, acp.Config{})
	ps, res := adaptertest.RunToEnd(ctxT(t), t, newSDK(t, a), "p", script(fakeacp.Script{Noise: "Loaded cached credentials.", Turns: []fakeacp.Turn{say("ok")}}))
	if res.Status != agentadaptor.StatusCompleted || res.Output != "ok" {
		t.Fatalf("status %s %v %q", res.Status, res.Failure, res.Output)
	}
	if !adaptertest.HasDiagnostic(ps, agentadaptor.DiagMalformedLine) {
		t.Errorf("no diagnostic for the noise")
	}
	for _, p := range ps {
		if p.Kind == agentadaptor.KindDiagnostic && strings.Contains(p.Diagnostic.Message, "cached credentials") {
			t.Errorf("the diagnostic repeats the raw line: %q", p.Diagnostic.Message)
		}
	}
}

// Without http in mcpCapabilities and without a bridge, a run with an
// http MCP server fails with invalid_config before any prompt.
func TestNoHTTPNoBridge(t *testing.T) {
	svc := fakemodel.NewMCPService("x")
	t.Cleanup(svc.Close)
	a := newAdapter(t, acp.Config{})
	res, err := newSDK(t, a).Run(ctxT(t), "p", agentadaptor.WithRuntimeServices(svc), script(fakeacp.Script{NoHTTP: true, Turns: []fakeacp.Turn{say("x")}}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentadaptor.StatusFailed || res.Failure.Code != agentadaptor.FailureInvalidConfig || !strings.Contains(res.Failure.Message, "StdioBridge") {
		t.Errorf("status %s failure %+v", res.Status, res.Failure)
	}
}

func TestConfigErrors(t *testing.T) {
	_, err := acp.New(acp.Config{})
	adaptertest.CheckConfigError(t, err, "acp.Config.Binary")
	_, err = acp.New(acp.Config{Binary: "x", Permissions: acp.Permissions{Allow: []string{"["}}})
	adaptertest.CheckConfigError(t, err, "acp.Config.Permissions[0]")
	a, _ := acp.New(acp.Config{Binary: "/nonexistent/agent"})
	_, err = a.Binary()
	adaptertest.CheckConfigError(t, err, "acp.Config.Binary")
}

func hasMethod(rec, method string) bool {
	for _, r := range fakeacp.Records(rec) {
		if r["method"] == method {
			return true
		}
	}
	return false
}

func checkGrandchildGone(t *testing.T, rec string) {
	t.Helper()
	pid := 0
	for _, r := range fakeacp.Records(rec) {
		if v, ok := r["grandchild"].(float64); ok {
			pid = int(v)
		}
	}
	if pid == 0 {
		t.Fatal("the agent recorded no grandchild")
	}
	testenv.Poll(10*time.Second, func() bool { return !alive(pid) })
	if alive(pid) {
		t.Errorf("grandchild %d survived the run", pid)
	}
}

func alive(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i > 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func itoa(n int) string { return strconv.Itoa(n) }

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Through the stdio bridge, the bearer token is in the bridge's
// environment entry and never in its argv.
func TestBridgeProfileKeepsTokenOutOfArgv(t *testing.T) {
	a := newAdapter(t, acp.Config{StdioBridge: &acp.StdioBridge{Command: "/usr/bin/bridge", Args: []string{"mcp-stdio-bridge"}}})
	const secret = "s3cr3t-bridge-token"
	inv, err := a.Prepare(context.Background(), &agentadaptor.AdapterRequest{
		RunID: "r", WorkDir: t.TempDir(),
		MCPServers: []agentadaptor.MCPServerSpec{{Key: "deleg", URL: "http://127.0.0.1:9/mcp", BearerTokenEnvVar: "TOK"}},
		Env:        map[string]string{"TOK": secret}, Secrets: map[string]bool{"TOK": true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(inv.Args, " "), secret) {
		t.Fatal("secret in the agent's argv")
	}
	lines := strings.Split(strings.TrimSpace(inv.Conversation.(adaptertest.ConversationProfile).MCPProfile()), "\n")
	if len(lines) != 2 {
		t.Fatalf("profile %q", lines)
	}
	var bridged []struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
		Env     []struct{ Name, Value string }
	}
	if err := json.Unmarshal([]byte(lines[1]), &bridged); err != nil || len(bridged) != 1 {
		t.Fatalf("bridged profile %s: %v", lines[1], err)
	}
	b := bridged[0]
	if b.Command != "/usr/bin/bridge" || strings.Contains(strings.Join(b.Args, " "), secret) ||
		strings.Join(b.Args, " ") != "mcp-stdio-bridge --url http://127.0.0.1:9/mcp --bearer-env AGENTADAPTOR_MCP_BRIDGE_TOKEN" {
		t.Errorf("bridge command %+v", b)
	}
	if len(b.Env) != 1 || b.Env[0].Value != secret {
		t.Errorf("bridge env %+v", b.Env)
	}
	if !strings.Contains(lines[0], `"Bearer `+secret+`"`) {
		t.Errorf("http profile %s lacks the bearer header", lines[0])
	}
}
