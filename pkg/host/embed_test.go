package host_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/internal/testkit/hosttest"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/host"
)

// goHost builds a host from a Go Config whose parent plays steps, serves
// its handler on loopback and stops both at the end of the test.
func goHost(t *testing.T, cfg host.Config, steps string) (*host.Host, *httptest.Server) {
	t.Helper()
	parent, err := scripted.New(scripted.Config{ScenarioData: []byte(steps), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Parent = parent
	h, err := host.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := hosttest.Serve(t, h)
	return h, srv
}

// delegating is a parent scenario that delegates to the agent "research".
const delegating = "- call: {tool: delegate_to_agent, args: {agent: research, objective: \"How do penguins sleep?\"}}\n- say_result: \"Research says: {{.JSON.summary}}\"\n"

// researchAgent is an A2A agent (the research agent of delegating) whose
// tasks follow b.
func researchAgent(t *testing.T, b fakea2a.Behavior) (*fakea2a.Server, registry.RemoteAgentSpec) {
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: b})
	return remote, registry.RemoteAgentSpec{Key: "research", DisplayName: "Research Agent", Protocol: "a2a", AgentCardURL: remote.CardURL()}
}

// A host's own Authenticator is consulted for every request that carries
// no token of Config.Tokens: the principal it returns owns the runs it
// starts (another principal sees none of them), its refusal is a 401, a
// principal it should not have returned is refused, and the Host and
// cross-origin checks come first, whatever it would say.
func TestAuthenticatorIdentifiesRequests(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var calls atomic.Int32
	auth := host.AuthenticatorFunc(func(r *http.Request) (string, error) {
		calls.Add(1)
		if u := r.Header.Get("X-User"); u != "" {
			return u, nil
		}
		return "", errors.New("no X-User")
	})
	_, srv := goHost(t, host.Config{Authenticator: auth, Tokens: map[string]string{"carol": "carol-token-0123456789abcdef"}}, "- say: hello\n")
	run := func(runID string, hdr map[string]string) (int, string) {
		h := map[string]string{"Content-Type": "application/json"}
		maps.Copy(h, hdr)
		code, _, body := request(t, nil, "POST", srv.URL+"/agui", `{"threadId":"t","runId":"`+runID+`","messages":[{"id":"u1","role":"user","content":"hi"}]}`, h)
		return code, body
	}
	if code, _ := run("anon", nil); code != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d", code)
	}
	if code, body := run("a-1", map[string]string{"X-User": "alice@example.com"}); code != 200 || !strings.Contains(body, "RUN_FINISHED") {
		t.Fatalf("alice: %d %s", code, body)
	}
	// The run is alice's: her audit route answers, bob's and carol's do not
	// see it.
	for who, hdr := range map[string]map[string]string{
		"alice": {"X-User": "alice@example.com"}, "bob": {"X-User": "bob@example.com"}, "carol": {"Authorization": "Bearer carol-token-0123456789abcdef"},
	} {
		code, _, body := request(t, nil, "GET", srv.URL+"/agui/runs/a-1/delegations", "", hdr)
		if want := map[bool]int{true: 200, false: 404}[who == "alice"]; code != want {
			t.Errorf("%s reads alice's run: %d %s, want %d", who, code, body, want)
		}
	}
	// The tokens keep working beside it, without consulting it.
	before := calls.Load()
	if code, _ := run("c-1", map[string]string{"Authorization": "Bearer carol-token-0123456789abcdef"}); code != 200 {
		t.Fatalf("carol's token: %d", code)
	}
	if calls.Load() != before {
		t.Error("the authenticator was consulted for a request with a configured token")
	}
	// A principal with '/' would make run and session keys ambiguous.
	if code, _ := run("x-1", map[string]string{"X-User": "alice/admin"}); code != http.StatusUnauthorized {
		t.Errorf("an invalid principal: %d", code)
	}
	// Host allowlist and cross-origin checks come first.
	before = calls.Load()
	if code, _, _ := request(t, nil, "GET", srv.URL+"/agui/runs/a-1/delegations", "", map[string]string{"X-User": "alice@example.com", "Host": "evil.example"}); code != http.StatusForbidden {
		t.Errorf("a foreign Host: %d", code)
	}
	if code, _ := run("x-2", map[string]string{"X-User": "alice@example.com", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
		t.Errorf("a cross-site POST: %d", code)
	}
	if calls.Load() != before {
		t.Error("the authenticator was consulted for a request the guard refuses anyway")
	}
}

// orderedAudit records the order of what reaches the audit store and of
// its Close.
type orderedAudit struct {
	*audit.Memory
	mu     sync.Mutex
	steps  []string
	closed bool
	late   []string // calls after Close
}

// note records step; write marks a write to the store.
func (o *orderedAudit) note(step string, write bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.steps = append(o.steps, step)
	if o.closed && write {
		o.late = append(o.late, step)
	}
}

func (o *orderedAudit) Begin(rec audit.Record) { o.note("begin", true); o.Memory.Begin(rec) }
func (o *orderedAudit) End(rec audit.Record)   { o.note("end "+rec.Status, true); o.Memory.End(rec) }
func (o *orderedAudit) Event(id string, ev audit.Event) {
	o.note("event", true)
	o.Memory.Event(id, ev)
}

func (o *orderedAudit) Close() error {
	o.note("close", false)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	return nil
}

func (o *orderedAudit) snapshot() ([]string, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.steps...), append([]string(nil), o.late...)
}

// Shutdown stops in order with a delegation in flight: the run is
// cancelled and its stream ends with its terminal event, the remote task
// is cancelled and its final audit record written, and only then is the
// audit store closed, then the registered functions called. From then on
// a new run is refused with 503.
func TestShutdownStopsInOrder(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	remote, spec := researchAgent(t, fakea2a.Script(fakea2a.Working("reading"), fakea2a.Hang()))
	store := &orderedAudit{Memory: audit.NewMemory(audit.Options{})}
	h, srv := goHost(t, host.Config{Agents: []registry.RemoteAgentSpec{spec}, Audit: store}, delegating)
	h.RegisterOnShutdown(func(context.Context) { store.note("registered function", false) })
	resp := post(t, srv.URL+"/agui", input)
	defer resp.Body.Close()
	testenv.WaitUntil(t, "the delegation to start at the remote", func() bool { return len(remote.Tasks()) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// Everything the run's stream gets was written before Shutdown returned.
	rest, _ := io.ReadAll(resp.Body)
	if !bytes.Contains(rest, []byte(`"type":"RUN_ERROR"`)) {
		t.Fatalf("the stream did not end with its terminal event:\n%s", rest)
	}
	if len(remote.RequestsFor("CancelTask")) == 0 {
		t.Error("the remote task was not cancelled")
	}
	steps, late := store.snapshot()
	if len(late) != 0 {
		t.Fatalf("the audit store was written after it was closed: %v (all: %v)", late, steps)
	}
	order := []string{"begin", "end ", "close", "registered function"}
	at := 0
	for _, s := range steps {
		if at < len(order) && strings.HasPrefix(s, order[at]) {
			at++
		}
	}
	closes := 0
	for _, s := range steps {
		if s == "close" {
			closes++
		}
	}
	if at != len(order) || closes != 1 || steps[len(steps)-1] != "registered function" {
		t.Fatalf("shutdown steps %v, want %v in this order", steps, order)
	}
	// Stopped admitting: the handler still answers, but starts nothing.
	after := post(t, srv.URL+"/agui", strings.Replace(input, "run-client-1", "run-after", 1))
	body, _ := io.ReadAll(after.Body)
	after.Body.Close()
	if after.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"shutting_down"`) || after.Header.Get("Retry-After") == "" {
		t.Fatalf("a new run after Shutdown: %d %s", after.StatusCode, body)
	}
	if h.ActiveRuns() != 0 {
		t.Errorf("%d runs active after Shutdown", h.ActiveRuns())
	}
	// Shutdown again returns at once.
	if err := h.Shutdown(ctx); err != nil {
		t.Error(err)
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// One name per id: in the host's JSON log lines and in the audit records
// (GET .../delegations), run_id is the runId the client sent, and the SDK's
// id of the run is sdk_run_id, never run_id.
func TestLogsAndAuditNameTheClientsRunID(t *testing.T) {
	var logs syncBuffer
	echo := func(m *a2a.Message) fakea2a.Behavior {
		return fakea2a.Script(fakea2a.Completed("Penguins sleep standing up."))
	}
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Choose: echo})
	spec := registry.RemoteAgentSpec{Key: "research", DisplayName: "Research Agent", Protocol: "a2a", AgentCardURL: remote.CardURL()}
	_, srv := goHost(t, host.Config{Agents: []registry.RemoteAgentSpec{spec},
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, delegating)
	resp := post(t, srv.URL+"/agui", input) // runId run-client-1
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte("Research says: Penguins")) {
		t.Fatalf("the run:\n%s", body)
	}
	code, _, recs := request(t, nil, "GET", srv.URL+"/agui/runs/run-client-1/delegations", "", nil)
	var records []map[string]any
	if err := json.Unmarshal([]byte(recs), &records); code != 200 || err != nil || len(records) != 1 {
		t.Fatalf("GET delegations: %d %v %s", code, err, recs)
	}
	sdkRunID, _ := records[0]["sdk_run_id"].(string)
	if records[0]["run_id"] != "run-client-1" || !strings.HasPrefix(sdkRunID, "run-") || sdkRunID == "run-client-1" {
		t.Fatalf("audit record ids: run_id %v, sdk_run_id %v", records[0]["run_id"], records[0]["sdk_run_id"])
	}
	named := 0
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("a log line is not JSON: %q", sc.Text())
		}
		if id, ok := line["run_id"]; ok && id != "run-client-1" {
			t.Errorf("a log line names another id run_id: %s", sc.Text())
		}
		if line["sdk_run_id"] == sdkRunID && line["run_id"] == "run-client-1" {
			named++
		}
	}
	if named == 0 {
		t.Fatalf("no log line carries run_id and sdk_run_id of the run:\n%s", logs.String())
	}
}
