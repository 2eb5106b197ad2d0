package delegator_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// A remote that echoes a host secret into the question it parks on never
// gets it shown: not in the returned question, the error message telling
// the parent how to continue, the events, or the logs
// (docs/design.md#secrets).
func TestParkedQuestionIsScrubbed(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.InputRequired("Which key? I have "+dt.SecretToken+" already."))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("asker", srv, func(s *registry.RemoteAgentSpec) { s.Policy.InputRequired = registry.InputRequiredReturn })})
	rec := e.Record(t, "run-q")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-q", Agent: "asker", Objective: "x"})
	if res.Status != delegation.StatusInputRequired || res.Continue == nil || !strings.Contains(res.Question, "Which key?") {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	if !strings.Contains(res.Question, "[REDACTED]") {
		t.Errorf("question %q: the secret was not replaced", res.Question)
	}
	dt.NoSecret(t, "parked result", res)
	dt.NoSecret(t, "events", rec.WaitKind(t, delegation.DelegationInputRequired, ""))
	dt.NoSecret(t, "logs", e.Logs.String())
}

// jsonRPCAgent is an A2A agent whose every JSON-RPC call of a streaming
// method is answered by stream(id) and every other call by unary(method, id).
func jsonRPCAgent(t *testing.T, stream func(method string) []string, unary func(method string) string) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/agent-card.json" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"echo","description":"d","version":"1","supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}`, srv.URL+"/rpc")
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if frames := stream(req.Method); frames != nil {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, f := range frames {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,%s}\n\n", req.ID, f)
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,%s}`, req.ID, unary(req.Method))
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

// Log lines carrying a remote's error text scrub every secret the host
// knows, also one the failing agent's own client never had (here another
// agent's credential, echoed by a remote that saw it elsewhere): the
// recovery warning of a cut stream and the failure warning
// (docs/design.md#secrets: never in a log line).
func TestRemoteErrorTextInLogLinesIsScrubbed(t *testing.T) {
	dt.CheckLeaks(t)
	echo := "upstream said: Authorization: Bearer " + dt.SecretToken
	working := `"result":{"task":{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_WORKING"}}}`
	internal := fmt.Sprintf(`"error":{"code":-32603,"message":%q}`, echo)
	srv := jsonRPCAgent(t, func(method string) []string {
		switch method {
		case "SendStreamingMessage": // a cut the host recovers from
			return []string{working, internal}
		case "SubscribeToTask": // a failure it does not
			return []string{`"error":{"code":-32602,"message":` + fmt.Sprintf("%q", echo) + `}`}
		}
		return nil
	}, func(method string) string {
		if method == "CancelTask" {
			return `"result":{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_CANCELED"}}`
		}
		return internal
	})
	card := srv.URL + "/.well-known/agent-card.json"
	e := env.NewEnv(t, []registry.RemoteAgentSpec{
		{Key: "echo", Protocol: delegation.ProtocolA2A, AgentCardURL: card, Policy: registry.DefaultPolicy()},
		{Key: "keyed", Protocol: delegation.ProtocolA2A, AgentCardURL: card, AuthRef: "env:" + dt.SecretEnv, Policy: registry.DefaultPolicy()},
	})
	rec := e.Record(t, "run-l")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-l", Agent: "echo", Objective: "x"})
	if res.Status != delegation.StatusFailed {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	dt.CheckLifecycle(t, rec.WaitTerminals(t, 1))
	logs := e.Logs.String()
	for _, line := range []string{"delegation stream interrupted; recovering", "delegation failed"} {
		if !strings.Contains(logs, line) {
			t.Fatalf("no %q line: the scenario did not log what it guards\n%s", line, logs)
		}
	}
	if !strings.Contains(logs, "upstream said: Authorization: Bearer [REDACTED]") {
		t.Errorf("the remote's error text is not in the logs, scrubbed:\n%s", logs)
	}
	dt.NoSecret(t, "logs", logs)
	dt.NoSecret(t, "result", res)
}
