package codex_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
	"github.com/seed0634/agentadaptor/pkg/adapters/codex"
)

func TestMain(m *testing.M) {
	fakemodel.MaybeRunFakeCLI()
	os.Exit(m.Run())
}

func fakeAdapter(t testing.TB, cfg codex.Config) *codex.Adapter {
	t.Helper()
	return adaptertest.WithTestBinary(t, func(bin string) (*codex.Adapter, error) {
		cfg.Binary = bin
		return codex.New(cfg)
	})
}

func fakeEnv(t testing.TB, name, mode string, extra ...string) agentadaptor.RunOption {
	return fakemodel.FakeCLIOption(adaptertest.Fixture(t, name), mode, extra...)
}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, adaptertest.Harness{
		Adapter: fakeAdapter(t, codex.Config{}),
		Plain:   []agentadaptor.RunOption{fakeEnv(t, "tool.jsonl", "replay")},
		Slow:    []agentadaptor.RunOption{fakeEnv(t, "text.jsonl", "slow", fakemodel.FakeCLISlowLines, "2")},
	})
}

func parse(t testing.TB, name string, exit agentadaptor.ExitStatus) ([]agentadaptor.StreamPayload, agentadaptor.Outcome, []error) {
	t.Helper()
	return adaptertest.Replay(t, name, codex.NewParser(), exit)
}

func TestParserFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		exit    int
		names   []string
		output  string
		failure agentadaptor.FailureCode
		errs    int
		usage   agentadaptor.Usage
	}{
		{
			fixture: "text.jsonl", output: "Hello there, this is the fake model.",
			names: []string{"custom:codex.thread", "custom:codex.turn.started", "text.start", "text.delta", "text.end", "usage"},
			usage: agentadaptor.Usage{InputTokens: 10, OutputTokens: 5},
		},
		{
			fixture: "tool.jsonl", output: "Result was Output:\necho:hi",
			names: []string{"custom:codex.thread", "custom:codex.turn.started",
				"reasoning.start", "reasoning.delta", "reasoning.end",
				"text.start", "text.delta", "text.end",
				"custom:codex.mcp_tool_call", "tool_call.start", "tool_call.args", "tool_call.end", "tool_call.result",
				"text.start", "text.delta", "text.end", "usage"},
			usage: agentadaptor.Usage{InputTokens: 20, OutputTokens: 10},
		},
		{
			fixture: "items.jsonl", output: "Done looking around.",
			names: []string{"custom:codex.thread", "custom:codex.turn.started",
				"custom:codex.todo_list", "custom:codex.command_execution", "custom:codex.command_execution",
				"custom:codex.file_change", "custom:codex.web_search", "custom:codex.todo_list",
				"text.start", "text.delta", "text.delta", "text.delta", "text.end",
				"custom:codex.mcp_tool_call", "tool_call.start", "tool_call.args", "tool_call.end", "tool_call.result",
				"custom:codex.error", "custom:codex.brand_new_item", "usage"},
			usage: agentadaptor.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 40, CacheWriteTokens: 5, ReasoningTokens: 7},
		},
		{fixture: "model_500.jsonl", exit: 1, failure: agentadaptor.FailureModel},
		{fixture: "malformed.jsonl", errs: 4, output: "Still fine."},
		{fixture: "resume.jsonl", output: "Hello there, this is the fake model."},
	}
	for _, tc := range tests {
		t.Run(strings.TrimSuffix(tc.fixture, ".jsonl"), func(t *testing.T) {
			ps, out, errs := parse(t, tc.fixture, agentadaptor.ExitStatus{Code: tc.exit})
			if len(errs) != tc.errs {
				t.Errorf("errors %v, want %d", errs, tc.errs)
			}
			if tc.names != nil && strings.Join(adaptertest.Names(ps), " ") != strings.Join(tc.names, " ") {
				t.Errorf("payloads:\n got %v\nwant %v", adaptertest.Names(ps), tc.names)
			}
			if tc.output != "" && out.Output != tc.output {
				t.Errorf("output %q, want %q", out.Output, tc.output)
			}
			if !strings.HasPrefix(out.SessionID, "01a2365d-") {
				t.Errorf("session %q", out.SessionID)
			}
			if (tc.failure == "") != (out.Failure == nil) || (out.Failure != nil && out.Failure.Code != tc.failure) {
				t.Errorf("failure %v, want %q", out.Failure, tc.failure)
			}
			if tc.usage != (agentadaptor.Usage{}) && (out.Usage == nil || *out.Usage != tc.usage) {
				t.Errorf("usage %+v, want %+v", out.Usage, tc.usage)
			}
		})
	}
	ps, _, _ := parse(t, "items.jsonl", agentadaptor.ExitStatus{})
	for _, p := range ps {
		if p.Kind == agentadaptor.KindToolCallResult && (!p.ToolError || p.ToolResult != "tool call failed: timeout") {
			t.Errorf("failed tool call result %+v", p)
		}
		if p.Name == fakeServerPayload && p.Raw["server"] != "my-srv" {
			t.Errorf("mcp tool payload %+v", p.Raw)
		}
	}
}

const fakeServerPayload = codex.PayloadMCPToolCall

func TestClassify(t *testing.T) {
	tests := []struct {
		stderr string
		lines  []string
		exit   int
		code   agentadaptor.FailureCode
		status any
	}{
		{lines: []string{`{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: bad key"}}`}, exit: 1, code: agentadaptor.FailureModel, status: 401},
		{lines: []string{`{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 503"}}`}, exit: 1, code: agentadaptor.FailureModel, status: 503},
		{lines: []string{`{"type":"turn.failed","error":{"message":"stream disconnected before completion"}}`}, exit: 1, code: agentadaptor.FailureModel},
		{lines: []string{`{"type":"turn.failed","error":{"message":"sandbox denied the command"}}`}, exit: 1, code: agentadaptor.FailureAgent},
		{stderr: "ERROR: Failed to create session: required MCP servers failed to initialize: st: handshake\nmore", exit: 1, code: agentadaptor.FailureMCPServer},
		{exit: 0, code: agentadaptor.FailureProtocol},
		{exit: 2, code: ""},
	}
	for _, tc := range tests {
		p := codex.NewParser()
		for _, l := range tc.lines {
			if err := p.ParseLine([]byte(l), func(agentadaptor.StreamPayload) {}); err != nil {
				t.Fatal(err)
			}
		}
		out := p.Finish(agentadaptor.ExitStatus{Code: tc.exit, Stderr: []byte(tc.stderr)}, func(agentadaptor.StreamPayload) {})
		if (tc.code == "") != (out.Failure == nil) || (out.Failure != nil && out.Failure.Code != tc.code) {
			t.Errorf("%v %q: failure %v, want %q", tc.lines, tc.stderr, out.Failure, tc.code)
			continue
		}
		if tc.status != nil && out.Failure.Detail["status"] != tc.status {
			t.Errorf("%v: detail %v, want status %v", tc.lines, out.Failure.Detail, tc.status)
		}
	}
}

func TestPrepareArgv(t *testing.T) {
	httpSrv := agentadaptor.MCPServerSpec{Key: "a2a-delegation", URL: "http://127.0.0.1:1/mcp", BearerTokenEnvVar: agentadaptor.EnvRunToken, ToolTimeout: 3 * time.Minute, Required: true}
	hdrSrv := agentadaptor.MCPServerSpec{Key: "hdr", URL: "http://127.0.0.1:2/mcp", Headers: map[string]string{"X-Api-Key": "${API_KEY}", "X-Team": "blue", "Authorization": "Bearer ${AUTH}"}}
	stdioSrv := agentadaptor.MCPServerSpec{Key: "tools", Command: "/bin/tool", Args: []string{"-v"}, Env: map[string]string{"PLAIN": "1", "SAME": "${SAME}", "RENAMED": "x-${SECRET}"}}
	tests := []struct {
		name  string
		cfg   codex.Config
		req   agentadaptor.AdapterRequest
		want  []string // exact argv after the binary
		check func(t *testing.T, inv *agentadaptor.Invocation)
	}{
		{
			name: "plain",
			req:  agentadaptor.AdapterRequest{Prompt: "-hi"},
			want: []string{"exec", "--json", "--skip-git-repo-check", "--", "-hi"},
		},
		{
			name: "config and model",
			cfg:  codex.Config{Profile: "work", Provider: "local", Sandbox: "read-only", Ephemeral: true, ExtraConfig: []string{`model_providers.local={name="local", base_url="http://127.0.0.1:8000/v1", env_key="LOCAL_KEY"}`}},
			req:  agentadaptor.AdapterRequest{Prompt: "go", Model: "m1"},
			want: []string{"exec", "--profile", "work", "--json", "--skip-git-repo-check", "--ephemeral", "--model", "m1", "--sandbox", "read-only",
				"-c", `model_provider="local"`, "-c", `model_providers.local={name="local", base_url="http://127.0.0.1:8000/v1", env_key="LOCAL_KEY"}`, "--", "go"},
		},
		{
			name: "resume",
			cfg:  codex.Config{Sandbox: "read-only"},
			req:  agentadaptor.AdapterRequest{Prompt: "again", ResumeSessionID: "01a2-thread", Options: map[string]string{codex.OptionProfile: "p2"}},
			want: []string{"exec", "--profile", "p2", "resume", "--json", "--skip-git-repo-check", "01a2-thread", "--", "again"},
		},
		{
			name: "mcp servers",
			req:  agentadaptor.AdapterRequest{Prompt: "x", MCPServers: []agentadaptor.MCPServerSpec{httpSrv, hdrSrv, stdioSrv}},
			want: []string{"exec", "--json", "--skip-git-repo-check",
				"-c", `mcp_servers.a2a-delegation={url="http://127.0.0.1:1/mcp", bearer_token_env_var="AGENT_ADAPTOR_RUN_TOKEN", default_tools_approval_mode="approve", tool_timeout_sec=203, required=true}`,
				"-c", `mcp_servers.hdr={url="http://127.0.0.1:2/mcp", bearer_token_env_var="AUTH", http_headers={"X-Team"="blue"}, env_http_headers={"X-Api-Key"="API_KEY"}, default_tools_approval_mode="approve", tool_timeout_sec=600}`,
				"-c", `mcp_servers.tools={command="/bin/sh", args=["-c", "RENAMED='x-'\"$SECRET\"; export RENAMED; exec \"$0\" \"$@\"", "/bin/tool", "-v"], env={"PLAIN"="1"}, env_vars=["SAME", "SECRET"], default_tools_approval_mode="approve", tool_timeout_sec=600}`,
				"--", "x"},
		},
		{
			name: "isolate",
			cfg:  codex.Config{Isolate: true},
			req:  agentadaptor.AdapterRequest{Prompt: "x"},
			check: func(t *testing.T, inv *agentadaptor.Invocation) {
				if inv.Env["CODEX_HOME"] != filepath.Join(inv.Env["HOME"], "codex") {
					t.Errorf("env %v", inv.Env)
				}
				if fi, err := os.Stat(inv.Env["CODEX_HOME"]); err != nil || !fi.IsDir() {
					t.Errorf("CODEX_HOME not created: %v", err)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := fakeAdapter(t, tc.cfg)
			tc.req.TempDir = t.TempDir()
			inv, err := a.Prepare(context.Background(), &tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil && strings.Join(inv.Args, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("argv:\n got %q\nwant %q", inv.Args, tc.want)
			}
			if tc.check != nil {
				tc.check(t, inv)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name  string
		cfg   codex.Config
		specs []agentadaptor.MCPServerSpec
		field string
	}{
		{"extra config not key=value", codex.Config{ExtraConfig: []string{"oops"}}, nil, "codex.Config.ExtraConfig[0]"},
		{"isolate dir alone", codex.Config{IsolateDir: "/tmp"}, nil, "codex.Config.IsolateDir"},
		{"binary missing", codex.Config{Binary: "/nonexistent/codex"}, nil, "codex.Config.Binary"},
		{"templated header", codex.Config{Binary: "/bin/sh"}, []agentadaptor.MCPServerSpec{{Key: "h", URL: "http://127.0.0.1:1/", Headers: map[string]string{"X-K": "k=${K}"}}}, "MCPServerSpec[h].Headers"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := codex.New(tc.cfg)
			if err == nil {
				_, err = a.Prepare(context.Background(), &agentadaptor.AdapterRequest{TempDir: t.TempDir(), MCPServers: tc.specs})
			}
			adaptertest.CheckConfigError(t, err, tc.field)
		})
	}
}

func TestRobustness(t *testing.T) {
	huge := filepath.Join(t.TempDir(), "huge.jsonl")
	text, _ := os.ReadFile(adaptertest.Fixture(t, "text.jsonl"))
	big := `{"type":"item.completed","item":{"id":"x","type":"agent_message","text":"` + strings.Repeat("y", 200<<10) + `"}}` + "\n"
	if err := os.WriteFile(huge, append([]byte(big), text...), 0o600); err != nil {
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
		{"huge line", []agentadaptor.RunOption{agentadaptor.WithEnv(fakemodel.FakeCLIEnvFor(huge, "replay")), agentadaptor.WithLineLimit(32 << 10)}, agentadaptor.StatusCompleted, "", agentadaptor.DiagLineTooLong},
		{"truncated", []agentadaptor.RunOption{fakeEnv(t, "text.jsonl", "partial", fakemodel.FakeCLISlowLines, "2")}, agentadaptor.StatusFailed, agentadaptor.FailureProtocol, agentadaptor.DiagMalformedLine},
		{"early exit", []agentadaptor.RunOption{fakeEnv(t, "text.jsonl", "partial", fakemodel.FakeCLIExit, "1", fakemodel.FakeCLIStderr, "Error: boom")}, agentadaptor.StatusFailed, agentadaptor.FailureExit, ""},
		{"model error", []agentadaptor.RunOption{fakeEnv(t, "model_500.jsonl", "replay", fakemodel.FakeCLIExit, "1")}, agentadaptor.StatusFailed, agentadaptor.FailureModel, ""},
		{"required mcp failed", []agentadaptor.RunOption{fakeEnv(t, "text.jsonl", "partial", fakemodel.FakeCLISlowLines, "0", fakemodel.FakeCLIExit, "1",
			fakemodel.FakeCLIStderr, "Error: thread/start failed: required MCP servers failed to initialize: st: handshake failed")}, agentadaptor.StatusFailed, agentadaptor.FailureMCPServer, ""},
	}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(fakeAdapter(t, codex.Config{})))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ps, res := adaptertest.RunToEnd(ctx, t, sdk, "hi", tc.opts...)
			if res.Status != tc.status || (tc.failure != "" && (res.Failure == nil || res.Failure.Code != tc.failure)) {
				t.Fatalf("status %s failure %v, want %s %s", res.Status, res.Failure, tc.status, tc.failure)
			}
			if tc.diag != "" && !adaptertest.HasDiagnostic(ps, tc.diag) {
				t.Errorf("no %s diagnostic in %v", tc.diag, adaptertest.Names(ps))
			}
		})
	}
}
