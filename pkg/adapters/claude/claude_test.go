package claude_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
	"github.com/seed0634/agentadaptor/pkg/adapters/claude"
)

func TestMain(m *testing.M) {
	fakemodel.MaybeRunFakeCLI()
	os.Exit(m.Run())
}

// fakeAdapter is the adapter with the test binary as its "claude".
func fakeAdapter(t testing.TB, cfg claude.Config) *claude.Adapter {
	t.Helper()
	return adaptertest.WithTestBinary(t, func(bin string) (*claude.Adapter, error) {
		cfg.Binary = bin
		return claude.New(cfg)
	})
}

func fakeEnv(t testing.TB, name, mode string, extra ...string) agentadaptor.RunOption {
	return fakemodel.FakeCLIOption(adaptertest.Fixture(t, name), mode, extra...)
}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, adaptertest.Harness{
		Adapter: fakeAdapter(t, claude.Config{}),
		Plain:   []agentadaptor.RunOption{fakeEnv(t, "stream_text.jsonl", "replay")},
		Slow:    []agentadaptor.RunOption{fakeEnv(t, "text.jsonl", "slow")},
	})
}

// parse feeds a fixture to a fresh parser and returns the payloads and outcome.
func parse(t testing.TB, name string, required map[string]bool, exit agentadaptor.ExitStatus) ([]agentadaptor.StreamPayload, agentadaptor.Outcome, []error) {
	t.Helper()
	return adaptertest.Replay(t, name, claude.NewParser(required), exit)
}

// filterKinds keeps the standard kinds (drops custom payloads).
func filterKinds(ps []agentadaptor.StreamPayload) []string {
	var out []string
	for _, p := range ps {
		if p.Kind != agentadaptor.KindCustom {
			out = append(out, string(p.Kind))
		}
	}
	return out
}

func TestParserFixtures(t *testing.T) {
	const sid = "11111111-2222-4333-8444-555555555555"
	tests := []struct {
		fixture   string
		required  map[string]bool
		exit      int
		kinds     []string // standard kinds in order
		output    string
		session   string
		failure   agentadaptor.FailureCode
		errs      int
		toolID    string
		toolArgs  string
		toolRes   string
		usageIn   int64
		costAbove float64
	}{
		{
			fixture: "text.jsonl", session: "21111111-2222-4333-8444-555555555555",
			kinds:  []string{"text.start", "text.delta", "text.end", "usage"},
			output: "Hello there, this is the fake model.", usageIn: 10,
		},
		{
			fixture: "stream_text.jsonl",
			kinds:   []string{"text.start", "text.delta", "text.delta", "text.delta", "text.end", "usage"},
			output:  "Hello there, this is the fake model.", usageIn: 10,
		},
		{
			fixture: "stream_tool.jsonl", session: sid,
			kinds: []string{
				"reasoning.start", "reasoning.delta", "reasoning.delta", "reasoning.delta", "reasoning.end",
				"text.start", "text.delta", "text.delta", "text.delta", "text.end",
				"tool_call.start", "tool_call.args", "tool_call.args", "tool_call.end",
				"tool_call.result",
				"text.start", "text.delta", "text.delta", "text.delta", "text.end", "usage",
			},
			output: "Result was echo:hi", toolID: "toolu_fake0001", toolArgs: `{"text":"hi"}`, toolRes: "echo:hi", usageIn: 20, costAbove: 0.0001,
		},
		{
			fixture: "tool.jsonl",
			kinds: []string{
				"reasoning.start", "reasoning.delta", "reasoning.end",
				"text.start", "text.delta", "text.end",
				"tool_call.start", "tool_call.args", "tool_call.end", "tool_call.result",
				"text.start", "text.delta", "text.end", "usage",
			},
			output: "Result was echo:hi", toolID: "toolu_fake0001", toolArgs: `{"text":"hi"}`, toolRes: "echo:hi",
		},
		{fixture: "permission_denied.jsonl", failure: agentadaptor.FailurePermissionDenied},
		{fixture: "model_500.jsonl", exit: 1, failure: agentadaptor.FailureModel},
		{fixture: "mcp_failed.jsonl", required: map[string]bool{"bad-srv": true}, failure: agentadaptor.FailureMCPServer},
		{fixture: "mcp_failed.jsonl", output: "Hello there, this is the fake model."}, // not required: completes
		{fixture: "malformed.jsonl", errs: 3, output: "Still here.", usageIn: 3},
	}
	for _, tc := range tests {
		name := strings.TrimSuffix(tc.fixture, ".jsonl")
		if tc.required != nil {
			name += "/required"
		}
		t.Run(name, func(t *testing.T) {
			ps, out, errs := parse(t, tc.fixture, tc.required, agentadaptor.ExitStatus{Code: tc.exit})
			if len(errs) != tc.errs {
				t.Errorf("ParseLine errors = %v, want %d", errs, tc.errs)
			}
			if tc.kinds != nil {
				if got := filterKinds(ps); strings.Join(got, " ") != strings.Join(tc.kinds, " ") {
					t.Errorf("kinds:\n got %v\nwant %v", got, tc.kinds)
				}
			}
			if tc.failure == "" && out.Failure != nil {
				t.Errorf("failure = %v, want none", out.Failure)
			}
			if tc.failure != "" && (out.Failure == nil || out.Failure.Code != tc.failure) {
				t.Errorf("failure = %v, want %s", out.Failure, tc.failure)
			}
			if tc.output != "" && out.Output != tc.output {
				t.Errorf("output = %q, want %q", out.Output, tc.output)
			}
			if tc.session != "" && out.SessionID != tc.session {
				t.Errorf("session = %q, want %q", out.SessionID, tc.session)
			}
			if out.SessionID == "" {
				t.Errorf("no session id")
			}
			if tc.usageIn != 0 && (out.Usage == nil || out.Usage.InputTokens != tc.usageIn) {
				t.Errorf("usage = %+v, want input %d", out.Usage, tc.usageIn)
			}
			if tc.costAbove != 0 && (out.Usage == nil || out.Usage.CostUSD < tc.costAbove) {
				t.Errorf("cost = %+v", out.Usage)
			}
			if tc.toolID != "" {
				var end, res *agentadaptor.StreamPayload
				for i := range ps {
					switch ps[i].Kind {
					case agentadaptor.KindToolCallEnd:
						end = &ps[i]
					case agentadaptor.KindToolCallResult:
						res = &ps[i]
					}
				}
				if end == nil || end.ToolCallID != tc.toolID || end.ToolArgs != tc.toolArgs || end.ToolName != "mcp__my-srv__echo" {
					t.Errorf("tool_call.end = %+v", end)
				}
				if res == nil || res.ToolCallID != tc.toolID || res.ToolResult != tc.toolRes {
					t.Errorf("tool_call.result = %+v", res)
				}
			}
			// Every text.start is closed by a text.end with the same id.
			open := map[string]bool{}
			for _, p := range ps {
				switch p.Kind {
				case agentadaptor.KindTextStart:
					open[p.MessageID] = true
				case agentadaptor.KindTextEnd:
					if !open[p.MessageID] {
						t.Errorf("text.end %q without start", p.MessageID)
					}
					delete(open, p.MessageID)
				}
			}
			if len(open) > 0 {
				t.Errorf("unclosed text messages %v", open)
			}
		})
	}
}

func TestParserDetails(t *testing.T) {
	_, out, _ := parse(t, "model_500.jsonl", nil, agentadaptor.ExitStatus{Code: 1})
	if out.Failure.Detail["status"] != 500 || !out.Failure.Retryable {
		t.Errorf("model failure detail = %+v", out.Failure)
	}
	_, out, _ = parse(t, "permission_denied.jsonl", nil, agentadaptor.ExitStatus{})
	if !strings.Contains(out.Failure.Message, "mcp__my-srv__echo") {
		t.Errorf("permission failure = %+v", out.Failure)
	}
	ps, _, _ := parse(t, "stream_tool.jsonl", nil, agentadaptor.ExitStatus{})
	k := adaptertest.Names(ps)
	if k[0] != "custom:"+claude.PayloadInit {
		t.Errorf("first payload %s, want %s", k[0], claude.PayloadInit)
	}
	init := ps[0].Raw
	servers, _ := init["mcp_servers"].([]any)
	if len(servers) != 1 {
		t.Errorf("init mcp_servers = %v", init["mcp_servers"])
	}
	// Streamed text arrives once (no duplicate from the assistant line).
	var text strings.Builder
	for _, p := range ps {
		if p.Kind == agentadaptor.KindTextDelta {
			text.WriteString(p.Delta)
		}
	}
	if text.String() != "Calling.Result was echo:hi" {
		t.Errorf("deltas = %q", text.String())
	}
	// Unknown line types are custom payloads, never errors.
	_, _, errs := parse(t, "malformed.jsonl", nil, agentadaptor.ExitStatus{})
	for _, e := range errs {
		if strings.Contains(e.Error(), "hook_event") {
			t.Errorf("unknown type reported as error: %v", e)
		}
	}
}

func TestFinishWithoutResult(t *testing.T) {
	tests := []struct {
		name string
		exit agentadaptor.ExitStatus
		want agentadaptor.FailureCode
	}{
		{"clean exit", agentadaptor.ExitStatus{Code: 0}, agentadaptor.FailureProtocol},
		{"crash", agentadaptor.ExitStatus{Code: 3}, ""}, // the SDK reports FailureExit
		{"killed", agentadaptor.ExitStatus{Code: -1, Signaled: true}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := claude.NewParser(nil)
			var got []agentadaptor.StreamPayload
			emit := func(sp agentadaptor.StreamPayload) { got = append(got, sp) }
			_ = p.ParseLine([]byte(`{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}}}`), emit)
			_ = p.ParseLine([]byte(`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}`), emit)
			_ = p.ParseLine([]byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"par"}}}`), emit)
			out := p.Finish(tc.exit, emit)
			if (out.Failure == nil) != (tc.want == "") || (out.Failure != nil && out.Failure.Code != tc.want) {
				t.Errorf("failure = %v, want %q", out.Failure, tc.want)
			}
			if last := got[len(got)-1]; last.Kind != agentadaptor.KindTextEnd || last.Text != "par" {
				t.Errorf("open text not closed at Finish: %+v", last)
			}
		})
	}
}

func prepare(t *testing.T, a *claude.Adapter, req *agentadaptor.AdapterRequest) *agentadaptor.Invocation {
	t.Helper()
	if req.TempDir == "" {
		req.TempDir = t.TempDir()
	}
	if req.WorkDir == "" {
		req.WorkDir = t.TempDir()
	}
	inv, err := a.Prepare(context.Background(), req)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return inv
}

func TestPrepareArgv(t *testing.T) {
	httpSrv := agentadaptor.MCPServerSpec{Key: "a2a-delegation", Transport: agentadaptor.MCPTransportHTTP, URL: "http://127.0.0.1:1/mcp", BearerTokenEnvVar: agentadaptor.EnvRunToken, ToolTimeout: 3 * time.Minute}
	stdioSrv := agentadaptor.MCPServerSpec{Key: "tools", Command: "/bin/tool", Args: []string{"-v"}, Env: map[string]string{"K": "${SECRET}"}}
	tests := []struct {
		name    string
		cfg     claude.Config
		req     agentadaptor.AdapterRequest
		has     []string
		hasNot  []string
		env     map[string]string
		noEnv   []string
		checkFn func(t *testing.T, inv *agentadaptor.Invocation)
	}{
		{
			name:   "plain",
			req:    agentadaptor.AdapterRequest{Prompt: "-hi"},
			has:    []string{"-p", "--output-format", "stream-json", "--verbose", "--strict-mcp-config", "--", "-hi"},
			hasNot: []string{"--include-partial-messages", "--allowedTools", "--resume", "--session-id"},
			noEnv:  []string{"MCP_TOOL_TIMEOUT", "HOME", "CLAUDE_CONFIG_DIR"},
		},
		{
			name: "streaming with servers and options",
			cfg:  claude.Config{Model: "cfg-model", AllowedTools: []string{"Read"}, MaxTurns: 4},
			req: agentadaptor.AdapterRequest{
				Prompt: "go", Streaming: true, Model: "run-model", MCPServers: []agentadaptor.MCPServerSpec{httpSrv, stdioSrv},
				Options: map[string]string{claude.OptionAppendSystemPrompt: "Be brief.", claude.OptionPermissionMode: "acceptEdits"},
			},
			has: []string{"--include-partial-messages", "--allowedTools=mcp__a2a-delegation,mcp__tools,Read", "--model=run-model",
				"--append-system-prompt=Be brief.", "--max-turns=4", "--permission-mode=acceptEdits"},
			env: map[string]string{"MCP_TOOL_TIMEOUT": "600000"}, // stdio server has no timeout: the 10m floor
		},
		{
			name: "tool timeout above the longest",
			req:  agentadaptor.AdapterRequest{Prompt: "go", MCPServers: []agentadaptor.MCPServerSpec{httpSrv}},
			env:  map[string]string{"MCP_TOOL_TIMEOUT": "203000"}, // 3m + 10% + 5s
		},
		{
			name:   "resume",
			req:    agentadaptor.AdapterRequest{Prompt: "again", SessionKey: "k", ResumeSessionID: "abc"},
			has:    []string{"--resume=abc"},
			hasNot: []string{"--session-id"},
		},
		{
			name: "new session",
			req:  agentadaptor.AdapterRequest{Prompt: "first", SessionKey: "k"},
			checkFn: func(t *testing.T, inv *agentadaptor.Invocation) {
				for _, a := range inv.Args {
					if strings.HasPrefix(a, "--session-id=") && len(a) == len("--session-id=")+36 {
						return
					}
				}
				t.Errorf("no --session-id=<uuid> in %q", inv.Args)
			},
		},
		{
			name:   "inherit user MCP",
			cfg:    claude.Config{InheritUserMCP: true},
			req:    agentadaptor.AdapterRequest{Prompt: "x"},
			hasNot: []string{"--strict-mcp-config"},
		},
		{
			name: "isolate",
			cfg:  claude.Config{Isolate: true},
			req:  agentadaptor.AdapterRequest{Prompt: "x"},
			checkFn: func(t *testing.T, inv *agentadaptor.Invocation) {
				home := inv.Env["HOME"]
				if home == "" || inv.Env["CLAUDE_CONFIG_DIR"] != filepath.Join(home, ".claude") {
					t.Errorf("isolated env = %v", inv.Env)
				}
				if fi, err := os.Stat(inv.Env["CLAUDE_CONFIG_DIR"]); err != nil || !fi.IsDir() {
					t.Errorf("config dir not created: %v", err)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := fakeAdapter(t, tc.cfg)
			inv := prepare(t, a, &tc.req)
			argv := map[string]bool{}
			for _, x := range inv.Args {
				argv[x] = true
			}
			for _, h := range tc.has {
				if !argv[h] {
					t.Errorf("argv lacks %q: %q", h, inv.Args)
				}
			}
			for _, h := range tc.hasNot {
				for _, x := range inv.Args {
					if strings.HasPrefix(x, h) {
						t.Errorf("argv has %q: %q", x, inv.Args)
					}
				}
			}
			if got := inv.Args[len(inv.Args)-2:]; got[0] != "--" || got[1] != tc.req.Prompt {
				t.Errorf("argv does not end with -- PROMPT: %q", inv.Args)
			}
			for k, v := range tc.env {
				if inv.Env[k] != v {
					t.Errorf("env %s = %q, want %q", k, inv.Env[k], v)
				}
			}
			for _, k := range tc.noEnv {
				if _, ok := inv.Env[k]; ok {
					t.Errorf("env has %s", k)
				}
			}
			if tc.checkFn != nil {
				tc.checkFn(t, inv)
			}
		})
	}
}

func TestMCPConfigFile(t *testing.T) {
	a := fakeAdapter(t, claude.Config{})
	req := &agentadaptor.AdapterRequest{Prompt: "x", MCPServers: []agentadaptor.MCPServerSpec{
		{Key: "a2a-delegation", Transport: agentadaptor.MCPTransportHTTP, URL: "http://127.0.0.1:1/mcp", BearerTokenEnvVar: "TOK"},
		{Key: "hdr", URL: "http://127.0.0.1:2/mcp", Headers: map[string]string{"X-Key": "${KEY}"}},
		{Key: "tools", Command: "/bin/tool", Args: []string{"-v"}, Env: map[string]string{"K": "${SECRET}"}},
	}}
	inv := prepare(t, a, req)
	var path string
	for _, x := range inv.Args {
		if v, ok := strings.CutPrefix(x, "--mcp-config="); ok {
			path = v
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("mcp config: %v (argv %q)", err, inv.Args)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"mcpServers": map[string]any{
		"a2a-delegation": map[string]any{"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": map[string]any{"Authorization": "Bearer ${TOK}"}},
		"hdr":            map[string]any{"type": "http", "url": "http://127.0.0.1:2/mcp", "headers": map[string]any{"X-Key": "${KEY}"}},
		"tools":          map[string]any{"type": "stdio", "command": "/bin/tool", "args": []any{"-v"}, "env": map[string]any{"K": "${SECRET}"}},
	}}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("mcp config:\n got %s\nwant %s", gb, wb)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mcp config mode %v", fi.Mode())
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name  string
		cfg   claude.Config
		opts  map[string]string
		field string
	}{
		{"negative max turns", claude.Config{MaxTurns: -1}, nil, "claude.Config.MaxTurns"},
		{"isolate dir alone", claude.Config{IsolateDir: "/tmp"}, nil, "claude.Config.IsolateDir"},
		{"missing binary", claude.Config{Binary: "/nonexistent/claude"}, nil, "claude.Config.Binary"},
		{"binary not on PATH", claude.Config{Binary: "no-such-claude-binary"}, nil, "claude.Config.Binary"},
		{"bad max turns option", claude.Config{Binary: "/bin/sh"}, map[string]string{claude.OptionMaxTurns: "many"}, "claude option max_turns"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := claude.New(tc.cfg)
			if err == nil {
				_, err = a.Prepare(context.Background(), &agentadaptor.AdapterRequest{TempDir: t.TempDir(), Options: tc.opts})
			}
			adaptertest.CheckConfigError(t, err, tc.field)
		})
	}
}

// TestRobustness drives the fake CLI through the SDK: bad output never
// panics and always ends in a typed outcome.
func TestRobustness(t *testing.T) {
	huge := filepath.Join(t.TempDir(), "huge.jsonl")
	text, _ := os.ReadFile(adaptertest.Fixture(t, "text.jsonl"))
	lines := bytes.SplitN(text, []byte("\n"), 2)
	big := `{"type":"assistant","message":{"id":"msg_big","content":[{"type":"text","text":"` + strings.Repeat("x", 256<<10) + `"}]}}`
	if err := os.WriteFile(huge, append(append(append(lines[0], '\n'), big+"\n"...), lines[1]...), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    []agentadaptor.RunOption
		status  agentadaptor.RunStatus
		failure agentadaptor.FailureCode
		diag    string
	}{
		{"malformed lines", []agentadaptor.RunOption{fakeEnv(t, "malformed.jsonl", "replay")}, agentadaptor.StatusCompleted, "", agentadaptor.DiagMalformedLine},
		{"huge line", []agentadaptor.RunOption{agentadaptor.WithEnv(fakemodel.FakeCLIEnvFor(huge, "replay")), agentadaptor.WithLineLimit(64 << 10)}, agentadaptor.StatusCompleted, "", agentadaptor.DiagLineTooLong},
		{"truncated stream", []agentadaptor.RunOption{fakeEnv(t, "text.jsonl", "partial")}, agentadaptor.StatusFailed, agentadaptor.FailureProtocol, agentadaptor.DiagMalformedLine},
		{"early exit non-zero", []agentadaptor.RunOption{fakeEnv(t, "text.jsonl", "partial", fakemodel.FakeCLIExit, "3", fakemodel.FakeCLIStderr, "boom")}, agentadaptor.StatusFailed, agentadaptor.FailureExit, ""},
		{"model error exit 1", []agentadaptor.RunOption{fakeEnv(t, "model_500.jsonl", "replay", fakemodel.FakeCLIExit, "1")}, agentadaptor.StatusFailed, agentadaptor.FailureModel, ""},
		{"non-zero exit after success", []agentadaptor.RunOption{fakeEnv(t, "text.jsonl", "replay", fakemodel.FakeCLIExit, "2")}, agentadaptor.StatusFailed, agentadaptor.FailureExit, ""},
	}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(fakeAdapter(t, claude.Config{})))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ps, res := adaptertest.RunToEnd(ctx, t, sdk, "hi", tc.opts...)
			if res.Status != tc.status {
				t.Fatalf("status %s (%v), want %s", res.Status, res.Failure, tc.status)
			}
			if tc.failure != "" && (res.Failure == nil || res.Failure.Code != tc.failure) {
				t.Errorf("failure %v, want %s", res.Failure, tc.failure)
			}
			if tc.diag != "" && !adaptertest.HasDiagnostic(ps, tc.diag) {
				t.Errorf("no %s diagnostic in %v", tc.diag, adaptertest.Names(ps))
			}
		})
	}
}
