package host_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/hostyaml"
	"github.com/seed0634/agentadaptor/internal/testkit/hosttest"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/host"
)

// request sends one HTTP request with the given headers and returns the
// status, the response headers and the body.
func request(t *testing.T, client *http.Client, method, url, body string, header map[string]string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func scenarioConfig(t *testing.T, steps string) *hostconfig.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "parent.yaml")
	if err := os.WriteFile(path, []byte(steps), 0o600); err != nil {
		t.Fatal(err)
	}
	return &hostconfig.Config{Parent: hostconfig.Parent{Adapter: "scripted", Scenario: path}}
}

const runInput = `{"threadId":"t-1","runId":"%s","messages":[{"id":"u1","role":"user","content":"hi"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`

func runBody(runID string) string { return strings.Replace(runInput, "%s", runID, 1) }

// What a web page could do to a host on loopback is refused: a DNS
// rebinding name for 127.0.0.1, a cross-site form post (no preflight), a
// cross-origin read of a stream.
func TestHostRefusesWhatAWebPageCouldDo(t *testing.T) {
	_, srv := newHost(t, scenarioConfig(t, "- say: hello\n"))
	json := map[string]string{"Content-Type": "application/json", "Accept": "text/event-stream"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		maps.Copy(m, json)
		maps.Copy(m, extra)
		return m
	}
	for _, tt := range []struct {
		name, method, path, body string
		header                   map[string]string
		want                     int
	}{
		{"rebinding POST /agui", "POST", "/agui", runBody("r-1"), with(map[string]string{"Host": "evil.example:8080", "Origin": "http://evil.example:8080"}), 403},
		{"rebinding GET events", "GET", "/agui/runs/r-1/events", "", map[string]string{"Host": "evil.example:8080"}, 403},
		{"rebinding GET delegations", "GET", "/agui/runs/r-1/delegations", "", map[string]string{"Host": "evil.example"}, 403},
		{"cross-site text/plain post", "POST", "/agui", runBody("r-2"), map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, 403},
		{"cross-site form post of an answer", "POST", "/agui/runs/r-1/delegations/d/input", "text=yes", map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.example"}, 403},
		{"a non-JSON body", "POST", "/agui/runs/r-1/delegations/d/input", `{"text":"yes"}`, map[string]string{"Content-Type": "text/plain"}, 415},
		{"cross-origin GET of a stream", "GET", "/agui/runs/r-1/events", "", map[string]string{"Origin": "https://evil.example"}, 403},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if code, _, body := request(t, nil, tt.method, srv.URL+tt.path, tt.body, tt.header); code != tt.want {
				t.Fatalf("status %d, want %d: %s", code, tt.want, body)
			}
		})
	}
}

// A runId still retained for reconnects cannot start another run: a victim
// reconnecting with Last-Event-ID must never receive someone else's events.
func TestHostRefusesARetainedRunID(t *testing.T) {
	_, srv := newHost(t, scenarioConfig(t, "- say: hello\n"))
	hdr := map[string]string{"Content-Type": "application/json", "Accept": "text/event-stream"}
	if code, _, body := request(t, nil, "POST", srv.URL+"/agui", runBody("run-kept"), hdr); code != 200 || !strings.Contains(body, "RUN_FINISHED") {
		t.Fatalf("first run: %d %s", code, body)
	}
	if code, _, body := request(t, nil, "POST", srv.URL+"/agui", runBody("run-kept"), hdr); code != http.StatusConflict {
		t.Fatalf("reused runId: %d %s", code, body)
	}
}

// Beyond max_active_runs a new chat is refused with 429 and Retry-After
// instead of starting another CLI process.
func TestHostBoundsActiveRuns(t *testing.T) {
	cfg := scenarioConfig(t, "- sleep: 60s\n- say: late\n")
	cfg.MaxActiveRuns = 1
	h, srv := newHost(t, cfg)
	ctx := t.Context()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/agui", strings.NewReader(runBody("busy")))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	code, hdr, body := request(t, nil, "POST", srv.URL+"/agui", runBody("second"), map[string]string{"Content-Type": "application/json"})
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
		t.Fatalf("second run: %d %v %s", code, hdr, body)
	}
	if code, _, _ := request(t, nil, "POST", srv.URL+"/agui/runs/busy/cancel", "", nil); code != 200 {
		t.Fatalf("cancel: %d", code)
	}
	if h.ActiveRuns() > 1 {
		t.Fatalf("%d runs active", h.ActiveRuns())
	}
}

func TestHostRefusesANonLoopbackAddressWithoutTokens(t *testing.T) {
	_, err := hostyaml.New(context.Background(), scenarioConfig(t, "- say: hi\n"), hostyaml.Options{StateDir: t.TempDir(), Addr: "0.0.0.0:0"})
	if !errors.Is(err, host.ErrInsecureAddr) || !strings.Contains(err.Error(), "auth.tokens") {
		t.Fatalf("err %v", err)
	}
	t.Setenv("HOST_TEST_TOKEN", "alice-token-0123456789abcdef")
	cfg := scenarioConfig(t, "- say: hi\n")
	cfg.Auth.Tokens = []hostconfig.Token{{Name: "alice", TokenRef: "env:HOST_TEST_TOKEN"}}
	h, err := hostyaml.New(context.Background(), cfg, hostyaml.Options{StateDir: t.TempDir(), Addr: "0.0.0.0:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = h.Shutdown(ctx)
}

// With tokens, every route but /healthz needs a principal, and a run, its
// stream, cancel, input, audit and artifacts belong to the principal that
// started it: others get 404, as if it did not exist.
func TestHostRunsBelongToTheirPrincipal(t *testing.T) {
	t.Setenv("ALICE_TOKEN", "alice-token-0123456789abcdef")
	t.Setenv("BOB_TOKEN", "bob-token-0123456789abcdefgh")
	cfg := scenarioConfig(t, "- say: hello\n")
	cfg.Auth.Tokens = []hostconfig.Token{{Name: "alice", TokenRef: "env:ALICE_TOKEN"}, {Name: "bob", TokenRef: "env:BOB_TOKEN"}}
	h, srv := newHost(t, cfg)
	alice := map[string]string{"Authorization": "Bearer alice-token-0123456789abcdef", "Content-Type": "application/json"}
	bob := map[string]string{"Authorization": "Bearer bob-token-0123456789abcdefgh", "Content-Type": "application/json"}

	if code, hdr, _ := request(t, nil, "POST", srv.URL+"/agui", runBody("a-1"), map[string]string{"Content-Type": "application/json"}); code != 401 || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer ") {
		t.Fatalf("without a token: %d %v", code, hdr)
	}
	if code, _, _ := request(t, nil, "GET", srv.URL+"/", "", nil); code != 401 {
		t.Fatalf("the UI without a session: %d", code)
	}
	if code, _, body := request(t, nil, "GET", srv.URL+"/healthz", "", nil); code != 200 || !strings.Contains(body, `"ok"`) {
		t.Fatalf("healthz: %d %s", code, body)
	}
	if code, _, body := request(t, nil, "POST", srv.URL+"/agui", runBody("a-1"), alice); code != 200 || !strings.Contains(body, "RUN_FINISHED") {
		t.Fatalf("alice's run: %d %s", code, body)
	}
	for _, path := range []string{"/agui/runs/a-1/events", "/agui/runs/a-1/delegations", "/agui/runs/a-1/delegations/d/artifacts/x"} {
		if code, _, body := request(t, nil, "GET", srv.URL+path, "", bob); code != 404 {
			t.Errorf("bob GET %s: %d %s", path, code, body)
		}
	}
	if code, _, _ := request(t, nil, "POST", srv.URL+"/agui/runs/a-1/delegations/d/input", `{"text":"x"}`, bob); code != 404 {
		t.Errorf("bob answers alice's delegation: %d", code)
	}
	if code, _, body := request(t, nil, "GET", srv.URL+"/agui/runs/a-1/delegations", "", alice); code != 200 || !strings.HasPrefix(body, "[") {
		t.Errorf("alice reads her audit: %d %s", code, body)
	}
	if code, _, _ := request(t, nil, "GET", srv.URL+"/agui/runs/a-1/events", "", map[string]string{"Authorization": alice["Authorization"], "Last-Event-ID": "1"}); code != 200 {
		t.Errorf("alice reconnects: %d", code)
	}
	// The web UI signs in with a one-time link and then rides its cookie.
	links := h.LoginURLs(srv.URL)
	if len(links) != 2 || links["alice"] == "" {
		t.Fatalf("login links %v", links)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	if code, _, body := request(t, browser, "GET", links["alice"], "", nil); code != 200 {
		t.Fatalf("login: %d %s", code, body)
	}
	if code, _, body := request(t, browser, "GET", srv.URL+"/agui/runs/a-1/delegations", "", nil); code != 200 {
		t.Fatalf("the session cookie: %d %s", code, body)
	}
	if code, _, _ := request(t, browser, "GET", links["bob"], "", nil); code != 200 {
		t.Fatal("bob's link")
	}
	if code, _, _ := request(t, browser, "GET", links["bob"], "", nil); code != 401 {
		t.Fatal("a login link works twice")
	}
}

type failingAudit struct{ *audit.Memory }

func (failingAudit) Err() error { return errors.New("disk full") }

func TestHealthzReportsAFailingAuditSink(t *testing.T) {
	h, err := hostyaml.New(context.Background(), scenarioConfig(t, "- say: hi\n"), hostyaml.Options{StateDir: t.TempDir(),
		Audit: failingAudit{audit.NewMemory(audit.Options{})}})
	if err != nil {
		t.Fatal(err)
	}
	srv := hosttest.Serve(t, h)
	if code, _, body := request(t, nil, "GET", srv.URL+"/healthz", "", nil); code != 200 || !strings.Contains(body, `"degraded"`) {
		t.Fatalf("healthz: %d %s", code, body)
	}
}

// Thread ids are namespaced per principal: reusing someone else's threadId
// starts a new CLI session instead of resuming theirs.
func TestHostThreadsArePerPrincipal(t *testing.T) {
	t.Setenv("ALICE_TOKEN", "alice-token-0123456789abcdef")
	t.Setenv("BOB_TOKEN", "bob-token-0123456789abcdefgh")
	cfg := scenarioConfig(t, "- say: first turn\n- ask: anything else?\n- say: second turn\n")
	cfg.Auth.Tokens = []hostconfig.Token{{Name: "alice", TokenRef: "env:ALICE_TOKEN"}, {Name: "bob", TokenRef: "env:BOB_TOKEN"}}
	_, srv := newHost(t, cfg)
	alice := map[string]string{"Authorization": "Bearer alice-token-0123456789abcdef", "Content-Type": "application/json"}
	bob := map[string]string{"Authorization": "Bearer bob-token-0123456789abcdefgh", "Content-Type": "application/json"}
	if _, _, body := request(t, nil, "POST", srv.URL+"/agui", runBody("a-1"), alice); !strings.Contains(body, "first turn") {
		t.Fatalf("alice's first turn: %s", body)
	}
	if _, _, body := request(t, nil, "POST", srv.URL+"/agui", runBody("b-1"), bob); !strings.Contains(body, "first turn") || strings.Contains(body, "second turn") {
		t.Fatalf("bob resumed alice's session: %s", body)
	}
	if _, _, body := request(t, nil, "POST", srv.URL+"/agui", runBody("a-2"), alice); !strings.Contains(body, "second turn") {
		t.Fatalf("alice's second turn: %s", body)
	}
}

// A client trickling a request body cannot hold a connection (and a file
// descriptor) beyond the read timeout.
func TestHostCutsATricklingBody(t *testing.T) {
	h, err := hostyaml.New(context.Background(), scenarioConfig(t, "- say: hi\n"), hostyaml.Options{StateDir: t.TempDir(), ReadTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, ln) }()
	defer func() {
		stop()
		<-done
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /agui HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", ln.Addr())
	// Keep trickling one byte at a time until the server hangs up; it must,
	// long before the body could complete.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		buf := make([]byte, 4096)
		for {
			if _, err := conn.Read(buf); err != nil {
				return
			}
		}
	}()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for sent := 0; ; sent++ {
		select {
		case <-closed:
			return
		case <-deadline:
			t.Fatalf("the connection is still open after %d trickled bytes", sent)
		case <-tick.C:
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}
}

// An agent marked fetch_card: startup must be reachable with a valid card
// when the host starts: otherwise the start fails and says why, instead of
// every later call failing.
func TestStartupCardMustLoad(t *testing.T) {
	cfg := scenarioConfig(t, "- say: hi\n")
	cfg.Agents = []hostconfig.Agent{{Key: "research", Protocol: "a2a", AgentCardURL: "http://127.0.0.1:1/.well-known/agent-card.json", FetchCard: "startup"}}
	_, err := hostyaml.New(context.Background(), cfg, hostyaml.Options{StateDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `agents[0] (research), checked at startup (fetch_card: startup), could not be reached: `) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v", err)
	}
}
