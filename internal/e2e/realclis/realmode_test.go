package realclis_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/hostyaml"
	"github.com/seed0634/agentadaptor/internal/testkit/aguiverify"
	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/internal/testkit/hosttest"
	"github.com/seed0634/agentadaptor/internal/testkit/realcli"
	"github.com/seed0634/agentadaptor/internal/testkit/ssetest"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	"github.com/seed0634/agentadaptor/pkg/adapters/claude"
	"github.com/seed0634/agentadaptor/pkg/host"
)

// What the scripted models say. The progress marker is remote progress the
// user must see live and the parent model must never see.
const (
	progressMarker = "PROGRESS-ONLY-MARKER"
	progressText   = progressMarker + " checking files..."
	codexVerdict   = "Reviewed the change: looks good, two nits."
	parentIntro    = "I'll ask the Codex reviewer."
	parentFinal    = "Codex finished the review. Its structured result: {{result}}"
	delegationTool = "mcp__a2a-delegation__delegate_to_agent"
	clientRunID    = "run-realmode-1"
	runInput       = `{"threadId":"thread-realmode-1","runId":"` + clientRunID + `","messages":[{"id":"u1","role":"user","content":"Please get the change reviewed by Codex."}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`
)

// TestClaudeDelegatesToCodexOverA2A is the product proof of the Claude ->
// Codex example (examples/streaming-chat-copilotkit/README.md): a real
// Claude Code parent behind the host's /agui endpoint calls
// delegate_to_agent; the host delegates over A2A to a real Codex served by a
// separate `agentadaptor a2a serve --adapter codex` process; the Codex run
// streams into the same AG-UI stream as a nested subagent before the tool
// result; Claude gets only the structured result and continues.
//
// Codex's progress here is a reasoning summary, which `a2a serve
// --expose-reasoning` publishes as a working status message: the A2A form
// of progress, which the delegation shows the user and keeps out of the tool
// result. (Assistant messages are different: see
// TestCodexIntermediateMessageReachesParentOnlyInResultMessages.)
func TestClaudeDelegatesToCodexOverA2A(t *testing.T) {
	r := runDelegation(t, codexRemote("--expose-reasoning"), []fakemodel.Turn{{Thinking: progressText, Text: codexVerdict}}, parentFinal)

	// Codex's progress and its verdict are live in the stream, inside the
	// subagent's lifetime, before the tool result.
	for _, want := range []string{progressMarker, codexVerdict} {
		if !strings.Contains(r.subText, want) {
			t.Errorf("the subagent events before the tool result lack %q; their text:\n%s", want, r.subText)
		}
	}
	if !strings.Contains(r.afterText, "Codex finished the review.") || !strings.Contains(r.afterText, codexVerdict) {
		t.Errorf("parent text after the tool result: %q", r.afterText)
	}

	// What Claude's model saw: the structured result, and never the remote
	// progress.
	for _, req := range r.parentRequests {
		if fakemodel.ContainsText(req, progressMarker) {
			t.Errorf("remote progress reached the parent model:\n%s", req.Body)
		}
	}
	if len(r.result.Messages) != 1 || r.result.Messages[0].Text != codexVerdict {
		t.Errorf("result messages %+v, want only the verdict", r.result.Messages)
	}
	r.checkAudit(t)
	r.shutdown(t)
}

// TestCodexProgressMessageNeverReachesParent: an intermediate Codex
// assistant message ("PROGRESS-ONLY-MARKER ...", then a tool call, then the
// verdict) is progress. It streams live to the user as subagent text before
// the tool result, and never reaches the parent model: not in the summary
// (the run's Output, the last message), not in the result's messages (only
// the final message), nowhere in any request the fake Anthropic server got.
func TestCodexProgressMessageNeverReachesParent(t *testing.T) {
	r := runDelegation(t, codexRemote(), []fakemodel.Turn{
		// A call of a tool Codex does not have: Codex answers it with an
		// error output and asks the model again, so the run has two messages.
		{Text: progressText, Tool: &fakemodel.ToolCall{Server: "absent", Tool: "noop"}},
		{Text: codexVerdict},
	}, "Codex finished the review.")

	for _, want := range []string{progressText, codexVerdict} {
		if !strings.Contains(r.subText, want) {
			t.Errorf("the subagent events before the tool result lack %q; their text:\n%s", want, r.subText)
		}
	}
	if r.afterText != "Codex finished the review." {
		t.Errorf("parent text after the tool result: %q", r.afterText)
	}
	if strings.Contains(r.result.Summary, progressMarker) {
		t.Errorf("the summary carries the intermediate message: %q", r.result.Summary)
	}
	if len(r.result.Messages) != 1 || r.result.Messages[0].Text != codexVerdict {
		t.Errorf("result messages %+v, want only the verdict", r.result.Messages)
	}
	for i, req := range r.parentRequests {
		if strings.Contains(string(req.Body), progressMarker) {
			t.Errorf("parent model request %d carries the remote's progress text:\n%s", i, req.Body)
		}
	}
	r.checkAudit(t)
	r.shutdown(t)
}

// TestExampleHostRealConfig keeps examples/streaming-chat-copilotkit/
// host.real.yaml loadable and in step with REALMODE.md: a Claude parent and
// the Codex reviewer at the card `a2a serve --addr 127.0.0.1:9001` serves.
func TestExampleHostRealConfig(t *testing.T) {
	repo, err := realcli.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := hostconfig.Load(filepath.Join(repo, "examples", "streaming-chat-copilotkit", "host.real.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Parent.Adapter != "claude" || cfg.Addr != "127.0.0.1:8080" {
		t.Errorf("parent %+v addr %q: want claude on 127.0.0.1:8080", cfg.Parent, cfg.Addr)
	}
	if len(cfg.Agents) != 1 {
		t.Fatalf("agents %+v, want the Codex reviewer only", cfg.Agents)
	}
	a := cfg.Agents[0]
	if a.Key != "codex" || a.DisplayName != "Codex reviewer" || a.Protocol != "a2a" ||
		a.AgentCardURL != "http://127.0.0.1:9001/.well-known/agent-card.json" {
		t.Errorf("agent %+v", a)
	}
	if a.Policy.MaxTimeout <= 0 || cfg.Parent.Timeout <= a.Policy.MaxTimeout {
		t.Errorf("parent timeout %v must exceed the delegation max_timeout %v",
			time.Duration(cfg.Parent.Timeout), time.Duration(a.Policy.MaxTimeout))
	}
}

// structuredResult is the part of the delegation tool result the tests read.
type structuredResult struct {
	DelegationID   string `json:"delegation_id"`
	Agent          string `json:"agent"`
	RemoteProtocol string `json:"remote_protocol"`
	RemoteTaskID   string `json:"remote_task_id"`
	Status         string `json:"status"`
	Summary        string `json:"summary"`
	Messages       []struct {
		Role string `json:"role"`
		Text string `json:"text"`
	} `json:"messages"`
}

// realRun is one completed chat run through the whole real-mode topology.
type realRun struct {
	h      *host.Host
	srv    *httptest.Server
	remote *a2aServer
	body   []byte
	// toolCallID is the parent's delegate_to_agent call.
	toolCallID string
	// subText is the text of the subagent events (deltas, texts, status
	// texts) from subagent.started to subagent.finished.
	subText string
	// afterText is the parent's text after the tool result.
	afterText string
	// parentRequests are the model requests Claude made.
	parentRequests []fakemodel.Request
	// result is the tool result as the parent model received it.
	result structuredResult
}

// remoteStarter starts the A2A remote (`agentadaptor a2a serve` named
// "Codex reviewer") whose agent answers from openai, with every process's
// HOME under root.
type remoteStarter func(t *testing.T, bin, root string, openai *fakemodel.OpenAI) *a2aServer

// codexRemote serves the real Codex with `a2a serve --adapter codex` and
// a2aArgs.
func codexRemote(a2aArgs ...string) remoteStarter {
	return func(t *testing.T, bin, root string, openai *fakemodel.OpenAI) *a2aServer {
		return startCodexA2A(t, bin, realcli.Require(t, realcli.Codex), root, openai, a2aArgs...)
	}
}

// runDelegation starts the fake models, the remote and the host with a
// Claude parent whose model calls delegate_to_agent{agent: codex} then says
// finalText, posts one chat run and checks what every real-mode run must
// show: a valid AG-UI stream, the tool call, the nested Codex subagent
// complete before the tool result, the run finished, the structured result
// in the parent model's context.
func runDelegation(t *testing.T, remote remoteStarter, codexTurns []fakemodel.Turn, finalText string) *realRun {
	t.Helper()
	claudeBin := realcli.Require(t, realcli.Claude)
	root := t.TempDir() // every process of the test has HOME under root
	bin := buildBinary(t)

	openai := fakemodel.NewOpenAI(codexTurns...)
	t.Cleanup(openai.Close)
	anthropic := fakemodel.NewAnthropic(
		fakemodel.Turn{Text: parentIntro, Tool: &fakemodel.ToolCall{Server: "a2a-delegation", Tool: "delegate_to_agent",
			Args: map[string]any{"agent": "codex", "objective": "Review the change"}}},
		fakemodel.Turn{Text: finalText},
	)
	t.Cleanup(anthropic.Close)
	// Registered first, so it runs after every other cleanup.
	t.Cleanup(func() {
		if left := waitNoProcesses(root, 15*time.Second); len(left) > 0 {
			t.Errorf("processes left behind: %v", left)
		}
	})

	r := &realRun{}
	r.remote = remote(t, bin, root, openai)
	r.h, r.srv = startHost(t, claudeBin, root, anthropic, r.remote.cardURL)

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	r.body = ssetest.PostAll(ctx, t, r.srv.URL+"/agui", runInput)
	body := r.body
	// REALMODE_DUMP_DIR=DIR keeps each test's SSE stream for inspection.
	if p := os.Getenv("REALMODE_DUMP_DIR"); p != "" {
		_ = os.WriteFile(filepath.Join(p, t.Name()+".sse"), body, 0o600)
	}

	// The stream is valid AG-UI for both schema generations.
	if err := aguiverify.VerifyReader(bytes.NewReader(body)); err != nil {
		t.Fatalf("invalid AG-UI stream: %v\n%s\n--- a2a serve:\n%s", err, body, r.remote.log.String())
	}
	nodeValidate(t, body)
	evs := decodeEvents(t, body)
	if last := evs[len(evs)-1]; last.Type != "RUN_FINISHED" {
		t.Fatalf("last event %s, want RUN_FINISHED in:\n%s\n--- a2a serve:\n%s", last.Type, body, r.remote.log.String())
	}

	// The parent called the delegation tool.
	start := find(evs, 0, func(e event) bool {
		return e.Type == "TOOL_CALL_START" && strings.HasSuffix(e.ToolCallName, "delegate_to_agent")
	})
	if start < 0 {
		t.Fatalf("no TOOL_CALL_START of delegate_to_agent in:\n%s\n--- a2a serve:\n%s", body, r.remote.log.String())
	}
	if got := evs[start].ToolCallName; got != delegationTool {
		t.Errorf("tool name %q, want %q", got, delegationTool)
	}
	r.toolCallID = evs[start].ToolCallID
	result := find(evs, start, func(e event) bool { return e.Type == "TOOL_CALL_RESULT" && e.ToolCallID == r.toolCallID })
	if result < 0 {
		t.Fatalf("no TOOL_CALL_RESULT for %s in:\n%s", r.toolCallID, body)
	}

	// The Codex run is a nested subagent of that call, complete before the
	// parent's tool result.
	isSub := func(name string) func(event) bool {
		return func(e event) bool {
			return e.Type == "CUSTOM" && e.Name == name && e.Value["agentKey"] == "codex" && e.Value["parentToolCallId"] == r.toolCallID
		}
	}
	started := find(evs, 0, isSub("subagent.started"))
	finished := find(evs, 0, isSub("subagent.finished"))
	if started < 0 || finished < 0 || started > finished || finished > result {
		t.Fatalf("subagent.started at %d, subagent.finished at %d, TOOL_CALL_RESULT at %d: want started < finished < result in:\n%s",
			started, finished, result, body)
	}
	delegationID := evs[started].Value["delegationId"]
	if got := evs[started].Value["protocol"]; got != "a2a" || evs[started].Value["agentName"] != "Codex reviewer" {
		t.Errorf("subagent.started %v: want protocol a2a, agentName Codex reviewer", evs[started].Value)
	}
	if evs[finished].Value["remoteTaskId"] == nil || evs[finished].Value["remoteContextId"] == nil {
		t.Errorf("subagent.finished without the remote task and context: %v", evs[finished].Value)
	}
	if n := count(evs, func(e event) bool { return e.Type == "CUSTOM" && e.Name == "subagent.finished" }); n != 1 {
		t.Errorf("%d subagent.finished events, want 1", n)
	}
	for _, e := range evs[started : finished+1] {
		if e.Type == "CUSTOM" && strings.HasPrefix(e.Name, "subagent.") && e.Value["delegationId"] == delegationID {
			for _, k := range []string{"delta", "text"} {
				if s, ok := e.Value[k].(string); ok {
					r.subText += s + "\n"
				}
			}
		}
	}
	// The parent continued after the result.
	for _, e := range evs[result:] {
		if e.Type == "TEXT_MESSAGE_CONTENT" {
			r.afterText += e.Delta
		}
	}

	// What Claude's model saw: the tool offered, then the structured result.
	r.parentRequests = fakemodel.ModelRequests(anthropic.Requests())
	if len(r.parentRequests) != 2 {
		t.Fatalf("the parent model got %d requests, want 2", len(r.parentRequests))
	}
	if !fakemodel.ContainsText(r.parentRequests[0], delegationTool) {
		t.Errorf("the first parent model request does not offer %s", delegationTool)
	}
	toolResult, ok := fakemodel.ToolResults(r.parentRequests[1])[r.toolCallID]
	if !ok {
		t.Fatalf("the second parent model request has no tool result for %s:\n%s", r.toolCallID, r.parentRequests[1].Body)
	}
	if err := json.Unmarshal([]byte(toolResult), &r.result); err != nil {
		t.Fatalf("the parent model's tool result is not the structured result: %v\n%q", err, toolResult)
	}
	res := r.result
	if res.DelegationID == "" || res.DelegationID != delegationID || res.Agent != "codex" || res.RemoteProtocol != "a2a" ||
		res.RemoteTaskID == "" || res.Status != "completed" || res.Summary != codexVerdict {
		t.Errorf("structured tool result %+v (stream delegation %v)", res, delegationID)
	}
	// Codex answered from its own (fake) model, once per scripted turn.
	if n := len(fakemodel.ModelRequests(openai.Requests())); n != len(codexTurns) {
		t.Errorf("the Codex model got %d requests, want %d", n, len(codexTurns))
	}
	return r
}

// checkAudit checks GET /agui/runs/{runId}/delegations: one record that
// keeps the remote identity.
func (r *realRun) checkAudit(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := audit(ctx, t, r.srv.URL)
	if len(recs) != 1 {
		t.Fatalf("audit records: %+v", recs)
	}
	rec := recs[0]
	if rec.Protocol != "a2a" || rec.AgentKey != "codex" || rec.Status != "completed" || rec.DelegationID != r.result.DelegationID ||
		rec.RemoteTaskID != r.result.RemoteTaskID || rec.ParentToolCallID != r.toolCallID || rec.Result == nil || rec.Result.RemoteProtocol != "a2a" {
		t.Errorf("audit record %+v (result %+v)", rec, rec.Result)
	}
}

// shutdown stops the host, then the A2A server with SIGINT, and checks that
// the server stopped cleanly. (Leftover processes are checked in cleanup.)
func (r *realRun) shutdown(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.h.Shutdown(ctx); err != nil {
		t.Errorf("host shutdown: %v", err)
	}
	if err := r.remote.stop(); err != nil {
		t.Errorf("a2a serve: %v\n%s", err, r.remote.log.String())
	}
	if !strings.Contains(r.remote.log.String(), "agentadaptor a2a serve: stopped") {
		t.Errorf("a2a serve did not stop cleanly:\n%s", r.remote.log.String())
	}
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	binDir    string // created and removed by TestMain
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "realmode-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// buildBinary builds cmd/agentadaptor once per test binary. It runs before
// any t.Setenv(HOME), so the Go build cache is the usual one.
func buildBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		repo, err := realcli.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		goBin, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("the go command is needed to build the binary: %w", err)
			return
		}
		bin := filepath.Join(binDir, "agentadaptor")
		cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/agentadaptor")
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/agentadaptor: %v\n%s", err, out)
			return
		}
		builtBin = bin
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// a2aServer is a running `agentadaptor a2a serve` subprocess.
type a2aServer struct {
	cmd     *exec.Cmd
	cardURL string
	log     *syncBuffer
	done    chan struct{}
	waitErr error
	once    sync.Once
	stopErr error
}

// writeCodexHome writes, under root, a Codex home whose config.toml selects
// the fake OpenAI provider, and returns HOME and CODEX_HOME.
func writeCodexHome(t *testing.T, root string, openai *fakemodel.OpenAI) (home, codexHome string) {
	t.Helper()
	home = filepath.Join(root, "codex-user")
	codexHome = filepath.Join(home, ".codex")
	for _, d := range []string{codexHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	catalog := filepath.Join(codexHome, "catalog.json")
	if err := fakemodel.WriteCodexModelCatalog(catalog); err != nil {
		t.Fatal(err)
	}
	// What a user would put in ~/.codex/config.toml for a self-hosted
	// provider. The --disable flags of the notes are [features] here.
	config := fmt.Sprintf(`model_provider = "fake"
model = %q
model_catalog_json = %q

[model_providers.fake]
name = "fake"
base_url = %q
wire_api = "responses"
env_key = "REALMODE_FAKE_OPENAI_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
`, fakemodel.FakeCodexModel, catalog, openai.URL+"/v1")
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, codexHome
}

// startCodexA2A writes a Codex home whose config.toml selects the fake
// OpenAI provider, then starts `agentadaptor a2a serve --adapter codex` on a
// free loopback port and waits for its agent card.
func startCodexA2A(t *testing.T, bin, codexBin, root string, openai *fakemodel.OpenAI, extraArgs ...string) *a2aServer {
	t.Helper()
	home, codexHome := writeCodexHome(t, root, openai)
	work := filepath.Join(root, "codex-work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	env := cleanEnv("HOME", "CODEX_HOME", "OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY")
	env = append(env, "HOME="+home, "CODEX_HOME="+codexHome, "REALMODE_FAKE_OPENAI_KEY=test-key")
	return startA2AServe(t, bin, work, env, append([]string{"--adapter", "codex", "--binary", codexBin}, extraArgs...))
}

// startA2AServe starts `agentadaptor a2a serve` with args, named "Codex
// reviewer", on a free loopback port, working in work with env, and waits
// for its agent card.
func startA2AServe(t *testing.T, bin, work string, env, args []string) *a2aServer {
	t.Helper()
	// Port 0: the server picks a free port and prints its card URL.
	s := &a2aServer{log: &syncBuffer{}, done: make(chan struct{})}
	args = append([]string{"a2a", "serve", "--addr", "127.0.0.1:0",
		"--name", "Codex reviewer", "--work-dir", work, "--timeout", "90s"}, args...)
	s.cmd = exec.Command(bin, args...)
	s.cmd.Dir = work
	s.cmd.Env = env
	s.cmd.Stdout = s.log
	s.cmd.Stderr = s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.waitErr = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Logf("a2a serve: %v", err)
		}
	})
	if err := waitCard(s); err != nil {
		t.Fatalf("agentadaptor a2a serve did not come up: %v\n%s", err, s.log.String())
	}
	return s
}

// cardLine is what a2a serve prints once it listens.
var cardLine = regexp.MustCompile(`agent card at (http://\S+)`)

// waitCard waits until the server prints its card URL (it listens by
// then) or exits, sets s.cardURL and checks the card it serves.
func waitCard(s *a2aServer) error {
	timeout := time.After(testenv.WaitTimeout)
	for {
		written := s.log.nextWrite()
		if m := cardLine.FindStringSubmatch(s.log.String()); m != nil {
			s.cardURL = m[1]
			break
		}
		select {
		case <-written:
		case <-s.done:
			return fmt.Errorf("a2a serve exited: %v", s.waitErr)
		case <-timeout:
			return fmt.Errorf("no agent card URL printed within %v", testenv.WaitTimeout)
		}
	}
	resp, err := http.Get(s.cardURL)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var card map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &card) != nil {
		return fmt.Errorf("agent card: status %d: %s", resp.StatusCode, b)
	}
	if card["name"] != "Codex reviewer" {
		return fmt.Errorf("agent card name %v, want Codex reviewer", card["name"])
	}
	return nil
}

// stop interrupts the server like Ctrl-C and waits for it (killing it after
// a generous bound). It reports a non-zero exit.
func (s *a2aServer) stop() error {
	s.once.Do(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-s.done:
			case <-time.After(20 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.done
				s.stopErr = errors.New("did not stop within 20s of SIGINT; killed")
				return
			}
		}
		s.stopErr = s.waitErr
	})
	return s.stopErr
}

// startHost starts the host in-process with a Claude parent (built as
// `agentadaptor serve` builds it) and the Codex agent in its registry.
// Claude inherits the process environment: t.Setenv points it at the fake
// Anthropic server with a throwaway profile.
func startHost(t *testing.T, claudeBin, root string, anthropic *fakemodel.Anthropic, cardURL string) (*host.Host, *httptest.Server) {
	t.Helper()
	home := filepath.Join(root, "claude-user")
	work := filepath.Join(root, "claude-work")
	for _, d := range []string{filepath.Join(home, ".claude"), work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range map[string]string{
		"HOME":               home,
		"CLAUDE_CONFIG_DIR":  filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL": anthropic.URL,
		"ANTHROPIC_API_KEY":  "test-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_TELEMETRY":                        "1",
		"CLAUDE_CODE_MAX_RETRIES":                  "0",
	} {
		t.Setenv(k, v)
	}
	for _, k := range []string{"ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"} {
		t.Setenv(k, "") // restored after the test
		_ = os.Unsetenv(k)
	}
	cfg := &hostconfig.Config{
		Parent: hostconfig.Parent{Adapter: "claude", Binary: claudeBin, WorkDir: work, Timeout: hostconfig.Duration(90 * time.Second)},
		Agents: []hostconfig.Agent{{Key: "codex", DisplayName: "Codex reviewer", Protocol: "a2a", AgentCardURL: cardURL,
			Description: "Reviews code changes."}},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("host log:\n%s", logs.String())
		}
	})
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h, err := hostyaml.New(context.Background(), cfg, hostyaml.Options{Logger: logger, StateDir: filepath.Join(root, "state"),
		AdapterFactory: func(p hostconfig.Parent) (agentadaptor.Adapter, error) {
			return claude.New(claude.Config{Binary: p.Binary}) // as cmd/agentadaptor does
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := hosttest.Serve(t, h)
	return h, srv
}

// auditRecord is the part of a delegation audit record the test checks.
type auditRecord struct {
	DelegationID     string `json:"delegation_id"`
	RunID            string `json:"run_id"`
	ParentToolCallID string `json:"parent_tool_call_id"`
	AgentKey         string `json:"agent_key"`
	Protocol         string `json:"protocol"`
	RemoteTaskID     string `json:"remote_task_id"`
	Status           string `json:"status"`
	Result           *struct {
		RemoteProtocol string `json:"remote_protocol"`
		Status         string `json:"status"`
	} `json:"result"`
}

func audit(ctx context.Context, t *testing.T, base string) []auditRecord {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/agui/runs/"+clientRunID+"/delegations", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var recs []auditRecord
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &recs) != nil {
		t.Fatalf("GET delegations: %d %s", resp.StatusCode, b)
	}
	return recs
}

// event is the part of an AG-UI event the test reads.
type event struct {
	Type         string         `json:"type"`
	Name         string         `json:"name"`
	Value        map[string]any `json:"value"`
	ToolCallID   string         `json:"toolCallId"`
	ToolCallName string         `json:"toolCallName"`
	Delta        string         `json:"delta"`
}

func decodeEvents(t *testing.T, body []byte) []event {
	t.Helper()
	frames, err := aguiverify.Frames(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]event, 0, len(frames))
	for _, f := range frames {
		var e event
		if err := json.Unmarshal(f.Data, &e); err != nil {
			t.Fatalf("frame at line %d: %v", f.Line, err)
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		t.Fatal("empty stream")
	}
	return out
}

// count returns how many events match ok.
func count(evs []event, ok func(event) bool) int {
	n := 0
	for _, e := range evs {
		if ok(e) {
			n++
		}
	}
	return n
}

// find returns the index of the first event at or after from matching ok, or -1.
func find(evs []event, from int, ok func(event) bool) int {
	for i := from; i < len(evs); i++ {
		if ok(evs[i]) {
			return i
		}
	}
	return -1
}

// nodeValidate checks the stream with the @ag-ui/core validator
// (tests/node/validate-agui.mjs), as pkg/host's tests do.
func nodeValidate(t *testing.T, stream []byte) {
	t.Helper()
	repo, err := testenv.NodePackages(testenv.AGUIPackages()...)
	if !testenv.Want(t, "node and the @ag-ui packages", err) {
		return
	}
	f := filepath.Join(t.TempDir(), "stream.sse")
	if err := os.WriteFile(f, stream, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(repo, "tests/node/validate-agui.mjs"), f)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("Node AG-UI validation failed: %v\n%s", err, out)
	}
}

// cleanEnv is the process environment without the named variables.
func cleanEnv(drop ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, d := range drop {
			if k == d {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// processesUnder returns the processes (other than this one) whose
// environment mentions root: every process this test started, and their
// children, have HOME below root.
func processesUnder(root string) map[int]string {
	out := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(root)) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out[pid] = strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")
	}
	return out
}

// waitNoProcesses polls until no process under root remains (a bound, not a
// timing assertion) and returns what is left.
func waitNoProcesses(root string, timeout time.Duration) map[int]string {
	var left map[int]string
	testenv.Poll(timeout, func() bool { left = processesUnder(root); return len(left) == 0 })
	return left
}

// syncBuffer is a bytes.Buffer safe for concurrent writers and readers,
// which can wait for the next write.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed by the next Write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// nextWrite returns a channel closed by the next Write.
func (s *syncBuffer) nextWrite() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = make(chan struct{})
	}
	return s.written
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
