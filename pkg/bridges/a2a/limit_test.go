package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Tests of the active-task bound and of contexts per principal
// (docs/design.md#event-mapping). The command's own tests drive the same
// with real bearer tokens and 100 concurrent messages.

// waitState reads task id with c until it is in state want.
func waitState(t *testing.T, c *a2aclient.Client, id a2a.TaskID, want a2a.TaskState) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		task, err := c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: id})
		if err == nil && task.Status.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: %v %v, want %s", id, task, err, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startImmediately sends a message with returnImmediately and returns its task.
func startImmediately(t *testing.T, c *a2aclient.Client, contextID string) *a2a.Task {
	t.Helper()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("work"))
	msg.ContextID = contextID
	res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage gave %T", res)
	}
	return task
}

// rawWithin posts body to url, giving up after a generous deadline: an
// admitted message would run for an hour, and the test must fail, not hang.
func rawWithin(t *testing.T, url string, headers map[string]string, body string) (int, http.Header, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d: an event stream, not a refusal", resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the answer did not end: %v (status %d)", err, resp.StatusCode)
	}
	return resp.StatusCode, resp.Header, b
}

func TestMaxActiveTasksRefusalOnEveryWire(t *testing.T) {
	var refused atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env := startBridge(t, "- sleep: 1h\n", a2abridge.Exposure{}, func(c *a2abridge.Config) {
		c.MaxActiveTasks = 1
		c.OnRefused = func(context.Context) { refused.Add(1) }
		c.Card.GRPCAddr = ln.Addr().String()
	})
	g := grpc.NewServer()
	env.bridge.RegisterGRPC(g)
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Serve(ln) }()
	t.Cleanup(func() { g.Stop(); <-done })

	c := goClient(t, env, a2a.TransportProtocolHTTPJSON, a2a.Version, nil)
	running := startImmediately(t, c, "")
	waitState(t, c, running.ID, a2a.TaskStateWorking)

	msg := `{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"one more"}]}`
	msg03 := `{"messageId":"m3","role":"user","kind":"message","parts":[{"kind":"text","text":"one more"}]}`
	v1 := map[string]string{"A2A-Version": "1.0"}
	type wire struct {
		name, path string
		headers    map[string]string
		body       string
		status     int
		check      func(t *testing.T, b []byte)
	}
	rpc := func(t *testing.T, b []byte) {
		r := decodeRPC(t, b)
		if r.Error == nil || r.Error.Code != -32000 || !strings.Contains(r.Error.Message, "retry in 5 seconds") {
			t.Errorf("JSON-RPC error %s, want -32000 saying when to retry", b)
		}
		if !strings.Contains(string(b), a2abridge.ReasonTooManyTasks) {
			t.Errorf("no ErrorInfo reason in %s", b)
		}
	}
	for _, w := range []wire{
		{"JSON-RPC 1.0", a2abridge.PathJSONRPC, v1, rpcBody("SendMessage", `{"message":`+msg+`,"configuration":{"returnImmediately":true}}`), 200, rpc},
		{"JSON-RPC 1.0 stream", a2abridge.PathJSONRPC, v1, rpcBody("SendStreamingMessage", `{"message":`+msg+`}`), 200, rpc},
		{"JSON-RPC 0.3", a2abridge.PathJSONRPC, nil, rpcBody("message/send", `{"message":`+msg03+`,"configuration":{"blocking":false}}`), 200, rpc},
		{"HTTP+JSON 1.0", a2abridge.PathREST + "/message:send", v1, `{"message":` + msg + `,"configuration":{"returnImmediately":true}}`, 429, func(t *testing.T, b []byte) {
			e := decodeREST(t, b)
			if e.Error.Code != 429 || e.Error.Status != "RESOURCE_EXHAUSTED" || e.reason() != a2abridge.ReasonTooManyTasks {
				t.Errorf("HTTP+JSON error %s", b)
			}
		}},
		{"HTTP+JSON 1.0 stream", a2abridge.PathREST + "/message:stream", v1, `{"message":` + msg + `}`, 429, func(t *testing.T, b []byte) {
			if e := decodeREST(t, b); e.Error.Status != "RESOURCE_EXHAUSTED" {
				t.Errorf("HTTP+JSON error %s", b)
			}
		}},
		{"HTTP+JSON 0.3", a2abridge.PathREST + "/v1/message:send", nil, `{"message":` + msg03 + `,"configuration":{"blocking":false}}`, 429, func(t *testing.T, b []byte) {
			var e struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(b, &e); err != nil || e.Code != -32000 || e.Message == "" {
				t.Errorf("0.3 HTTP+JSON error %s, want the 0.3 error object", b)
			}
		}},
	} {
		t.Run(w.name, func(t *testing.T) {
			status, h, b := rawWithin(t, env.srv.URL+w.path, w.headers, w.body)
			if status != w.status {
				t.Fatalf("status %d, want %d: %s", status, w.status, b)
			}
			if h.Get("Retry-After") != "5" || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
				t.Errorf("headers %v, want Retry-After: 5 and JSON", h)
			}
			w.check(t, b)
		})
	}
	t.Run("gRPC", func(t *testing.T) {
		gc, err := a2aclient.NewFromEndpoints(context.Background(),
			[]*a2a.AgentInterface{{URL: ln.Addr().String(), ProtocolBinding: a2a.TransportProtocolGRPC, ProtocolVersion: a2a.Version}},
			a2agrpc.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(
				func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
					err := invoker(ctx, method, req, reply, cc, opts...)
					if st, _ := status.FromError(err); st.Code() != codes.ResourceExhausted {
						t.Errorf("gRPC status %v, want RESOURCE_EXHAUSTED", err)
					}
					return err
				})))
		if err != nil {
			t.Fatal(err)
		}
		defer gc.Destroy()
		req := textMessage("one more")
		req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
		if _, err := gc.SendMessage(context.Background(), req); err == nil {
			t.Error("gRPC message beyond the bound was accepted")
		}
	})
	if got := refused.Load(); got != 7 {
		t.Errorf("OnRefused called %d times, want 7", got)
	}

	// Reads and cancels are never refused; a finished task frees its slot.
	if _, err := c.ListTasks(context.Background(), &a2a.ListTasksRequest{}); err != nil {
		t.Errorf("ListTasks beyond the bound: %v", err)
	}
	if task, err := c.CancelTask(context.Background(), &a2a.CancelTaskRequest{ID: running.ID}); err != nil || task.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask: %v %v", task, err)
	}
	next := startImmediately(t, c, "")
	if _, err := c.CancelTask(context.Background(), &a2a.CancelTaskRequest{ID: next.ID}); err != nil {
		t.Errorf("cancel: %v", err)
	}
}

// A conversation's turns run one at a time, but another principal's
// message with the same contextId is another conversation: it neither
// waits for the first principal's turn nor runs in its session.
func TestContextLockIsPerPrincipal(t *testing.T) {
	env := startBridge(t, "- sleep: 1h\n", a2abridge.Exposure{}, func(c *a2abridge.Config) { c.Principal = principalFromHeader })
	alice := goClient(t, env, a2a.TransportProtocolHTTPJSON, a2a.Version, map[string]string{"X-Test-Principal": "alice"})
	bob := goClient(t, env, a2a.TransportProtocolHTTPJSON, a2a.Version, map[string]string{"X-Test-Principal": "bob"})
	hers := startImmediately(t, alice, "")
	waitState(t, alice, hers.ID, a2a.TaskStateWorking)
	his := startImmediately(t, bob, hers.ContextID)
	waitState(t, bob, his.ID, a2a.TaskStateWorking) // not held behind alice's turn
	// alice's own second turn in her context does wait.
	second := startImmediately(t, alice, hers.ContextID)
	if task, err := alice.GetTask(context.Background(), &a2a.GetTaskRequest{ID: second.ID}); err != nil || task.Status.State != a2a.TaskStateSubmitted {
		t.Errorf("alice's second turn in a busy context: %v %v, want submitted", task, err)
	}
	for _, x := range []struct {
		c  *a2aclient.Client
		id a2a.TaskID
	}{{alice, hers.ID}, {bob, his.ID}, {alice, second.ID}} {
		if _, err := x.c.CancelTask(context.Background(), &a2a.CancelTaskRequest{ID: x.id}); err != nil {
			t.Errorf("cancel %s: %v", x.id, err)
		}
	}
}

func TestTooManyTasksIsTyped(t *testing.T) {
	env := startBridge(t, "- sleep: 1h\n", a2abridge.Exposure{}, func(c *a2abridge.Config) { c.MaxActiveTasks = 1 })
	c := goClient(t, env, a2a.TransportProtocolJSONRPC, a2a.Version, nil)
	task := startImmediately(t, c, "")
	req := textMessage("more")
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	_, err := c.SendMessage(context.Background(), req)
	if !errors.Is(err, a2a.ErrServerError) {
		t.Errorf("a2a-go reads the refusal as %v, want ErrServerError", err)
	}
	if _, err := c.CancelTask(context.Background(), &a2a.CancelTaskRequest{ID: task.ID}); err != nil {
		t.Error(err)
	}
}
