package delegator_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// hostileA2A serves an agent card and answers every JSON-RPC call with
// respond. It stops writing after 1 GiB, a guard for the test itself.
func hostileA2A(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, id json.RawMessage)) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/agent-card.json" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"hostile","description":"d","version":"1","supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}`, srv.URL+"/rpc")
			return
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		respond(w, r, req.ID)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

// rssBytes reads the process's resident set size.
func rssBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// A remote that streams a never-ending event (64 KiB data: lines and never
// the blank line that ends an event) fails the delegation with a typed
// error as soon as the event passes the host's bound, instead of growing
// the host's memory until the delegation times out.
func TestNeverEndingEventFailsTheDelegationNotTheHost(t *testing.T) {
	dt.CheckLeaks(t)
	line := "data: " + strings.Repeat("x", 64<<10) + "\n"
	var written atomic.Int64
	srv := hostileA2A(t, func(w http.ResponseWriter, r *http.Request, _ json.RawMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for r.Context().Err() == nil && written.Load() < 1<<30 {
			n, err := io.WriteString(w, line)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	spec := registry.RemoteAgentSpec{Key: "hostile", Protocol: delegation.ProtocolA2A, AgentCardURL: srv.URL + "/.well-known/agent-card.json", Policy: registry.DefaultPolicy()}
	e := env.NewEnv(t, []registry.RemoteAgentSpec{spec})
	before := rssBytes()
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if r := rssBytes(); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-h", Agent: "hostile", Objective: "x"})
	close(stop)
	<-sampled
	if res.Status != delegation.StatusFailed || res.Error == nil || res.Error.Code != delegation.CodeRemoteFailed || !strings.Contains(res.Error.Message, "oversized") {
		t.Fatalf("result %+v %+v", res, res.Error)
	}
	if grew := peak.Load() - before; grew > 400<<20 {
		t.Errorf("the host's RSS grew by %d MiB while the remote streamed %d MiB", grew>>20, written.Load()>>20)
	}
	if w := written.Load(); w > 256<<20 {
		t.Errorf("the host kept reading: %d MiB", w>>20)
	}
}

// A remote whose JSON answers are huge (a GetTask of a polled task) is
// bounded too: the delegation fails, it is not decoded whole.
func TestHugeJSONAnswerFailsTheDelegation(t *testing.T) {
	dt.CheckLeaks(t)
	srv := hostileA2A(t, func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"},"metadata":{"pad":%q}}}}`, id, strings.Repeat("x", 20<<20))
	})
	spec := registry.RemoteAgentSpec{Key: "hostile", Protocol: delegation.ProtocolA2A, AgentCardURL: srv.URL + "/.well-known/agent-card.json", Policy: registry.DefaultPolicy()}
	e := env.NewEnv(t, []registry.RemoteAgentSpec{spec})
	f := false
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-j", Agent: "hostile", Objective: "x", Constraints: registry.Constraints{Stream: &f}})
	if res.Error == nil || res.Error.Code != delegation.CodeRemoteFailed {
		t.Fatalf("result %+v %+v", res, res.Error)
	}
}

// A remote that puts the host's credential into the ids it chooses (task,
// context, message, artifact ids, artifact names) never gets it shown: not
// in the tool result, the events, the audit (memory, file, HTTP) or a log
// line.
func TestSecretsInRemoteChosenIDsAreScrubbedEverywhere(t *testing.T) {
	dt.CheckLeaks(t)
	sec := dt.SecretToken
	srv := hostileA2A(t, func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, result := range []string{
			fmt.Sprintf(`{"task":{"id":"task-%s","contextId":"ctx-%s","status":{"state":"TASK_STATE_WORKING"}}}`, sec, sec),
			fmt.Sprintf(`{"statusUpdate":{"taskId":"task-%s","contextId":"ctx-%s","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"msg-%s","role":"ROLE_AGENT","parts":[{"text":"busy"}]}}}}`, sec, sec, sec),
			fmt.Sprintf(`{"artifactUpdate":{"taskId":"task-%s","contextId":"ctx-%s","lastChunk":true,"artifact":{"artifactId":"art-%s","name":"notes-%s.md","parts":[{"text":"body"}]}}}`, sec, sec, sec, sec),
			fmt.Sprintf(`{"statusUpdate":{"taskId":"task-%s","contextId":"ctx-%s","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"m2","role":"ROLE_AGENT","parts":[{"text":"done"}]}}}}`, sec, sec),
		} {
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", id, result)
		}
	})
	spec := registry.RemoteAgentSpec{Key: "echo", Protocol: delegation.ProtocolA2A, AgentCardURL: srv.URL + "/.well-known/agent-card.json",
		AuthRef: "env:" + dt.SecretEnv, Policy: registry.DefaultPolicy(), InterfaceOrigins: nil}
	path := t.TempDir() + "/audit.jsonl"
	store, err := audit.OpenFile(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := env.NewEnv(t, []registry.RemoteAgentSpec{spec}, func(c *env.Config) { c.Audit = store })
	rec := e.Record(t, "run-ids")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-ids", Agent: "echo", Objective: "x"})
	if res.Status != delegation.StatusCompleted || res.RemoteTaskID == "" || !strings.Contains(res.RemoteTaskID, "[REDACTED]") {
		t.Fatalf("result %+v", res)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.NoSecret(t, "tool result", res)
	dt.NoSecret(t, "events", evs)
	dt.NoSecret(t, "audit", store.ListRun("run-ids"))
	b, _ := os.ReadFile(path)
	dt.NoSecret(t, "audit file", string(b))
	h := httptest.NewServer(audit.Handler(store))
	defer h.Close()
	resp, err := h.Client().Get(h.URL + "/agui/runs/run-ids/delegations")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	h.Client().CloseIdleConnections()
	dt.NoSecret(t, "GET /delegations", string(body))
	if !strings.Contains(e.Logs.String(), "delegation finished") {
		t.Fatalf("no finish log line: %s", e.Logs.String())
	}
	dt.NoSecret(t, "logs", e.Logs.String())
}

// The parent model never sees an endpoint: an unreachable or misconfigured
// agent fails with agent_unavailable and a message naming the key only.
func TestUnavailableAgentMessagesCarryNoURL(t *testing.T) {
	dt.CheckLeaks(t)
	for _, tc := range []struct {
		spec   registry.RemoteAgentSpec
		detail string // what the host log says instead
	}{
		{registry.RemoteAgentSpec{Key: "gone", Protocol: delegation.ProtocolA2A, AgentCardURL: "http://127.0.0.1:1/secret-path/.well-known/agent-card.json", Policy: registry.DefaultPolicy()}, "127.0.0.1:1"},
		{registry.RemoteAgentSpec{Key: "broken", Protocol: delegation.ProtocolA2A, AgentCardURL: "http://127.0.0.1:1/x", AuthRef: "env:AGENTADAPTOR_UNSET_TEST_VAR", Policy: registry.DefaultPolicy()}, "AGENTADAPTOR_UNSET_TEST_VAR"},
	} {
		spec := tc.spec
		e := env.NewEnv(t, []registry.RemoteAgentSpec{spec})
		res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-u", Agent: spec.Key, Objective: "x"})
		if res.Error == nil || res.Error.Code != delegation.CodeAgentUnavailable {
			t.Fatalf("%s: %+v", spec.Key, res)
		}
		b, _ := json.Marshal(res)
		if strings.Contains(string(b), "127.0.0.1") || strings.Contains(string(b), "secret-path") || strings.Contains(string(b), "AGENTADAPTOR_UNSET_TEST_VAR") {
			t.Errorf("%s: the tool result shows configuration: %s", spec.Key, b)
		}
		if !strings.Contains(e.Logs.String(), tc.detail) {
			t.Errorf("%s: the host log lacks the details: %s", spec.Key, e.Logs.String())
		}
	}
}
