package host_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/testkit/aguiverify"
	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
)

// Delegations to real, independent agents as remotes, offline
// (docs/design.md#testing): an AG-UI agent built with the official
// @ag-ui/encoder and @ag-ui/core packages, and Gemini CLI's A2A server
// (@google/gemini-cli-a2a-server) against a fake Gemini API. Each proves
// the delegation end to end through the host: nested under the parent's
// tool call, a valid AG-UI stream, the real answer in the tool result, and
// a cancel of the parent run that reaches the remote.

// nodeProcess is a Node program a test runs; lines are its stdout lines
// after the first (closed when it exits).
type nodeProcess struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *syncBuf
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startNode runs node with args in the repository root and env added, and
// waits until a stdout or stderr line matches ready (whose first submatch
// it returns). It is stopped (stdin closed, then killed) when the test
// ends. Without node or pkg it skips, or fails under CI=true.
func startNode(t *testing.T, pkgs []string, ready *regexp.Regexp, env []string, args ...string) (string, *nodeProcess) {
	t.Helper()
	root, err := testenv.NodePackages(pkgs...)
	testenv.Require(t, "node and "+strings.Join(pkgs, ", "), err)
	cmd := exec.Command("node", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &nodeProcess{cmd: cmd, lines: make(chan string, 64), stderr: &syncBuf{}}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(p.stderr, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 2)
	scan := func(r io.Reader, out chan<- string) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		matched := false
		for sc.Scan() {
			if m := ready.FindStringSubmatch(sc.Text()); m != nil && !matched {
				matched = true
				found <- m[1]
				continue
			}
			if out != nil && matched {
				select {
				case out <- sc.Text():
				default: // nobody reads them: never block the program's output
				}
			}
		}
		if out != nil {
			close(out)
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); scan(stdout, p.lines) }()
	go func() { defer wg.Done(); scan(pr, nil) }()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = pw.Close(); close(done) }()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		wg.Wait()
		if t.Failed() {
			t.Logf("%s stderr (tail):\n%s", args[0], tail(p.stderr.String(), 4000))
		}
	})
	select {
	case v := <-found:
		return v, p
	case <-done:
		t.Fatalf("%s exited before it was ready:\n%s", args[0], tail(p.stderr.String(), 4000))
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s not ready after 2 minutes:\n%s", args[0], tail(p.stderr.String(), 4000))
	}
	return "", nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// peerParent is the parent's scenario: it delegates the user's words to
// agent and answers with the tool result's field.
func peerParent(t *testing.T, agent, field string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "parent.yaml")
	body := fmt.Sprintf(`- say: "Asking %[1]s."
- call: {tool: delegate_to_agent, args: {agent: %[1]s, objective: "{{.Prompt}}"}}
- say_result: "%[1]s said: {{.JSON.%[2]s}}"
`, agent, field)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func chatInput(runID, text string) string {
	b, _ := json.Marshal(text)
	return `{"threadId":"thread-` + runID + `","runId":"` + runID + `","messages":[{"id":"u1","role":"user","content":` + string(b) + `}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`
}

// checkDelegationStream: a valid AG-UI stream (the Go verifier and both
// @ag-ui/core schema versions) in which the subagent is nested under the
// parent's delegate_to_agent call and ends before the tool result, which
// holds want (the remote's real answer).
func checkDelegationStream(t *testing.T, body []byte, want string) {
	t.Helper()
	if err := aguiverify.VerifyReader(bytes.NewReader(body)); err != nil {
		t.Fatalf("invalid stream: %v\n%s", err, body)
	}
	call := regexp.MustCompile(`"toolCallId":"([^"]+)","toolCallName":"delegate_to_agent"`).FindSubmatch(body)
	if call == nil || !bytes.Contains(body, []byte(`"parentToolCallId":"`+string(call[1])+`"`)) {
		t.Fatalf("the subagent is not nested under the delegate_to_agent call:\n%s", body)
	}
	at := 0
	for _, w := range []string{`"name":"subagent.started"`, `"name":"subagent.`, `"type":"TOOL_CALL_RESULT"`, want, `"type":"TEXT_MESSAGE_CONTENT"`, `"type":"RUN_FINISHED"`} {
		i := bytes.Index(body[at:], []byte(w))
		if i < 0 {
			t.Fatalf("%s missing or out of order:\n%s", w, body)
		}
		at += i
	}
	nodeValidate(t, body)
}

// readUntil reads the stream until it holds marker.
func readUntil(t *testing.T, r io.Reader, marker string) []byte {
	t.Helper()
	var buf []byte
	chunk := make([]byte, 4096)
	for !bytes.Contains(buf, []byte(marker)) {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if err != nil {
			t.Fatalf("stream ended before %q: %v\n%s", marker, err, buf)
		}
	}
	return buf
}

func TestDelegationToAnAGUIAgentOfTheOfficialPackages(t *testing.T) {
	endpoint, agent := startNode(t, testenv.ScriptPackages("agui-encoder-agent.mjs"), regexp.MustCompile(`"url":"([^"]+)"`), nil, "tests/node/agui-encoder-agent.mjs")
	_, srv := newHost(t, &hostconfig.Config{
		Parent: hostconfig.Parent{Adapter: "scripted", Scenario: peerParent(t, "encoder", "summary")},
		Agents: []hostconfig.Agent{{Key: "encoder", DisplayName: "Encoder agent", Protocol: "agui", EndpointURL: endpoint}},
	})

	t.Run("answer", func(t *testing.T) {
		resp := post(t, srv.URL+"/agui", chatInput("run-enc-1", "What is AG-UI"))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// The answer is the agent's RUN_FINISHED result, in the tool
		// result the parent read back.
		checkDelegationStream(t, body, "Encoder agent: What is AG-UI.")
		if !bytes.Contains(body, []byte(`"protocol":"agui"`)) || !bytes.Contains(body, []byte(`"name":"subagent.finished"`)) {
			t.Fatalf("no finished AG-UI subagent:\n%s", body)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		resp := post(t, srv.URL+"/agui", chatInput("run-enc-2", "[hang] Take your time"))
		defer resp.Body.Close()
		readUntil(t, resp.Body, `"delta":"Encoder `)
		cr := post(t, srv.URL+"/agui/runs/run-enc-2/cancel", "")
		cr.Body.Close()
		rest, _ := io.ReadAll(resp.Body)
		if !bytes.Contains(rest, []byte(`"name":"subagent.cancelled"`)) {
			t.Fatalf("after cancel: %s", rest)
		}
		// The cancel reached the agent: its request was aborted (earlier
		// lines are the runs that ended normally).
		deadline := time.After(testenv.WaitTimeout)
		for aborted := false; !aborted; {
			select {
			case line, ok := <-agent.lines:
				var ended struct {
					Aborted bool `json:"aborted"`
				}
				if !ok || json.Unmarshal([]byte(line), &ended) != nil {
					t.Fatalf("the agent's report %q", line)
				}
				aborted = ended.Aborted
			case <-deadline:
				t.Fatal("the agent never saw its run aborted")
			}
		}
		http.DefaultClient.CloseIdleConnections()
	})
}

// geminiAnswer is what the fake Gemini API answers.
const geminiAnswer = "Gemini here: offline and real."

func TestDelegationToGeminiCLIA2AServer(t *testing.T) {
	model := fakemodel.NewGemini(fakemodel.Turn{Text: geminiAnswer},
		fakemodel.Turn{Text: "never finished", Chunks: 2, Delay: time.Hour})
	t.Cleanup(model.Close)
	home, work := t.TempDir(), t.TempDir()
	card, _ := startNode(t, []string{"@google/gemini-cli-a2a-server"}, regexp.MustCompile(`Agent Card: (http://\S+)`),
		[]string{"HOME=" + home, "GEMINI_API_KEY=fake-key", "GOOGLE_GEMINI_BASE_URL=" + model.URL,
			"CODER_AGENT_WORKSPACE_PATH=" + work, "GEMINI_CLI_NO_RELAUNCH=true", "NO_COLOR=1"},
		"node_modules/@google/gemini-cli-a2a-server/dist/a2a-server.mjs")
	policy := hostconfig.Policy{InputRequired: "return"}
	_, srv := newHost(t, &hostconfig.Config{
		Parent: hostconfig.Parent{Adapter: "scripted", Scenario: peerParent(t, "gemini", "question")},
		Agents: []hostconfig.Agent{{Key: "gemini", DisplayName: "Gemini CLI", Protocol: "a2a", AgentCardURL: card, Policy: policy}},
	})

	t.Run("answer", func(t *testing.T) {
		resp := post(t, srv.URL+"/agui", chatInput("run-gem-1", "Say hello"))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// Gemini CLI's A2A server answers in working status messages and
		// ends every turn input-required: the answer goes back to the
		// parent as the remote's turn (input_required: return).
		checkDelegationStream(t, body, geminiAnswer)
		if got := fakemodel.GeminiStreams(model.Requests()); len(got) == 0 || !strings.Contains(string(got[0].Body), "Say hello") {
			t.Errorf("the fake Gemini API got %d streamed requests, want the task", len(got))
		}
	})

	t.Run("cancel", func(t *testing.T) {
		resp := post(t, srv.URL+"/agui", chatInput("run-gem-2", "Think for an hour"))
		defer resp.Body.Close()
		readUntil(t, resp.Body, `"name":"subagent.status"`)
		testenv.WaitUntil(t, "the model request of the remote task", func() bool { return len(fakemodel.GeminiStreams(model.Requests())) >= 2 })
		cr := post(t, srv.URL+"/agui/runs/run-gem-2/cancel", "")
		cr.Body.Close()
		rest, _ := io.ReadAll(resp.Body)
		if !bytes.Contains(rest, []byte(`"name":"subagent.cancelled"`)) {
			t.Fatalf("after cancel: %s", rest)
		}
		// The cancel cascaded: the delegator cancelled the remote task,
		// and Gemini CLI aborted its model request.
		testenv.WaitUntil(t, "Gemini CLI to abort its model request", func() bool { return model.Aborted() >= 1 })
		http.DefaultClient.CloseIdleConnections()
	})
}
