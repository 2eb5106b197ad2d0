package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
	"go.uber.org/goleak"
)

// Tests of the A2A protocol surface of the bridge (docs/design.md#event-mapping),
// driven by a2a-go's own client and by raw HTTP where the wire matters.

const askScenario = "- say: Let me check the calendar.\n- ask: Which city should I book?\n- say: Booked it, thanks.\n"

// headerTransport adds fixed headers to every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// goClient is an a2a-go client of one of env's interfaces (binding and
// protocol version), sending headers with every request.
func goClient(t *testing.T, env *bridgeEnv, binding a2a.TransportProtocol, version a2a.ProtocolVersion, headers map[string]string) *a2aclient.Client {
	t.Helper()
	hc := &http.Client{Transport: headerTransport(headers)}
	path := a2abridge.PathJSONRPC
	if binding == a2a.TransportProtocolHTTPJSON {
		path = a2abridge.PathREST
	}
	iface := &a2a.AgentInterface{URL: env.srv.URL + path, ProtocolBinding: binding, ProtocolVersion: version}
	c, err := a2aclient.NewFromEndpoints(context.Background(), []*a2a.AgentInterface{iface},
		a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}),
		a2av0.WithRESTTransport(a2av0.RESTTransportConfig{Client: hc}))
	if err != nil {
		t.Fatalf("a2a-go client for %s %s: %v", binding, version, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

func textMessage(text string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))}
}

func followUp(task *a2a.Task, text string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart(text))}
}

// collect reads a stream to its end.
func collect(seq iter.Seq2[a2a.Event, error]) ([]a2a.Event, error) {
	var out []a2a.Event
	for ev, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

func stateOf(ev a2a.Event) (a2a.TaskState, bool) {
	switch v := ev.(type) {
	case *a2a.Task:
		return v.Status.State, true
	case *a2a.TaskStatusUpdateEvent:
		return v.Status.State, true
	}
	return "", false
}

func statesOf(evs []a2a.Event) []a2a.TaskState {
	var out []a2a.TaskState
	for _, ev := range evs {
		if st, ok := stateOf(ev); ok {
			out = append(out, st)
		}
	}
	return out
}

func lastState(evs []a2a.Event) a2a.TaskState {
	s := statesOf(evs)
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

func assistantText(evs []a2a.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok && a.Artifact.Name == a2abridge.ArtifactAssistantOutput {
			for _, p := range a.Artifact.Parts {
				b.WriteString(p.Text())
			}
		}
	}
	return b.String()
}

// firstTurn sends text as a new task over c's streaming call and returns
// the task as stored when the stream ended.
func firstTurn(t *testing.T, c *a2aclient.Client, text string, want a2a.TaskState) *a2a.Task {
	t.Helper()
	ctx := context.Background()
	evs, err := collect(c.SendStreamingMessage(ctx, textMessage(text)))
	if err != nil {
		t.Fatalf("SendStreamingMessage: %v", err)
	}
	if got := lastState(evs); got != want {
		t.Fatalf("first turn ended %s (states %v), want %s", got, statesOf(evs), want)
	}
	task, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: evs[0].TaskInfo().TaskID})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// raw posts body to url and returns the status, headers and body.
func raw(t *testing.T, method, url string, headers map[string]string, body string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// rpcError is a JSON-RPC response's error, or nil.
type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decodeRPC(t *testing.T, b []byte) rpcResponse {
	t.Helper()
	var r rpcResponse
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("not a JSON-RPC response: %v: %s", err, b)
	}
	return r
}

// restError is the google.rpc.Status body of an HTTP+JSON error.
type restError struct {
	Error struct {
		Code    int    `json:"code"`
		Status  string `json:"status"`
		Message string `json:"message"`
		Details []struct {
			Reason string `json:"reason"`
		} `json:"details"`
	} `json:"error"`
}

func decodeREST(t *testing.T, b []byte) restError {
	t.Helper()
	var r restError
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("not an HTTP+JSON error: %v: %s", err, b)
	}
	return r
}

func (r restError) reason() string {
	for _, d := range r.Error.Details {
		if d.Reason != "" {
			return d.Reason
		}
	}
	return ""
}

func rpcBody(method string, params string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + params + `}`
}

func TestCardDocument(t *testing.T) {
	env := startBridge(t, "- say: hi\n", a2abridge.Exposure{})
	status, h, body := raw(t, "GET", env.cardURL(), nil, "")
	if status != 200 || h.Get("ETag") == "" || !strings.Contains(h.Get("Cache-Control"), "max-age=") || h.Get("Last-Modified") == "" {
		t.Fatalf("card: %d %v", status, h)
	}
	if st, _, _ := raw(t, "GET", env.cardURL(), map[string]string{"If-None-Match": h.Get("ETag")}, ""); st != http.StatusNotModified {
		t.Errorf("conditional GET with the ETag: %d, want 304", st)
	}
	if st, _, legacy := raw(t, "GET", env.srv.URL+a2abridge.PathLegacyAgentCard, nil, ""); st != 200 || string(legacy) != string(body) {
		t.Errorf("%s: %d, same document %v", a2abridge.PathLegacyAgentCard, st, string(legacy) == string(body))
	}
	// The Host header never reaches the card: its URLs come from BaseURL.
	if _, _, other := raw(t, "GET", env.cardURL(), map[string]string{"Host": "evil.example"}, ""); string(other) != string(body) {
		t.Errorf("the card changed with the Host header:\n%s\n%s", body, other)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	// The 0.3 view of the same card (a2a-go's compatibility parser).
	if doc["url"] != env.srv.URL+a2abridge.PathJSONRPC || doc["protocolVersion"] != "0.3" || doc["preferredTransport"] != "JSONRPC" {
		t.Errorf("0.3 fields: url %v protocolVersion %v preferredTransport %v", doc["url"], doc["protocolVersion"], doc["preferredTransport"])
	}
	v03, err := a2av0.NewAgentCardParser()(body)
	if err != nil || len(v03.SupportedInterfaces) != 4 {
		t.Fatalf("0.3 parser: %v %+v", err, v03)
	}
	var v1 a2a.AgentCard
	if err := json.Unmarshal(body, &v1); err != nil || len(v1.SupportedInterfaces) != 4 {
		t.Fatalf("1.0 parser: %v %+v", err, v1)
	}
	for _, in := range v1.SupportedInterfaces {
		if !strings.HasPrefix(in.URL, env.srv.URL+"/") {
			t.Errorf("interface URL %s is not under the base URL %s", in.URL, env.srv.URL)
		}
	}
	if _, ok := doc["securitySchemes"]; ok {
		t.Errorf("a server without BearerAuth advertises security schemes: %v", doc["securitySchemes"])
	}
}

func TestCardBearerScheme(t *testing.T) {
	env := startBridge(t, "- say: hi\n", a2abridge.Exposure{}, func(c *a2abridge.Config) { c.Card.BearerAuth = true })
	_, _, body := raw(t, "GET", env.cardURL(), nil, "")
	var v1 a2a.AgentCard
	if err := json.Unmarshal(body, &v1); err != nil {
		t.Fatalf("1.0 parser: %v", err)
	}
	scheme, ok := v1.SecuritySchemes[a2abridge.SecuritySchemeBearer].(a2a.HTTPAuthSecurityScheme)
	if !ok || !strings.EqualFold(scheme.Scheme, "bearer") {
		t.Errorf("1.0 securitySchemes %#v", v1.SecuritySchemes)
	}
	if len(v1.SecurityRequirements) != 1 || v1.SecurityRequirements[0][a2abridge.SecuritySchemeBearer] == nil {
		t.Errorf("1.0 securityRequirements %#v", v1.SecurityRequirements)
	}
	v03, err := a2av0.NewAgentCardParser()(body)
	if err != nil {
		t.Fatalf("0.3 parser: %v", err)
	}
	if _, ok := v03.SecuritySchemes[a2abridge.SecuritySchemeBearer].(a2a.HTTPAuthSecurityScheme); !ok || len(v03.SecurityRequirements) != 1 {
		t.Errorf("0.3 view: schemes %#v requirements %#v", v03.SecuritySchemes, v03.SecurityRequirements)
	}
	c := newClient(t, env, "")
	if len(c.Card().Ignored) != 0 {
		t.Errorf("our client ignored card fields: %v", c.Card().Ignored)
	}
}

// principalFromHeader is the test's authentication layer: the principal
// is the X-Test-Principal header (as the request's service parameter).
func principalFromHeader(ctx context.Context) string {
	cc, ok := a2asrv.CallContextFrom(ctx)
	if !ok {
		return ""
	}
	v, _ := cc.ServiceParams().Get("X-Test-Principal")
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func TestTasksBelongToTheirPrincipal(t *testing.T) {
	env := startBridge(t, askScenario, a2abridge.Exposure{}, func(c *a2abridge.Config) { c.Principal = principalFromHeader })
	for _, binding := range []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON} {
		t.Run(string(binding), func(t *testing.T) {
			ctx := context.Background()
			alice := goClient(t, env, binding, a2a.Version, map[string]string{"X-Test-Principal": "alice"})
			bob := goClient(t, env, binding, a2a.Version, map[string]string{"X-Test-Principal": "bob"})
			local := goClient(t, env, binding, a2a.Version, nil)
			task := firstTurn(t, alice, "book a trip", a2a.TaskStateInputRequired)

			list, err := alice.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: task.ContextID})
			if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
				t.Fatalf("alice lists %v, %v; want her task", list, err)
			}
			if list, err := bob.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: task.ContextID}); err != nil || len(list.Tasks) != 0 {
				t.Errorf("bob lists %v, %v; want none", list, err)
			}
			if list, err := local.ListTasks(ctx, &a2a.ListTasksRequest{}); err != nil || list.Tasks == nil {
				t.Errorf("without a principal ListTasks gives %v, %v; want the local user's (empty) list", list, err)
			}
			if _, err := bob.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("bob GetTask: %v, want TaskNotFound", err)
			}
			if _, err := bob.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("bob CancelTask: %v, want TaskNotFound", err)
			}
			if _, err := bob.SendMessage(ctx, followUp(task, "Rome")); err == nil {
				t.Error("bob answered alice's task")
			}
			// A refused stream is a plain error response (see
			// TestSubscribeAndSendRefuseFinishedTasks), which a2a-go's
			// JSON-RPC client reads as an empty stream.
			evs, err := collect(bob.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}))
			if len(evs) != 0 || (binding == a2a.TransportProtocolHTTPJSON && !errors.Is(err, a2a.ErrTaskNotFound)) {
				t.Errorf("bob SubscribeToTask: %d events, %v; want TaskNotFound", len(evs), err)
			}
			if got, err := alice.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID}); err != nil || got.Status.State != a2a.TaskStateCanceled {
				t.Errorf("alice CancelTask: %v %v", got, err)
			}
		})
	}
}

// subscribeAndAnswer subscribes to an input-required task, answers it once
// the first event arrived, and returns what the subscription delivered.
func subscribeAndAnswer(t *testing.T, c *a2aclient.Client, task *a2a.Task) []a2a.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	answered := make(chan error, 1)
	var evs []a2a.Event
	for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			t.Fatalf("subscription after %d events: %v", len(evs), err)
		}
		evs = append(evs, ev)
		if len(evs) == 1 {
			go func() {
				_, err := c.SendMessage(ctx, followUp(task, "Paris"))
				answered <- err
			}()
		}
	}
	if err := <-answered; err != nil {
		t.Fatalf("answer: %v", err)
	}
	return evs
}

func TestSubscribeToAnIdleTask(t *testing.T) {
	env := startBridge(t, askScenario, a2abridge.Exposure{})
	for _, w := range []struct {
		binding a2a.TransportProtocol
		version a2a.ProtocolVersion
	}{
		{a2a.TransportProtocolJSONRPC, a2a.Version}, {a2a.TransportProtocolHTTPJSON, a2a.Version},
		{a2a.TransportProtocolJSONRPC, a2av0.Version}, {a2a.TransportProtocolHTTPJSON, a2av0.Version},
	} {
		t.Run(string(w.binding)+"_"+string(w.version), func(t *testing.T) {
			c := goClient(t, env, w.binding, w.version, nil)
			task := firstTurn(t, c, "book a trip", a2a.TaskStateInputRequired)
			evs := subscribeAndAnswer(t, c, task)
			first, ok := evs[0].(*a2a.Task)
			if !ok || first.ID != task.ID || first.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("first event %#v, want the input-required Task", evs[0])
			}
			states := statesOf(evs)
			if !slices.Contains(states, a2a.TaskStateWorking) || states[len(states)-1] != a2a.TaskStateCompleted {
				t.Errorf("states %v: want the next turn through completed", states)
			}
			if txt := assistantText(evs); txt != "Booked it, thanks." {
				t.Errorf("the subscription saw the text %q", txt)
			}
		})
	}
}

func TestSubscribeToARunningTask(t *testing.T) {
	env := startBridge(t, "- say: working on it now\n- sleep: 1h\n", a2abridge.Exposure{})
	c := goClient(t, env, a2a.TransportProtocolJSONRPC, a2a.Version, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var id a2a.TaskID
	for ev, err := range c.SendStreamingMessage(ctx, textMessage("take your time")) {
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok && a.LastChunk {
			id = a.TaskID
			break
		}
	}
	cancelled := make(chan error, 1)
	var evs []a2a.Event
	for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
		if err != nil {
			t.Fatalf("subscription: %v", err)
		}
		evs = append(evs, ev)
		if len(evs) == 1 {
			go func() { _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: id}); cancelled <- err }()
		}
	}
	if err := <-cancelled; err != nil {
		t.Fatal(err)
	}
	if task, ok := evs[0].(*a2a.Task); !ok || task.Status.State != a2a.TaskStateWorking {
		t.Errorf("first event %#v, want the working Task", evs[0])
	}
	if got := lastState(evs); got != a2a.TaskStateCanceled {
		t.Errorf("subscription ended %s, want canceled", got)
	}
}

func TestSubscriberThatLeavesLeaksNothing(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	env := startBridge(t, askScenario, a2abridge.Exposure{})
	c := goClient(t, env, a2a.TransportProtocolHTTPJSON, a2a.Version, nil)
	task := firstTurn(t, c, "book a trip", a2a.TaskStateInputRequired)
	ctx, cancel := context.WithCancel(context.Background())
	for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ev.(*a2a.Task); !ok {
			t.Fatalf("first event %T", ev)
		}
		break // the subscriber leaves while the server waits for the next turn
	}
	cancel()
	// The task is still answerable, and its next turn reaches no one.
	res, err := c.SendMessage(context.Background(), followUp(task, "Paris"))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.(*a2a.Task).Status.State; got != a2a.TaskStateCompleted {
		t.Errorf("answered task %s", got)
	}
	_ = c.Destroy()
	env.close(t)
	goleak.VerifyNone(t, ignore)
}

func TestSubscribeAndSendRefuseFinishedTasks(t *testing.T) {
	env := startBridge(t, "- say: done\n", a2abridge.Exposure{})
	c := goClient(t, env, a2a.TransportProtocolJSONRPC, a2a.Version, nil)
	task := firstTurn(t, c, "go", a2a.TaskStateCompleted)
	v1 := map[string]string{"A2A-Version": "1.0"}
	rpcURL, restURL := env.srv.URL+a2abridge.PathJSONRPC, env.srv.URL+a2abridge.PathREST

	t.Run("JSON-RPC subscribe: a plain JSON-RPC error, not a stream", func(t *testing.T) {
		status, h, b := raw(t, "POST", rpcURL, v1, rpcBody("SubscribeToTask", `{"id":"`+string(task.ID)+`"}`))
		if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Fatalf("%d %s: %s", status, h.Get("Content-Type"), b)
		}
		if r := decodeRPC(t, b); r.Error == nil || r.Error.Code != -32004 {
			t.Errorf("error %+v, want UnsupportedOperation -32004", r.Error)
		}
		status, _, b = raw(t, "POST", rpcURL, v1, rpcBody("SubscribeToTask", `{"id":"no-such-task"}`))
		if r := decodeRPC(t, b); status != 200 || r.Error == nil || r.Error.Code != -32001 {
			t.Errorf("unknown task: %d %+v, want TaskNotFound -32001", status, r.Error)
		}
	})
	t.Run("REST subscribe: an HTTP error", func(t *testing.T) {
		status, h, b := raw(t, "POST", restURL+"/tasks/"+string(task.ID)+":subscribe", v1, "")
		if status != 400 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Fatalf("%d %s: %s", status, h.Get("Content-Type"), b)
		}
		if r := decodeREST(t, b); r.reason() != "UNSUPPORTED_OPERATION" {
			t.Errorf("reason %q: %s", r.reason(), b)
		}
		if status, _, _ := raw(t, "POST", restURL+"/tasks/no-such-task:subscribe", v1, ""); status != 404 {
			t.Errorf("unknown task: %d, want 404", status)
		}
		rc := goClient(t, env, a2a.TransportProtocolHTTPJSON, a2a.Version, nil)
		if _, err := collect(rc.SubscribeToTask(context.Background(), &a2a.SubscribeToTaskRequest{ID: task.ID})); !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Errorf("a2a-go REST client: %v, want UnsupportedOperation", err)
		}
	})
	t.Run("a message to a finished task", func(t *testing.T) {
		if _, err := c.SendMessage(context.Background(), followUp(task, "more")); !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Errorf("JSON-RPC SendMessage: %v, want UnsupportedOperation", err)
		}
		msg := `{"message":{"messageId":"m2","role":"ROLE_USER","taskId":"` + string(task.ID) + `","parts":[{"text":"more"}]}}`
		status, h, b := raw(t, "POST", restURL+"/message:stream", v1, msg)
		if status != 400 || strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") || decodeREST(t, b).reason() != "UNSUPPORTED_OPERATION" {
			t.Errorf("REST message:stream: %d %s %s", status, h.Get("Content-Type"), b)
		}
	})
}

func TestFollowUpTurnStreamStartsWithTheTask(t *testing.T) {
	env := startBridge(t, askScenario, a2abridge.Exposure{})
	c := goClient(t, env, a2a.TransportProtocolHTTPJSON, a2a.Version, nil)
	task := firstTurn(t, c, "book a trip", a2a.TaskStateInputRequired)
	evs, err := collect(c.SendStreamingMessage(context.Background(), followUp(task, "Paris")))
	if err != nil {
		t.Fatal(err)
	}
	first, ok := evs[0].(*a2a.Task)
	if !ok || first.ID != task.ID || first.Status.State != a2a.TaskStateSubmitted {
		t.Fatalf("first event of the follow-up %#v, want the submitted Task", evs[0])
	}
	if n := len(first.History); n == 0 || first.History[n-1].Parts[0].Text() != "Paris" {
		t.Errorf("the Task's history does not end with the answer: %+v", first.History)
	}
	if got := lastState(evs); got != a2a.TaskStateCompleted {
		t.Errorf("follow-up ended %s", got)
	}
}

func TestSendMessageHonoursHistoryLength(t *testing.T) {
	env := startBridge(t, askScenario, a2abridge.Exposure{})
	c := goClient(t, env, a2a.TransportProtocolJSONRPC, a2a.Version, nil)
	ctx := context.Background()
	zero, one := 0, 1
	req := textMessage("book a trip")
	req.Config = &a2a.SendMessageConfig{HistoryLength: &zero}
	res, err := c.SendMessage(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	if len(task.History) != 0 {
		t.Errorf("historyLength 0: %d messages", len(task.History))
	}
	req = followUp(task, "Paris")
	req.Config = &a2a.SendMessageConfig{HistoryLength: &one}
	if res, err = c.SendMessage(ctx, req); err != nil {
		t.Fatal(err)
	}
	if h := res.(*a2a.Task).History; len(h) != 1 {
		t.Errorf("historyLength 1: %d messages", len(h))
	}
	if full, _ := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}); len(full.History) < 2 {
		t.Errorf("the stored history was trimmed: %d messages", len(full.History))
	}
	// ProtoJSON field names are accepted too.
	_, _, b := raw(t, "POST", env.srv.URL+a2abridge.PathJSONRPC, map[string]string{"A2A-Version": "1.0"},
		rpcBody("GetTask", `{"id":"`+string(task.ID)+`","history_length":0}`))
	var got struct {
		Result a2a.Task `json:"result"`
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Result.ID != task.ID || len(got.Result.History) != 0 {
		t.Errorf("GetTask with history_length 0: %v %s", err, b)
	}
}

func TestVersionNegotiation(t *testing.T) {
	env := startBridge(t, "- say: done\n", a2abridge.Exposure{})
	rpcURL, restURL := env.srv.URL+a2abridge.PathJSONRPC, env.srv.URL+a2abridge.PathREST
	send1 := `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`
	send03 := `{"message":{"messageId":"m1","kind":"message","role":"user","parts":[{"kind":"text","text":"hi"}]}}`
	send03REST := `{"message":{"messageId":"m1","role":"ROLE_USER","content":[{"text":"hi"}]}}`

	for _, v := range []string{"99.0", "2.0", "0.2"} {
		_, _, b := raw(t, "POST", rpcURL, map[string]string{"A2A-Version": v}, rpcBody("SendMessage", send1))
		if r := decodeRPC(t, b); r.Error == nil || r.Error.Code != -32009 {
			t.Errorf("JSON-RPC with A2A-Version %s: %s, want VersionNotSupported -32009", v, b)
		}
		status, h, b := raw(t, "POST", rpcURL, map[string]string{"A2A-Version": v}, rpcBody("SendStreamingMessage", send1))
		if r := decodeRPC(t, b); status != 200 || h.Get("Content-Type") != "application/json; charset=utf-8" || r.Error == nil || r.Error.Code != -32009 {
			t.Errorf("JSON-RPC stream with A2A-Version %s: %d %s %s", v, status, h.Get("Content-Type"), b)
		}
		status, _, b = raw(t, "POST", restURL+"/message:send", map[string]string{"A2A-Version": v}, send1)
		if status != 400 || decodeREST(t, b).reason() != "VERSION_NOT_SUPPORTED" {
			t.Errorf("REST with A2A-Version %s: %d %s", v, status, b)
		}
	}
	for _, tt := range []struct {
		name, url, version, body string
		v03                      bool
	}{
		{"JSON-RPC 1.0", rpcURL, "1.0", rpcBody("SendMessage", send1), false},
		{"JSON-RPC 1.0 without the header", rpcURL, "", rpcBody("SendMessage", send1), false},
		{"JSON-RPC 1.0, URL with a trailing slash", rpcURL + "/", "1.0", rpcBody("SendMessage", send1), false},
		{"JSON-RPC 0.3", rpcURL, "0.3", rpcBody("message/send", send03), true},
		{"JSON-RPC 0.3 without the header", rpcURL, "", rpcBody("message/send", send03), true},
		{"REST 1.0", restURL + "/message:send", "1.0", send1, false},
		// The 0.3 paths exist only in the 0.3 layer: a 200 is its answer.
		{"REST 0.3 without the header", restURL + "/v1/message:send", "", send03REST, false},
		{"REST 0.3", restURL + "/v1/message:send", "0.3", send03REST, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{}
			if tt.version != "" {
				h["A2A-Version"] = tt.version
			}
			status, _, b := raw(t, "POST", tt.url, h, tt.body)
			if status != 200 {
				t.Fatalf("%d %s", status, b)
			}
			var res map[string]any
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatal(err)
			}
			if r, ok := res["result"].(map[string]any); ok {
				res = r
			}
			// 1.0 wraps the task ({"task": {...}}); 0.3 marks it with kind.
			if task, ok := res["task"].(map[string]any); ok && !tt.v03 {
				res = task
			}
			if tt.v03 != (res["kind"] == "task") || (res["id"] == nil && res["task"] == nil) {
				t.Errorf("not a %v task: %s", map[bool]string{true: "0.3", false: "1.0"}[tt.v03], b)
			}
		})
	}
}

func TestVersionRouting(t *testing.T) {
	env := startBridge(t, "- say: done\n", a2abridge.Exposure{})
	// A 0.3 path asked for as 1.0, and a 1.0 method asked for as 0.3, are
	// not found: the header picks the layer.
	if status, _, _ := raw(t, "POST", env.srv.URL+a2abridge.PathREST+"/v1/message:send", map[string]string{"A2A-Version": "1.0"}, `{}`); status != 404 {
		t.Errorf("1.0 request for a 0.3 path: %d", status)
	}
	_, _, b := raw(t, "POST", env.srv.URL+a2abridge.PathJSONRPC, map[string]string{"A2A-Version": "0.3"}, rpcBody("SendMessage", `{}`))
	if r := decodeRPC(t, b); r.Error == nil || r.Error.Code != -32601 {
		t.Errorf("0.3 request for a 1.0 method: %s, want method not found", b)
	}
}

func TestA2AGoClientsOnTheV03Wire(t *testing.T) {
	env := startBridge(t, streamingScenario, a2abridge.Exposure{})
	slow := startBridge(t, "- say: working on it now\n- sleep: 1h\n", a2abridge.Exposure{})
	for _, binding := range []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON} {
		t.Run(string(binding), func(t *testing.T) {
			ctx := context.Background()
			c := goClient(t, env, binding, a2av0.Version, nil)
			task := firstTurn(t, c, "write the report", a2a.TaskStateCompleted)
			names := map[string]bool{}
			for _, a := range task.Artifacts {
				names[a.Name] = true
			}
			if !names[a2abridge.ArtifactAssistantOutput] || !names["report.md"] || !names[a2abridge.ArtifactAgentAdaptorResult] {
				t.Errorf("artifacts on the 0.3 wire: %v", names)
			}
			sc := goClient(t, slow, binding, a2av0.Version, nil)
			var id a2a.TaskID
			for ev, err := range sc.SendStreamingMessage(ctx, textMessage("take your time")) {
				if err != nil {
					t.Fatal(err)
				}
				if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok && a.LastChunk {
					id = a.TaskID
					break
				}
			}
			if got, err := sc.CancelTask(ctx, &a2a.CancelTaskRequest{ID: id}); err != nil || got.Status.State != a2a.TaskStateCanceled {
				t.Errorf("CancelTask on the 0.3 wire: %v %v", got, err)
			}
		})
	}
}
