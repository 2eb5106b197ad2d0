package cursor_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
	"github.com/seed0634/agentadaptor/pkg/adapters/cursor"
)

func TestMain(m *testing.M) {
	fakemodel.MaybeRunFakeCLI()
	os.Exit(m.Run())
}

func fakeAdapter(t testing.TB, cfg cursor.Config) *cursor.Adapter {
	t.Helper()
	return adaptertest.WithTestBinary(t, func(bin string) (*cursor.Adapter, error) {
		cfg.Binary = bin
		return cursor.New(cfg)
	})
}

func fakeEnv(t testing.TB, name, mode string, extra ...string) agentadaptor.RunOption {
	return fakemodel.FakeCLIOption(adaptertest.Fixture(t, name), mode, extra...)
}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, adaptertest.Harness{
		Adapter: fakeAdapter(t, cursor.Config{}),
		Plain:   []agentadaptor.RunOption{fakeEnv(t, "text.jsonl", "replay"), agentadaptor.WithWorkDir(t.TempDir())},
		Slow:    []agentadaptor.RunOption{fakeEnv(t, "text.jsonl", "slow"), agentadaptor.WithWorkDir(t.TempDir())},
	})
}

func parse(t testing.TB, name string, streaming bool, exit int) ([]agentadaptor.StreamPayload, agentadaptor.Outcome, []error) {
	t.Helper()
	return adaptertest.Replay(t, name, cursor.NewParser(streaming), agentadaptor.ExitStatus{Code: exit})
}

func TestParserFixtures(t *testing.T) {
	tests := []struct {
		fixture   string
		streaming bool
		names     []string
		output    string
		failure   agentadaptor.FailureCode
		errs      int
		results   map[string]string // tool call id -> result
	}{
		{
			fixture: "text.jsonl",
			names: []string{"custom:cursor.init", "text.start", "text.delta", "text.end",
				"tool_call.start", "tool_call.args", "tool_call.end", "tool_call.result",
				"tool_call.start", "tool_call.args", "tool_call.end", "tool_call.result",
				"text.start", "text.delta", "text.end"},
			output:  "I'll read the README first.The README describes a demo project; I wrote a summary to summary.txt.",
			results: map[string]string{"toolu_vrtx_01NnjaR886UcE8whekg2MGJd": "# Project\nA demo.\n"},
		},
		{
			fixture: "stream.jsonl", streaming: true,
			names: []string{"custom:cursor.init", "reasoning.start", "reasoning.delta", "reasoning.delta", "reasoning.end",
				"text.start", "text.delta", "text.delta", "text.end",
				"tool_call.start", "tool_call.args", "tool_call.end", "tool_call.result",
				"tool_call.start", "tool_call.args", "tool_call.end", "tool_call.result",
				"text.start", "text.delta", "text.delta", "text.end"},
			output:  "Calling echo.The tool said echo:ping.",
			results: map[string]string{"call_mcp_1": "echo:ping", "call_sh_1": "exit status 1"},
		},
		{fixture: "error.jsonl", failure: agentadaptor.FailureAgent},
		{fixture: "malformed.jsonl", errs: 2, output: "ok"},
	}
	for _, tc := range tests {
		t.Run(strings.TrimSuffix(tc.fixture, ".jsonl"), func(t *testing.T) {
			ps, out, errs := parse(t, tc.fixture, tc.streaming, 0)
			if len(errs) != tc.errs {
				t.Errorf("errors %v, want %d", errs, tc.errs)
			}
			if tc.names != nil && strings.Join(adaptertest.Names(ps), " ") != strings.Join(tc.names, " ") {
				t.Errorf("payloads:\n got %v\nwant %v", adaptertest.Names(ps), tc.names)
			}
			if tc.output != "" && out.Output != tc.output {
				t.Errorf("output %q", out.Output)
			}
			if out.SessionID != "c6b62c6f-7ead-4fd6-9922-e952131177ff" {
				t.Errorf("session %q", out.SessionID)
			}
			if (tc.failure == "") != (out.Failure == nil) || (out.Failure != nil && out.Failure.Code != tc.failure) {
				t.Errorf("failure %v, want %q", out.Failure, tc.failure)
			}
			for id, want := range tc.results {
				found := false
				for _, p := range ps {
					if p.Kind == agentadaptor.KindToolCallResult && p.ToolCallID == id {
						found = p.ToolResult == want
					}
				}
				if !found {
					t.Errorf("no result %q for %s", want, id)
				}
			}
		})
	}
	ps, _, _ := parse(t, "stream.jsonl", true, 0)
	for _, p := range ps {
		if p.Kind == agentadaptor.KindToolCallEnd && p.ToolCallID == "call_mcp_1" && (p.ToolName != "echo" || p.ToolArgs != `{"text":"ping"}`) {
			t.Errorf("mcp tool call %+v", p)
		}
		if p.Kind == agentadaptor.KindToolCallResult && p.ToolCallID == "call_sh_1" && !p.ToolError {
			t.Errorf("failed shell call not an error: %+v", p)
		}
	}
}

func TestPrepareArgv(t *testing.T) {
	tests := []struct {
		name string
		cfg  cursor.Config
		req  agentadaptor.AdapterRequest
		want []string
	}{
		{"plain", cursor.Config{}, agentadaptor.AdapterRequest{Prompt: "hi"}, []string{"-p", "--output-format", "stream-json", "--force", "hi"}},
		{"streaming resume model", cursor.Config{Model: "gpt-5"}, agentadaptor.AdapterRequest{Prompt: "-x", Streaming: true, ResumeSessionID: "s1"},
			[]string{"-p", "--output-format", "stream-json", "--stream-partial-output", "--model", "gpt-5", "--resume", "s1", "--force", "--", "-x"}},
		{"no force, mcp", cursor.Config{NoForce: true}, agentadaptor.AdapterRequest{Prompt: "hi", MCPServers: []agentadaptor.MCPServerSpec{{Key: "k", URL: "http://127.0.0.1:1/mcp"}}},
			[]string{"-p", "--output-format", "stream-json", "--approve-mcps", "hi"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.WorkDir, tc.req.TempDir, tc.req.RunID = t.TempDir(), t.TempDir(), "run-1"
			inv, err := fakeAdapter(t, tc.cfg).Prepare(context.Background(), &tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if inv.Cleanup != nil {
				defer inv.Cleanup()
			}
			if strings.Join(inv.Args, " ") != strings.Join(tc.want, " ") {
				t.Errorf("argv %q, want %q", inv.Args, tc.want)
			}
		})
	}
}

const userMCP = `{
  "mcpServers": {"mine": {"command": "my-server"}, "shared": {"url": "http://user.example/mcp"}},
  "other": true
}
`

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMCPJSONLayering(t *testing.T) {
	specs := []agentadaptor.MCPServerSpec{
		{Key: "a2a-delegation", URL: "http://127.0.0.1:1/mcp", BearerTokenEnvVar: agentadaptor.EnvRunToken},
		{Key: "shared", Command: "/bin/tool", Env: map[string]string{"K": "${SECRET}"}},
	}
	for _, existed := range []bool{true, false} {
		name := "no user file"
		if existed {
			name = "user file"
		}
		t.Run(name, func(t *testing.T) {
			wd := t.TempDir()
			path := filepath.Join(wd, ".cursor", "mcp.json")
			if existed {
				_ = os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(userMCP), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			inv, err := fakeAdapter(t, cursor.Config{}).Prepare(context.Background(), &agentadaptor.AdapterRequest{RunID: "run-a", WorkDir: wd, TempDir: t.TempDir(), MCPServers: specs})
			if err != nil {
				t.Fatal(err)
			}
			doc := readJSON(t, path)
			servers := doc["mcpServers"].(map[string]any)
			deleg := servers["a2a-delegation"].(map[string]any)
			if deleg["headers"].(map[string]any)["Authorization"] != "Bearer ${env:AGENT_ADAPTOR_RUN_TOKEN}" {
				t.Errorf("delegation entry %v", deleg)
			}
			if servers["shared"].(map[string]any)["env"].(map[string]any)["K"] != "${env:SECRET}" {
				t.Errorf("run server does not override the user's same-named one: %v", servers["shared"])
			}
			if existed && (servers["mine"] == nil || doc["other"] != true) {
				t.Errorf("user entries lost: %v", doc)
			}
			// A second run in the same workspace is refused while the first owns it.
			if _, err := fakeAdapter(t, cursor.Config{}).Prepare(context.Background(), &agentadaptor.AdapterRequest{RunID: "run-b", WorkDir: wd, TempDir: t.TempDir(), MCPServers: specs}); err == nil {
				t.Errorf("concurrent run in the same workspace was allowed")
			}
			if err := inv.Cleanup(); err != nil {
				t.Fatal(err)
			}
			if existed {
				b, _ := os.ReadFile(path)
				if string(b) != userMCP {
					t.Errorf("user file not restored byte for byte:\n%s", b)
				}
				if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
					t.Errorf("mode %v", fi.Mode())
				}
			} else if _, err := os.Stat(filepath.Join(wd, ".cursor")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf(".cursor left behind: %v", err)
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			for _, e := range entries {
				if e.Name() != "mcp.json" {
					t.Errorf("leftover %s", e.Name())
				}
			}
		})
	}
}

// TestCrashRecovery simulates a run that died after installing its servers
// (no Cleanup): the next Prepare restores the user's file first.
func TestCrashRecovery(t *testing.T) {
	wd := t.TempDir()
	path := filepath.Join(wd, ".cursor", "mcp.json")
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(userMCP), 0o600); err != nil {
		t.Fatal(err)
	}
	specs := []agentadaptor.MCPServerSpec{{Key: "run-only", URL: "http://127.0.0.1:1/mcp"}}
	if _, err := fakeAdapter(t, cursor.Config{}).Prepare(context.Background(), &agentadaptor.AdapterRequest{RunID: "run-crashed", WorkDir: wd, TempDir: t.TempDir(), MCPServers: specs}); err != nil {
		t.Fatal(err)
	}
	// Pretend the crashed run belonged to a dead process.
	marker := path + cursor.MarkerSuffix
	var m map[string]any
	b, _ := os.ReadFile(marker)
	_ = json.Unmarshal(b, &m)
	m["pid"] = 999999999
	m["run_id"] = "run-of-dead-process"
	b, _ = json.Marshal(m)
	_ = os.WriteFile(marker, b, 0o600)
	cursor.ForgetActiveForTest(path)

	// A run without MCP servers still repairs the workspace.
	inv, err := fakeAdapter(t, cursor.Config{}).Prepare(context.Background(), &agentadaptor.AdapterRequest{RunID: "run-next", WorkDir: wd, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if inv.Cleanup != nil {
		_ = inv.Cleanup()
	}
	if b, _ := os.ReadFile(path); string(b) != userMCP {
		t.Errorf("not restored after the crash:\n%s", b)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("marker left: %v", err)
	}
}

func TestRobustness(t *testing.T) {
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(fakeAdapter(t, cursor.Config{})))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    []agentadaptor.RunOption
		status  agentadaptor.RunStatus
		failure agentadaptor.FailureCode
	}{
		{"malformed", []agentadaptor.RunOption{fakeEnv(t, "malformed.jsonl", "replay")}, agentadaptor.StatusCompleted, ""},
		{"error result", []agentadaptor.RunOption{fakeEnv(t, "error.jsonl", "replay")}, agentadaptor.StatusFailed, agentadaptor.FailureAgent},
		{"truncated", []agentadaptor.RunOption{fakeEnv(t, "text.jsonl", "partial")}, agentadaptor.StatusFailed, agentadaptor.FailureProtocol},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := sdk.Run(ctx, "hi", append(tc.opts, agentadaptor.WithWorkDir(t.TempDir()))...)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status || (tc.failure != "" && res.Failure.Code != tc.failure) {
				t.Errorf("status %s %v, want %s %s", res.Status, res.Failure, tc.status, tc.failure)
			}
		})
	}
}
