package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/seed0634/agentadaptor/internal/testkit/fakeacp"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

func TestMain(m *testing.M) {
	recordTraceparent()
	recordEnv()
	probeDumpable()
	scripted.MaybeRunAgent()
	if len(os.Args) > 1 && os.Args[1] == bridgeCommand { // the ACP adapter's stdio bridge, run by a fake agent
		os.Exit(bridgeCmd(context.Background(), os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	fakeacp.MaybeRun()
	os.Exit(m.Run())
}

// syncBuffer collects a command's stderr.
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

// a2aServe is `agentadaptor a2a serve` running in this process.
type a2aServe struct {
	listen  string // the listen address (host:port)
	cardURL string // the card URL the command printed
	grpc    string // the gRPC listen address, when served
	stderr  *syncBuffer
	stop    func() int
}

var readyLine = regexp.MustCompile(`agent card at (\S+) \(listening on ([^,]+),`)
var grpcLine = regexp.MustCompile(`gRPC binding on (\S+)`)

func writeScenarioFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startA2AServe runs a2a serve with the scripted adapter and args on a
// loopback port and waits until it listens. stop ends it (like SIGINT) and
// returns its exit code; t.Cleanup stops it too.
func startA2AServe(t *testing.T, scenario string, args ...string) *a2aServe {
	t.Helper()
	// The race runtime of the re-executed test binary sleeps 1s at exit.
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &a2aServe{stderr: &syncBuffer{}}
	code := make(chan int, 1)
	full := append([]string{"a2a", "serve", "--adapter", "scripted", "--scenario", writeScenarioFile(t, scenario), "--addr", "127.0.0.1:0"}, args...)
	go func() {
		code <- dispatch(ctx, full, io.Discard, pw)
		_ = pw.Close()
	}()
	ready := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			_, _ = s.stderr.Write([]byte(line + "\n"))
			if m := grpcLine.FindStringSubmatch(line); m != nil {
				s.grpc = m[1]
			}
			if m := readyLine.FindStringSubmatch(line); m != nil && !signalled {
				s.cardURL, s.listen = m[1], m[2]
				signalled = true
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	var once sync.Once
	exit := -1
	s.stop = func() int {
		once.Do(func() {
			cancel()
			exit = <-code
			<-read
		})
		return exit
	}
	t.Cleanup(func() { s.stop() })
	select {
	case <-ready:
	case c := <-code:
		code <- c
		<-read
		t.Fatalf("a2a serve exited %d before listening:\n%s", c, s.stderr.String())
	}
	return s
}

// runA2AServe runs a2a serve to its end (a usage error) and returns its
// exit code and stderr.
func runA2AServe(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	code := dispatch(context.Background(), append([]string{"a2a", "serve"}, args...), io.Discard, &stderr)
	return code, stderr.String()
}

type httpCall struct {
	method, path, ct, body string
	header                 map[string]string
}

func (s *a2aServe) do(t *testing.T, c *http.Client, call httpCall) (int, http.Header, []byte) {
	t.Helper()
	var body io.Reader
	if call.body != "" {
		body = strings.NewReader(call.body)
	}
	req, err := http.NewRequest(call.method, "http://"+s.listen+call.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if call.ct != "" {
		req.Header.Set("Content-Type", call.ct)
	}
	for k, v := range call.header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
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

const testToken = "a2a-test-token-0123456789abcdef"

const sendMessageRPC = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`

func TestA2AServeAdmission(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Setenv("A2A_TEST_TOKEN", testToken)
	s := startA2AServe(t, "- say: hello from the agent\n", "--auth-token", "env:A2A_TEST_TOKEN")
	client := &http.Client{}
	bearer := map[string]string{"Authorization": "Bearer " + testToken, "A2A-Version": "1.0"}
	_, port, _ := strings.Cut(s.listen, ":")
	tests := []struct {
		name   string
		call   httpCall
		status int
		rpc    int // the JSON-RPC error code of the refusal, if on the JSON-RPC path
	}{
		{"the card is public", httpCall{method: "GET", path: "/.well-known/agent-card.json"}, 200, 0},
		{"no token", httpCall{method: "POST", path: "/a2a/jsonrpc", ct: "application/json", body: sendMessageRPC}, 401, -31401},
		{"a wrong token", httpCall{method: "POST", path: "/a2a/jsonrpc", ct: "application/json", body: sendMessageRPC,
			header: map[string]string{"Authorization": "Bearer " + strings.Repeat("x", len(testToken))}}, 401, -31401},
		{"a wrong scheme", httpCall{method: "POST", path: "/a2a/jsonrpc", ct: "application/json", body: sendMessageRPC,
			header: map[string]string{"Authorization": "Basic " + testToken}}, 401, -31401},
		{"no token on REST", httpCall{method: "GET", path: "/a2a/rest/tasks"}, 401, 0},
		{"no token on 0.3 REST", httpCall{method: "GET", path: "/a2a/rest/v1/tasks/x"}, 401, -31401},
		{"the token", httpCall{method: "POST", path: "/a2a/jsonrpc", ct: "application/json", body: sendMessageRPC, header: bearer}, 200, 0},
		{"text/plain with the token", httpCall{method: "POST", path: "/a2a/jsonrpc", ct: "text/plain", body: sendMessageRPC, header: bearer}, 415, -32005},
		{"a cross-site text/plain form post (no CORS preflight)", httpCall{method: "POST", path: "/a2a/jsonrpc", ct: "text/plain", body: sendMessageRPC,
			header: map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}}, 403, -31403},
		{"a cross-site post carrying the token", httpCall{method: "POST", path: "/a2a/rest/message:send", ct: "application/json", body: `{}`,
			header: map[string]string{"Authorization": "Bearer " + testToken, "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}}, 403, 0},
		{"DNS rebinding: an attacker's name for 127.0.0.1", httpCall{method: "POST", path: "/a2a/jsonrpc", ct: "application/json", body: sendMessageRPC,
			header: map[string]string{"Host": "evil.example:" + port, "Authorization": "Bearer " + testToken}}, 403, -31403},
		{"DNS rebinding of the card", httpCall{method: "GET", path: "/.well-known/agent-card.json", header: map[string]string{"Host": "evil.example:" + port}}, 403, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, h, b := s.do(t, client, tt.call)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %s", status, tt.status, b)
			}
			if status == 401 && !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer ") {
				t.Errorf("401 without a Bearer challenge: %v", h)
			}
			if tt.rpc != 0 {
				var r struct {
					Code  int
					Error struct{ Code int } `json:"error"`
				}
				err := json.Unmarshal(b, &r)
				code := r.Error.Code
				if strings.HasPrefix(tt.call.path, "/a2a/rest/v1/") {
					code = r.Code // the 0.3 error object
				}
				if err != nil || code != tt.rpc {
					t.Errorf("JSON-RPC error %s, want code %d", b, tt.rpc)
				}
			}
			if status == 200 && tt.call.path == "/a2a/jsonrpc" && !strings.Contains(string(b), "TASK_STATE_COMPLETED") {
				t.Errorf("the agent did not complete: %s", b)
			}
			if strings.Contains(string(b), testToken) {
				t.Error("the token is echoed")
			}
		})
	}

	// The card advertises the bearer scheme; its URLs are the listen
	// address whatever Host the request named.
	_, _, card := s.do(t, client, httpCall{method: "GET", path: "/.well-known/agent-card.json"})
	_, _, viaLocalhost := s.do(t, client, httpCall{method: "GET", path: "/.well-known/agent-card.json", header: map[string]string{"Host": "localhost:" + port}})
	if string(card) != string(viaLocalhost) {
		t.Errorf("the card depends on the Host header:\n%s\n%s", card, viaLocalhost)
	}
	var v1 a2a.AgentCard
	if err := json.Unmarshal(card, &v1); err != nil {
		t.Fatal(err)
	}
	for _, in := range v1.SupportedInterfaces {
		if !strings.HasPrefix(in.URL, "http://"+s.listen+"/") {
			t.Errorf("interface URL %s is not on the listen address %s", in.URL, s.listen)
		}
	}
	if s.cardURL != "http://"+s.listen+"/.well-known/agent-card.json" {
		t.Errorf("printed card URL %s", s.cardURL)
	}
	if _, ok := v1.SecuritySchemes["bearer"].(a2a.HTTPAuthSecurityScheme); !ok || len(v1.SecurityRequirements) != 1 {
		t.Errorf("card security: %#v %#v", v1.SecuritySchemes, v1.SecurityRequirements)
	}

	// The token's principal owns the task it created.
	status, _, b := s.do(t, client, httpCall{method: "GET", path: "/a2a/rest/tasks", header: bearer})
	var list struct{ Tasks []a2a.Task }
	if err := json.Unmarshal(b, &list); status != 200 || err != nil || len(list.Tasks) != 1 {
		t.Errorf("ListTasks with the token: %d %s", status, b)
	}

	if code := s.stop(); code != 0 {
		t.Errorf("exit %d", code)
	}
	if strings.Contains(s.stderr.String(), testToken) {
		t.Error("the token is in the command's output")
	}
	client.CloseIdleConnections()
	goleak.VerifyNone(t, ignore)
}

func TestA2AServePublicURLAndAllowedHosts(t *testing.T) {
	s := startA2AServe(t, "- say: hi\n", "--public-url", "https://agents.example.test/research/", "--allowed-host", "Other.Example.Test")
	client := &http.Client{}
	_, port, _ := strings.Cut(s.listen, ":")
	for _, tt := range []struct {
		host   string
		status int
	}{
		{"agents.example.test", 200},              // the public URL's host
		{"other.example.test:" + port, 200},       // --allowed-host
		{"localhost:" + port, 200},                // loopback
		{"agents.example.test.evil:" + port, 403}, // anything else
	} {
		status, _, b := s.do(t, client, httpCall{method: "GET", path: "/.well-known/agent-card.json", header: map[string]string{"Host": tt.host}})
		if status != tt.status {
			t.Errorf("Host %s: %d, want %d", tt.host, status, tt.status)
			continue
		}
		if status != 200 {
			continue
		}
		var v1 a2a.AgentCard
		if err := json.Unmarshal(b, &v1); err != nil {
			t.Fatal(err)
		}
		for _, in := range v1.SupportedInterfaces {
			if !strings.HasPrefix(in.URL, "https://agents.example.test/research/a2a/") {
				t.Errorf("Host %s: interface URL %s is not under --public-url", tt.host, in.URL)
			}
		}
	}
	if s.cardURL != "https://agents.example.test/research/.well-known/agent-card.json" {
		t.Errorf("printed card URL %s", s.cardURL)
	}
}

func TestA2AServeUsageErrors(t *testing.T) {
	scenario := writeScenarioFile(t, "- say: hi\n")
	t.Setenv("A2A_TEST_TOKEN", testToken)
	t.Setenv("A2A_SHORT_TOKEN", "short")
	base := []string{"--adapter", "scripted", "--scenario", scenario}
	for _, tt := range []struct {
		name string
		args []string
		want string // in the single line of stderr
	}{
		{"every interface without tokens", []string{"--addr", "0.0.0.0:0"}, "--auth-token env:NAME"},
		{"an interface address without tokens", []string{"--addr", "192.0.2.10:0"}, "non-loopback"},
		{"an empty host without tokens", []string{"--addr", ":0"}, "non-loopback"},
		{"gRPC on every interface without tokens", []string{"--grpc-addr", "0.0.0.0:0"}, "--grpc-addr"},
		{"every interface without a public URL", []string{"--addr", "0.0.0.0:0", "--auth-token", "env:A2A_TEST_TOKEN"}, "--public-url"},
		{"a literal token", []string{"--auth-token", testToken}, "never the token itself"},
		{"an unset variable", []string{"--auth-token", "env:A2A_NOT_SET_ANYWHERE"}, "A2A_NOT_SET_ANYWHERE is not set"},
		{"a short token", []string{"--auth-token", "env:A2A_SHORT_TOKEN"}, "at least 16 characters"},
		{"a public URL with credentials", []string{"--public-url", "http://user:pw@example.test"}, "--public-url"},
		{"a public URL without scheme", []string{"--public-url", "example.test:9001"}, "--public-url"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := runA2AServe(t, append(append([]string{}, base...), tt.args...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
			if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr %q, want one line containing %q", stderr, tt.want)
			}
			if strings.Contains(stderr, testToken) || strings.Contains(stderr, "short\"") {
				t.Errorf("a token is in the error: %s", stderr)
			}
		})
	}
}

func TestA2AServeHTTPServerTimeouts(t *testing.T) {
	srv := newA2AHTTPServer(http.NotFoundHandler())
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Errorf("timeouts: header %v read %v idle %v", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.IdleTimeout)
	}
	if srv.WriteTimeout != 0 {
		t.Errorf("WriteTimeout %v would cut event streams", srv.WriteTimeout)
	}
}

func TestA2AServeGRPC(t *testing.T) {
	t.Setenv("A2A_TEST_TOKEN", testToken)
	s := startA2AServe(t, "- say: hi over gRPC\n", "--auth-token", "env:A2A_TEST_TOKEN", "--grpc-addr", "127.0.0.1:0")
	if s.grpc == "" {
		t.Fatalf("no gRPC line:\n%s", s.stderr.String())
	}
	_, _, b := s.do(t, &http.Client{}, httpCall{method: "GET", path: "/.well-known/agent-card.json"})
	var card a2a.AgentCard
	if err := json.Unmarshal(b, &card); err != nil {
		t.Fatal(err)
	}
	var iface *a2a.AgentInterface
	for _, in := range card.SupportedInterfaces {
		if in.ProtocolBinding == a2a.TransportProtocolGRPC {
			iface = in
		}
	}
	if iface == nil || iface.URL != s.grpc {
		t.Fatalf("card's gRPC interface %+v, want %s", iface, s.grpc)
	}
	withToken := func(token string) grpc.DialOption {
		return grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if token != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		})
	}
	send := func(token string) (a2a.SendMessageResult, error) {
		c, err := a2aclient.NewFromEndpoints(context.Background(), []*a2a.AgentInterface{iface},
			a2agrpc.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials()), withToken(token)))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Destroy()
		return c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))})
	}
	if _, err := send(""); err == nil || !strings.Contains(err.Error(), "authentication required") {
		t.Errorf("gRPC without a token: %v", err)
	}
	if _, err := send("wrong-token-0123456789abcdef"); err == nil {
		t.Error("gRPC with a wrong token was admitted")
	}
	res, err := send(testToken)
	if err != nil {
		t.Fatal(err)
	}
	if task, ok := res.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("gRPC with the token: %#v", res)
	}
}

// jsSDK returns the repository root when node and @a2a-js/sdk are
// installed; it skips locally otherwise and fails under CI=true.
func jsSDK(t *testing.T) string {
	t.Helper()
	root, err := testenv.NodePackages("@a2a-js/sdk")
	testenv.Require(t, "node and @a2a-js/sdk", err)
	return root
}
