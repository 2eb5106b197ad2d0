package host_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/examples/streaming-chat-copilotkit/web"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/hostyaml"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
	"github.com/seed0634/agentadaptor/pkg/host"
)

// askingResearch is the remote agent of the second host: it asks which
// aspect to look at, and answers about the user's answer.
const askingResearch = `stream_delay: 20ms
repeat: true
steps:
  - say: "Looking into “{{.Prompt}}”."
  - ask: "Which aspect of “{{.Prompt}}” should I focus on?"
  - say: "Focusing on **{{.Prompt}}**, as you asked."
`

// TestBrowserEndToEnd drives the embedded web UI in Debian's Chromium with
// playwright-core (tests/browser/e2e.mjs, every flow listed there) against
// two hosts: the embedded demo, and the demo's parent delegating to a remote
// A2A agent that asks the user a question (the input flow). It proves, at
// 1280x700 unless said otherwise: subagent text streams before the tool
// result and the final answer ends up in view without the test scrolling; a
// second message is answered; New chat starts a new thread without history;
// Stop cancels; a reload mid-delegation resumes through Last-Event-ID; a cut
// connection reads "connection lost" and Reconnect resumes it; the layout
// holds at 390 and 360 px; an input_required subagent's answer box comes
// into view, its question shows once and the user's answer joins the
// transcript; and, on a third host with auth.tokens, the sign-in page at /
// (a token field, no JSON), Sign out, and the one-time link that works once
// and then leads to the sign-in page. Screenshots land in $SCREENSHOT_DIR
// (default tests/browser/out).
func TestBrowserEndToEnd(t *testing.T) {
	root, _ := filepath.Abs("../..")
	_, err := exec.LookPath("chromium")
	testenv.Require(t, "Debian's chromium", err)
	_, err = os.Stat(filepath.Join(root, "tests/browser/node_modules/playwright-core"))
	testenv.Require(t, "playwright-core in tests/browser/node_modules", err)

	demo := serveHost(t, nil)
	remote := serveAskingRemote(t)
	ask := serveHost(t, &hostconfig.Config{
		Parent: hostconfig.Parent{Adapter: "scripted", Scenario: filepath.Join(root, "internal/hostyaml/demo/parent.yaml")},
		Agents: []hostconfig.Agent{{Key: "research", DisplayName: "Research Agent", Protocol: "a2a", AgentCardURL: remote + a2abridge.PathAgentCard}},
	})

	// A host with tokens: the sign-in page, the one-time link, Sign out.
	const token = "browser-e2e-token-0123456789abcdef"
	t.Setenv("E2E_ALICE_TOKEN", token)
	authHost, authURL := serveHostWith(t, &hostconfig.Config{Auth: hostconfig.Auth{Tokens: []hostconfig.Token{{Name: "alice", TokenRef: "env:E2E_ALICE_TOKEN"}}}})
	link := authHost.LoginURLs(authURL)["alice"]

	shots := os.Getenv("SCREENSHOT_DIR")
	if shots == "" {
		shots = filepath.Join(root, "tests/browser/out")
	}
	cmd := exec.Command("node", filepath.Join(root, "tests/browser/e2e.mjs"), demo, "--expect-delegation", "--ask-url", ask, "--auth-url", authURL)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "SCREENSHOT_DIR="+shots, "E2E_TOKEN="+token, "E2E_LOGIN_LINK="+link)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil || !strings.Contains(string(out), " 0 failed") || strings.Contains(string(out), "# SKIP") {
		t.Fatalf("browser end-to-end failed: %v", err)
	}
}

// serveHost serves a host on a loopback port and returns its base URL.
func serveHost(t *testing.T, cfg *hostconfig.Config) string {
	t.Helper()
	_, base := serveHostWith(t, cfg)
	return base
}

// serveHostWith serves a host on a loopback port and returns it and its
// base URL.
func serveHostWith(t *testing.T, cfg *hostconfig.Config) (*host.Host, string) {
	t.Helper()
	h, err := hostyaml.New(context.Background(), cfg, hostyaml.Options{StateDir: t.TempDir(), UI: web.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
		_ = srv.Shutdown(ctx)
	})
	return h, "http://" + ln.Addr().String()
}

// serveAskingRemote serves the scripted askingResearch agent over A2A, as
// `agentadaptor a2a serve --adapter scripted` does, and returns its base URL.
func serveAskingRemote(t *testing.T) string {
	t.Helper()
	ad, err := scripted.New(scripted.Config{ScenarioData: []byte(askingResearch), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(ad.Named("research")))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	bridge, err := a2abridge.NewServer(a2abridge.Config{
		SDK: sdk, Adapter: "research", RunOptions: []agentadaptor.RunOption{agentadaptor.WithStreaming()},
		Card: a2abridge.CardOptions{Name: "Research Agent", Description: "Asks which aspect to research", BaseURL: base},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: bridge.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = bridge.Close(ctx)
		_ = srv.Shutdown(ctx)
	})
	return base
}
