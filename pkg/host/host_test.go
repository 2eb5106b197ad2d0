package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/examples/streaming-chat-copilotkit/web"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/hostyaml"
	"github.com/seed0634/agentadaptor/internal/testkit/aguiverify"
	"github.com/seed0634/agentadaptor/internal/testkit/hosttest"
	"github.com/seed0634/agentadaptor/internal/testkit/ssetest"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	"github.com/seed0634/agentadaptor/pkg/host"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	scripted.MaybeRunAgent()
	os.Exit(m.Run())
}

func newHost(t *testing.T, cfg *hostconfig.Config) (*host.Host, *httptest.Server) {
	t.Helper()
	h, err := hostyaml.New(context.Background(), cfg, hostyaml.Options{StateDir: t.TempDir(), UI: web.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	srv := hosttest.Serve(t, h)
	return h, srv
}

// post starts a run as an AG-UI client does.
var post = ssetest.Post

const input = `{"threadId":"thread-1","runId":"run-client-1","messages":[{"id":"u1","role":"user","content":"hello"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`

func TestDemoHostStreamsAValidRun(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	_, srv := newHost(t, nil)
	resp := post(t, srv.URL+"/agui", input)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("POST /agui: %d %s", resp.StatusCode, body)
	}
	if err := aguiverify.VerifyReader(bytes.NewReader(body)); err != nil {
		t.Fatalf("invalid stream: %v\n%s", err, body)
	}
	if !bytes.Contains(body, []byte(`"runId":"run-client-1"`)) || !bytes.Contains(body, []byte("RUN_FINISHED")) {
		t.Fatalf("stream: %s", body)
	}
	// The demo delegates the user's words to its research agent over real
	// A2A: the nested subagent streams text and an artifact and finishes
	// before the parent sees the tool result, and the parent answers after it.
	// The parent's tool call and the subagent's start come over two channels
	// (the parent's stdout and its MCP request), so either may come first;
	// the mux pairs them whichever it is (docs/design.md#how-the-mux-orders-a-run).
	if !bytes.Contains(body, []byte(`\"objective\":\"hello\"`)) {
		t.Fatalf("the parent's tool call with the user's words is missing in:\n%s", body)
	}
	order := []string{`"name":"subagent.started"`, `"name":"subagent.text.delta"`, `"name":"subagent.artifact"`, `"name":"subagent.finished"`, `"type":"TOOL_CALL_RESULT"`, `"delta":"answered `, `"type":"RUN_FINISHED"`}
	at := 0
	for _, want := range order {
		i := bytes.Index(body[at:], []byte(want))
		if i < 0 {
			t.Fatalf("%s missing or out of order in:\n%s", want, body)
		}
		at += i
	}
	// Whichever came first, the subagent is nested under that tool call.
	call := regexp.MustCompile(`"toolCallId":"([^"]+)","toolCallName":"delegate_to_agent"`).FindSubmatch(body)
	if call == nil || !bytes.Contains(body, []byte(`"parentToolCallId":"`+string(call[1])+`"`)) {
		t.Fatalf("the subagent is not paired with the parent's delegate_to_agent call in:\n%s", body)
	}
	nodeValidate(t, body)
	hr, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health map[string]any
	_ = json.NewDecoder(hr.Body).Decode(&health)
	hr.Body.Close()
	if health["status"] != "ok" {
		t.Fatalf("healthz: %v", health)
	}
	// The whole stream is replayable by its runId; a complete one is a 204.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/agui/runs/run-client-1/events", nil)
	req.Header.Set("Last-Event-ID", "2")
	rr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	replay, _ := io.ReadAll(rr.Body)
	rr.Body.Close()
	if err := aguiverify.VerifyReader(bytes.NewReader(replay), aguiverify.AllowUnnumberedFrames()); err != nil || rr.StatusCode != 200 {
		t.Fatalf("replay %d: %v\n%s", rr.StatusCode, err, replay)
	}
}

func TestCancelEndpointStopsTheRun(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	scenario := filepath.Join(t.TempDir(), "slow.yaml")
	_ = os.WriteFile(scenario, []byte("- say: working on it\n- sleep: 1h\n"), 0o600)
	_, srv := newHost(t, &hostconfig.Config{Parent: hostconfig.Parent{Adapter: "scripted", Scenario: scenario}})
	resp := post(t, srv.URL+"/agui", input)
	defer resp.Body.Close()
	br := make([]byte, 1)
	if _, err := resp.Body.Read(br); err != nil {
		t.Fatal(err)
	}
	cr := post(t, srv.URL+"/agui/runs/run-client-1/cancel", "")
	cr.Body.Close()
	if cr.StatusCode/100 != 2 {
		t.Fatalf("cancel: %d", cr.StatusCode)
	}
	rest, _ := io.ReadAll(resp.Body)
	if !bytes.Contains(rest, []byte(`"code":"cancelled"`)) {
		t.Fatalf("stream after cancel: %s", rest)
	}
}

func TestShutdownCancelsActiveRuns(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	scenario := filepath.Join(t.TempDir(), "slow.yaml")
	_ = os.WriteFile(scenario, []byte("- say: working on it\n- sleep: 1h\n"), 0o600)
	h, err := hostyaml.New(context.Background(), &hostconfig.Config{Parent: hostconfig.Parent{Adapter: "scripted", Scenario: scenario}}, hostyaml.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, ln) }()
	resp := post(t, "http://"+ln.Addr().String()+"/agui", input)
	br := make([]byte, 1)
	if _, err := resp.Body.Read(br); err != nil {
		t.Fatal(err)
	}
	stop() // SIGINT/SIGTERM in the binary
	rest, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(rest, []byte("RUN_ERROR")) {
		t.Fatalf("the run's stream did not end with its terminal event at shutdown: %s", rest)
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestHTTPAgentAgainstServe runs @ag-ui/client's HttpAgent (a client nobody
// here wrote) against the host: the demo run with its nested subagent passes
// the client's own verification, and abortRun() ends the Go run (after the
// reconnect grace) with its child process gone.
func TestHTTPAgentAgainstServe(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	root, err := testenv.NodePackages(testenv.AGUIPackages()...)
	testenv.Require(t, "node and the @ag-ui packages", err)
	h, srv := newHost(t, &hostconfig.Config{ReconnectGrace: hostconfig.Duration(50 * time.Millisecond)})
	node := func(args ...string) []byte {
		cmd := exec.Command("node", append([]string{filepath.Join(root, "tests/node/httpagent-run.mjs"), srv.URL + "/agui"}, args...)...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("httpagent-run %v: %v\n%s", args, err, out)
		}
		return out
	}
	out := node("--run-id", "run-httpagent", "--expect", "RUN_FINISHED")
	if !bytes.Contains(out, []byte(`"ok":true`)) || !bytes.Contains(out, []byte("CUSTOM")) || !bytes.Contains(out, []byte("TOOL_CALL_RESULT")) {
		t.Fatalf("HttpAgent summary: %s", out)
	}
	node("--run-id", "run-abort", "--abort-after-event", "TOOL_CALL_START")
	testenv.WaitUntil(t, "the aborted run to be cancelled", func() bool { return h.ActiveRuns() == 0 })
}
