package delegationtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
)

// JSRemoteScript is the @a2a-js/sdk remote agent of the client-side interop
// tests, relative to the repository root (see its header for behaviours).
const JSRemoteScript = "tests/node/a2a-js-remote.mjs"

// JSRemoteRecordings returns the directory of the recorded wire traffic of
// JSRemoteScript (card.json and card-poll.json, then one directory per
// scenario).
func JSRemoteRecordings() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "jsa2a")
}

// StartJSRemote runs JSRemoteScript (with args, e.g. "--record", dir) and
// returns its base URL; it is stopped when the test ends. Without node or
// @a2a-js/sdk the test is skipped, or fails under CI=true.
func StartJSRemote(t testing.TB, args ...string) string {
	t.Helper()
	root, err := testenv.NodePackages(testenv.A2AJSPackages()...)
	testenv.Require(t, "node and @a2a-js/sdk", err)
	cmd := exec.Command("node", append([]string{filepath.Join(root, JSRemoteScript)}, args...)...)
	cmd.Dir = root
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", JSRemoteScript, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = stdin.Close() // the script exits when stdin closes
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("%s stderr:\n%s", JSRemoteScript, stderr.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var ready struct {
		URL string `json:"url"`
	}
	select {
	case l := <-line:
		if err := json.Unmarshal([]byte(l), &ready); err != nil || ready.URL == "" {
			t.Fatalf("%s ready line %q: %v\n%s", JSRemoteScript, l, err, stderr.String())
		}
	case <-time.After(testenv.WaitTimeout):
		t.Fatalf("%s did not start\n%s", JSRemoteScript, stderr.String())
	}
	return ready.URL
}

// exchange is one recorded JSON-RPC request and its response.
type exchange struct {
	name        string
	method      string
	reqID       json.RawMessage
	taskID      string
	contextID   string
	text        string
	contentType string
	response    []byte
}

// ReplayedCall is one request the replay served, and how it differed from
// the recording.
type ReplayedCall struct {
	// Exchange names the recorded exchange ("ask/02-SendStreamingMessage").
	Exchange string
	// Method is the JSON-RPC method received.
	Method string
	// TaskID, ContextID and Text are the message's (a follow-up's task).
	TaskID, ContextID, Text string
	// Mismatch says how the request differed from the recorded one ("" if
	// it did not): another method, task or context.
	Mismatch string
}

// JSReplay serves the recorded wire traffic of the @a2a-js/sdk remote
// (JSRemoteRecordings) on loopback, byte for byte except for the card's
// base URL and each response's JSON-RPC id (the live request's). A request
// gets the next recorded response of its scenario: the one its message
// text names (JSScenarioOf), or, for a request about a task, the scenario
// whose recording holds that task. Closed when the test ends.
type JSReplay struct {
	srv      *httptest.Server
	card     []byte
	cardPoll []byte // the same agent, not streaming

	mu        sync.Mutex
	scenarios map[string][]*exchange
	next      map[string]int
	calls     []ReplayedCall
}

// ReplayJSRemote starts a JSReplay of the recordings.
func ReplayJSRemote(t testing.TB) *JSReplay {
	t.Helper()
	dir := JSRemoteRecordings()
	card, err := os.ReadFile(filepath.Join(dir, "card.json"))
	if err != nil {
		t.Fatalf("recordings of %s: %v (record them with AGENTADAPTOR_RECORD_JSA2A=1, see pkg/delegation/a2aremote)", JSRemoteScript, err)
	}
	cardPoll, err := os.ReadFile(filepath.Join(dir, "card-poll.json"))
	if err != nil {
		t.Fatalf("recordings of %s: %v", JSRemoteScript, err)
	}
	r := &JSReplay{card: card, cardPoll: cardPoll, scenarios: map[string][]*exchange{}, next: map[string]int{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			if r.scenarios[e.Name()], err = loadExchanges(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func loadExchanges(dir string) ([]*exchange, error) {
	reqs, err := filepath.Glob(filepath.Join(dir, "*.request.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(reqs)
	var out []*exchange
	for _, req := range reqs {
		stem := strings.TrimSuffix(req, ".request.json")
		x := &exchange{name: filepath.Base(dir) + "/" + filepath.Base(stem)}
		b, err := os.ReadFile(req)
		if err != nil {
			return nil, err
		}
		rpc, err := parseRPC(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", req, err)
		}
		x.method, x.reqID, x.taskID, x.contextID, x.text = rpc.Method, rpc.ID, rpc.taskID(), rpc.contextID(), rpc.text()
		for ext, ct := range map[string]string{".response.sse": "text/event-stream", ".response.json": "application/json"} {
			if resp, err := os.ReadFile(stem + ext); err == nil {
				x.response, x.contentType = resp, ct
			}
		}
		if x.response == nil {
			return nil, fmt.Errorf("%s: no recorded response", stem)
		}
		out = append(out, x)
	}
	return out, nil
}

type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ID      string `json:"id"`
		Message *struct {
			TaskID    string `json:"taskId"`
			ContextID string `json:"contextId"`
			Parts     []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"message"`
	} `json:"params"`
}

func parseRPC(b []byte) (*rpcRequest, error) {
	var r rpcRequest
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (r *rpcRequest) taskID() string {
	if r.Params.Message != nil {
		return r.Params.Message.TaskID
	}
	return r.Params.ID
}

func (r *rpcRequest) contextID() string {
	if r.Params.Message != nil {
		return r.Params.Message.ContextID
	}
	return ""
}

func (r *rpcRequest) text() string {
	var b strings.Builder
	if r.Params.Message != nil {
		for _, p := range r.Params.Message.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// CardURL is the replayed agent card's URL.
func (r *JSReplay) CardURL() string { return r.srv.URL + "/.well-known/agent-card.json" }

// PollCardURL is the replayed card of the same agent that does not stream.
func (r *JSReplay) PollCardURL() string { return r.srv.URL + "/poll/.well-known/agent-card.json" }

// JSScenarioOf names the scenario of JSRemoteScript a message text asks
// for, as the script itself (its scenarioOf) does: "[poll]", "[early]" or
// "[result]" in the text; else the first keyword the text contains: "ask"
// (ask), "fail" (failed), "cancel" (canceled); else "generic".
func JSScenarioOf(text string) string {
	for _, name := range []string{"poll", "early", "result"} {
		if strings.Contains(text, "["+name+"]") {
			return name
		}
	}
	for _, k := range []struct{ keyword, scenario string }{{"ask", "ask"}, {"fail", "failed"}, {"cancel", "canceled"}} {
		if strings.Contains(text, k.keyword) {
			return k.scenario
		}
	}
	return "generic"
}

// Calls returns the requests served so far, in order.
func (r *JSReplay) Calls() []ReplayedCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// Recorded returns the recorded exchange names of scenario, in order.
func (r *JSReplay) Recorded(scenario string) []string {
	var out []string
	for _, x := range r.scenarios[scenario] {
		out = append(out, x.name)
	}
	return out
}

func (r *JSReplay) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodGet && (req.URL.Path == "/.well-known/agent-card.json" || req.URL.Path == "/poll/.well-known/agent-card.json") {
		card := r.card
		if strings.HasPrefix(req.URL.Path, "/poll/") {
			card = r.cardPoll
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(bytes.ReplaceAll(card, []byte("{{BASE}}"), []byte(r.srv.URL)))
		return
	}
	if req.Method != http.MethodPost || req.URL.Path != "/jsonrpc" {
		http.NotFound(w, req)
		return
	}
	b, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	rpc, err := parseRPC(b)
	if err != nil {
		http.Error(w, "not JSON-RPC", http.StatusBadRequest)
		return
	}
	call := ReplayedCall{Method: rpc.Method, TaskID: rpc.taskID(), ContextID: rpc.contextID(), Text: rpc.text()}
	x := r.take(rpc)
	if x == nil {
		call.Mismatch = "no recorded exchange left for this request"
		r.record(call)
		http.Error(w, call.Mismatch, http.StatusInternalServerError)
		return
	}
	call.Exchange = x.name
	switch {
	case x.method != rpc.Method:
		call.Mismatch = fmt.Sprintf("method %s, recorded %s", rpc.Method, x.method)
	case x.taskID != call.TaskID:
		call.Mismatch = fmt.Sprintf("task %q, recorded %q", call.TaskID, x.taskID)
	case x.contextID != "" && x.contextID != call.ContextID:
		call.Mismatch = fmt.Sprintf("context %q, recorded %q", call.ContextID, x.contextID)
	}
	r.record(call)
	w.Header().Set("Content-Type", x.contentType)
	if x.contentType == "text/event-stream" {
		w.Header().Set("Cache-Control", "no-cache")
	}
	w.WriteHeader(http.StatusOK)
	resp := x.response
	if len(x.reqID) > 0 && len(rpc.ID) > 0 {
		resp = bytes.ReplaceAll(resp, append([]byte(`"id":`), x.reqID...), append([]byte(`"id":`), rpc.ID...))
	}
	_, _ = w.Write(resp)
}

func (r *JSReplay) record(c ReplayedCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

// take returns the next recorded exchange for rpc's scenario.
func (r *JSReplay) take(rpc *rpcRequest) *exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	scenario := JSScenarioOf(rpc.text())
	if id := rpc.taskID(); id != "" {
		for name, xs := range r.scenarios {
			for _, x := range xs {
				if x.taskID == id || bytes.Contains(x.response, []byte(`"`+id+`"`)) {
					scenario = name
				}
			}
		}
	}
	xs, n := r.scenarios[scenario], r.next[scenario]
	if n >= len(xs) {
		return nil
	}
	r.next[scenario] = n + 1
	return xs[n]
}
