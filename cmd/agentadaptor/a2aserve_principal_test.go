package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Two principals side by side on a2a serve (docs/design.md#event-mapping):
// a context belongs to the principal that created it, and the active-task
// bound refuses what would start a child beyond it.

const (
	tokenT1 = "a2a-token-one-0123456789abcdef"
	tokenT2 = "a2a-token-two-0123456789abcdef"
)

// bearerTransport adds a bearer token and A2A-Version 1.0 to every request.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	if r.Header.Get("A2A-Version") == "" {
		r.Header.Set("A2A-Version", "1.0")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// grpcToken sends a bearer token as metadata with every gRPC call.
func grpcToken(token string) []grpc.DialOption {
	add := func(ctx context.Context) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	return []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(add(ctx), method, req, reply, cc, opts...)
		}),
		grpc.WithStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(add(ctx), desc, cc, method, opts...)
		}),
	}
}

// principalClient is an a2a-go client of one binding of s, as token.
func principalClient(t *testing.T, s *a2aServe, binding a2a.TransportProtocol, token string) *a2aclient.Client {
	t.Helper()
	var iface *a2a.AgentInterface
	switch binding {
	case a2a.TransportProtocolGRPC:
		iface = &a2a.AgentInterface{URL: s.grpc, ProtocolBinding: binding, ProtocolVersion: a2a.Version}
	case a2a.TransportProtocolHTTPJSON:
		iface = &a2a.AgentInterface{URL: "http://" + s.listen + "/a2a/rest", ProtocolBinding: binding, ProtocolVersion: a2a.Version}
	default:
		iface = &a2a.AgentInterface{URL: "http://" + s.listen + "/a2a/jsonrpc", ProtocolBinding: binding, ProtocolVersion: a2a.Version}
	}
	hc := &http.Client{Transport: bearerTransport(token)}
	c, err := a2aclient.NewFromEndpoints(context.Background(), []*a2a.AgentInterface{iface},
		a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc), a2agrpc.WithGRPCTransport(grpcToken(token)...))
	if err != nil {
		t.Fatalf("client for %s: %v", binding, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// sessionOf sends text in contextID (a new context when "") as a blocking
// SendMessage and returns the task and the CLI session its turn ran in
// (from the agent-adaptor-result artifact).
func sessionOf(t *testing.T, c *a2aclient.Client, contextID, text string) (*a2a.Task, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	msg.ContextID = contextID
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("SendMessage gave %#v, want a completed task", res)
	}
	for _, a := range task.Artifacts {
		if a.Name != "agent-adaptor-result" || len(a.Parts) != 1 {
			continue
		}
		if m, ok := a.Parts[0].Data().(map[string]any); ok {
			if id, _ := m["session_id"].(string); id != "" {
				return task, id
			}
		}
	}
	t.Fatalf("task %s has no result artifact with a session id", task.ID)
	return nil, ""
}

func TestA2AServeContextsBelongToTheirPrincipal(t *testing.T) {
	t.Setenv("A2A_T1_TOKEN", tokenT1)
	t.Setenv("A2A_T2_TOKEN", tokenT2)
	s := startA2AServe(t, "steps:\n  - say: one turn of the conversation\nrepeat: true\n",
		"--auth-token", "env:A2A_T1_TOKEN", "--auth-token", "env:A2A_T2_TOKEN", "--grpc-addr", "127.0.0.1:0")
	for _, binding := range []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON, a2a.TransportProtocolGRPC} {
		t.Run(string(binding), func(t *testing.T) {
			t1 := principalClient(t, s, binding, tokenT1)
			t2 := principalClient(t, s, binding, tokenT2)
			first, s1 := sessionOf(t, t1, "", "first, from T1")
			again, s1again := sessionOf(t, t1, first.ContextID, "second, from T1")
			if again.ContextID != first.ContextID || s1again != s1 {
				t.Fatalf("T1's own context: %s/%s then %s/%s, want one session", first.ContextID, s1, again.ContextID, s1again)
			}
			// T2 names T1's context: a conversation of its own, with the
			// contextId it sent (nothing tells it that T1 uses it).
			theirs, s2 := sessionOf(t, t2, first.ContextID, "from T2, naming T1's context")
			if s2 == s1 {
				t.Fatalf("T2's message with T1's contextId resumed T1's CLI session %s", s1)
			}
			if theirs.ContextID != first.ContextID {
				t.Errorf("T2's task has contextId %s, want the one it sent (%s)", theirs.ContextID, first.ContextID)
			}
			// Both conversations go on, each in its own session.
			if _, s := sessionOf(t, t2, first.ContextID, "T2 again"); s != s2 {
				t.Errorf("T2's second turn ran in session %s, want its own %s", s, s2)
			}
			if _, s := sessionOf(t, t1, first.ContextID, "T1 again"); s != s1 {
				t.Errorf("T1's third turn ran in session %s, want its own %s", s, s1)
			}
			// And T2 still cannot see T1's tasks of that context.
			list, err := t2.ListTasks(context.Background(), &a2a.ListTasksRequest{ContextID: first.ContextID})
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range list.Tasks {
				if task.ID == first.ID || task.ID == again.ID {
					t.Errorf("T2 lists T1's task %s", task.ID)
				}
			}
		})
	}
}

// restSend posts a 1.0 HTTP+JSON SendMessage with returnImmediately.
func restSend(t *testing.T, c *http.Client, s *a2aServe, token, text string) (int, http.Header, []byte) {
	t.Helper()
	body := fmt.Sprintf(`{"message":{"messageId":%q,"role":"ROLE_USER","parts":[{"text":%q}]},"configuration":{"returnImmediately":true}}`,
		"m-"+text, text)
	return s.do(t, c, httpCall{method: "POST", path: "/a2a/rest/message:send", ct: "application/json", body: body,
		header: map[string]string{"Authorization": "Bearer " + token, "A2A-Version": "1.0"}})
}

// agentChildren counts this process's children that run the scripted agent.
func agentChildren(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc: cannot observe child processes")
	}
	self := strconv.Itoa(os.Getpid())
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		st := string(b)
		i := strings.LastIndexByte(st, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(st[i+1:])
		if len(f) < 2 || f[1] != self || f[0] == "Z" {
			continue
		}
		if cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); strings.Contains(string(cmd), "--scenario") {
			n++
		}
	}
	return n
}

// metricValue reads one sample of a2a serve's /metrics.
func metricValue(t *testing.T, s *a2aServe, token, name string) float64 {
	t.Helper()
	_, _, b := s.do(t, &http.Client{}, httpCall{method: "GET", path: "/metrics", header: map[string]string{"Authorization": "Bearer " + token}})
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no %s in /metrics:\n%s", name, b)
	return 0
}

func TestA2AServeMaxActiveTasks(t *testing.T) {
	const n = 8 // the default of --max-active-tasks
	t.Setenv("A2A_T1_TOKEN", tokenT1)
	t.Setenv("A2A_T2_TOKEN", tokenT2)
	s := startA2AServe(t, "- sleep: 1h\n", "--auth-token", "env:A2A_T1_TOKEN", "--auth-token", "env:A2A_T2_TOKEN", "--grpc-addr", "127.0.0.1:0")
	client := &http.Client{}
	defer client.CloseIdleConnections()

	// 100 messages at once from one token.
	type answer struct {
		status int
		header http.Header
		body   []byte
	}
	answers := make([]answer, 100)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			st, h, b := restSend(t, client, s, tokenT1, "task "+strconv.Itoa(i))
			answers[i] = answer{st, h, b}
		})
	}
	wg.Wait()
	var accepted []string
	for _, a := range answers {
		switch a.status {
		case http.StatusOK:
			var task struct {
				Task struct{ ID string } `json:"task"`
			}
			if err := json.Unmarshal(a.body, &task); err != nil || task.Task.ID == "" {
				t.Fatalf("accepted without a task: %s", a.body)
			}
			accepted = append(accepted, task.Task.ID)
		case http.StatusTooManyRequests:
			var e struct {
				Error struct {
					Code    int    `json:"code"`
					Status  string `json:"status"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(a.body, &e); err != nil || e.Error.Code != 429 || e.Error.Status != "RESOURCE_EXHAUSTED" || e.Error.Message == "" {
				t.Errorf("429 body %s", a.body)
			}
			if a.header.Get("Retry-After") != "5" {
				t.Errorf("429 without Retry-After: %v", a.header)
			}
		default:
			t.Fatalf("status %d: %s", a.status, a.body)
		}
	}
	if len(accepted) != n {
		t.Fatalf("%d of 100 messages accepted, want %d", len(accepted), n)
	}
	if got := metricValue(t, s, tokenT1, "agentadaptor_a2a_refused_tasks_total"); got != 100-n {
		t.Errorf("refusals counted %v, want %d", got, 100-n)
	}

	// The accepted tasks start their children, and no more than n.
	deadline := time.Now().Add(60 * time.Second)
	for {
		c := agentChildren(t)
		if c > n {
			t.Fatalf("%d agent children, want at most %d", c, n)
		}
		if c == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d agent children after 60s, want %d", c, n)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Beside them, T2 is refused too on the other bindings, in their terms.
	msg := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("one more")),
		Config: &a2a.SendMessageConfig{ReturnImmediately: true}}
	_, err := principalClient(t, s, a2a.TransportProtocolJSONRPC, tokenT2).SendMessage(context.Background(), msg)
	if !errors.Is(err, a2a.ErrServerError) || !strings.Contains(err.Error(), "retry in 5 seconds") {
		t.Errorf("JSON-RPC beyond the bound: %v, want a -32000 server error that says when to retry", err)
	}
	conn, err := grpc.NewClient(s.grpc, grpcToken(tokenT2)...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = principalClient(t, s, a2a.TransportProtocolGRPC, tokenT2).SendMessage(context.Background(), msg)
	if err == nil || !strings.Contains(err.Error(), "retry in 5 seconds") {
		t.Errorf("gRPC beyond the bound: %v", err)
	}
	if st := grpcSendStatus(t, conn); st.Code() != codes.ResourceExhausted {
		t.Errorf("gRPC beyond the bound: %v, want RESOURCE_EXHAUSTED", st)
	}

	// Running tasks are unaffected: they are still working. Once they
	// finish (cancelled here), new tasks are accepted again.
	t1 := principalClient(t, s, a2a.TransportProtocolHTTPJSON, tokenT1)
	for _, id := range accepted {
		task, err := t1.GetTask(context.Background(), &a2a.GetTaskRequest{ID: a2a.TaskID(id)})
		if err != nil || task.Status.State != a2a.TaskStateWorking && task.Status.State != a2a.TaskStateSubmitted {
			t.Fatalf("accepted task %s: %v %v", id, task, err)
		}
		if task, err := t1.CancelTask(context.Background(), &a2a.CancelTaskRequest{ID: a2a.TaskID(id)}); err != nil || task.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("cancel %s: %v %v", id, task, err)
		}
	}
	var again []string
	for i := range n {
		st, _, b := restSend(t, client, s, tokenT2, "after "+strconv.Itoa(i))
		if st != http.StatusOK {
			t.Fatalf("after the tasks finished, message %d: %d %s", i, st, b)
		}
		var task struct {
			Task struct{ ID string } `json:"task"`
		}
		_ = json.Unmarshal(b, &task)
		again = append(again, task.Task.ID)
	}
	t2 := principalClient(t, s, a2a.TransportProtocolHTTPJSON, tokenT2)
	for _, id := range again {
		if _, err := t2.CancelTask(context.Background(), &a2a.CancelTaskRequest{ID: a2a.TaskID(id)}); err != nil {
			t.Errorf("cancel %s: %v", id, err)
		}
	}
}

// grpcSendStatus sends one message over the raw gRPC method (a2a-go's
// client would translate the status) and returns the call's status.
func grpcSendStatus(t *testing.T, conn *grpc.ClientConn) *status.Status {
	t.Helper()
	_, err := a2apb.NewA2AServiceClient(conn).SendMessage(context.Background(), &a2apb.SendMessageRequest{
		Message:       &a2apb.Message{MessageId: "raw-1", Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "x"}}}},
		Configuration: &a2apb.SendMessageConfiguration{ReturnImmediately: true},
	})
	st, _ := status.FromError(err)
	var reason string
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			reason = info.Reason
		}
	}
	if err != nil && reason != "TOO_MANY_ACTIVE_TASKS" {
		t.Errorf("gRPC refusal's ErrorInfo reason %q, want TOO_MANY_ACTIVE_TASKS", reason)
	}
	return st
}
