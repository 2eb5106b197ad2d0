package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
)

// cafeNote is the non-ASCII markdown artifact of TestBrowserArtifactCharset.
const cafeNote = "Café – “quotes”"

// TestBrowserArtifactCharset opens a remote's markdown artifact with
// non-ASCII text in Chromium, from the web UI's artifact link: it must read
// as written (the host serves text with charset=utf-8; without it Chromium
// shows "CafÃ© â€“ â€œquotesâ€\u009d").
func TestBrowserArtifactCharset(t *testing.T) {
	root, _ := filepath.Abs("../..")
	_, err := exec.LookPath("chromium")
	testenv.Require(t, "Debian's chromium", err)
	_, err = os.Stat(filepath.Join(root, "tests/browser/node_modules/playwright-core"))
	testenv.Require(t, "playwright-core in tests/browser/node_modules", err)

	remote := serveScriptedRemote(t, "- artifact: {name: cafe.md, mime_type: text/markdown, text: \""+cafeNote+"\"}\n- say: The note is written.\n")
	h := serveHost(t, &hostconfig.Config{
		Parent: hostconfig.Parent{Adapter: "scripted", Scenario: filepath.Join(root, "internal/hostyaml/demo/parent.yaml")},
		Agents: []hostconfig.Agent{{Key: "research", DisplayName: "Research Agent", Protocol: "a2a", AgentCardURL: remote + a2abridge.PathAgentCard}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(root, "tests/browser/artifact-charset.mjs"), h)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("artifact-charset.mjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		Text         string `json:"text"`
		CharacterSet string `json:"characterSet"`
		ContentType  string `json:"contentType"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &got); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if got.Text != cafeNote || got.CharacterSet != "UTF-8" {
		t.Errorf("the browser shows %q (%s, Content-Type %q), want %q", got.Text, got.CharacterSet, got.ContentType, cafeNote)
	}
}

// serveScriptedRemote serves a scripted agent with scenario over A2A and
// returns its base URL.
func serveScriptedRemote(t *testing.T, scenario string) string {
	t.Helper()
	ad, err := scripted.New(scripted.Config{ScenarioData: []byte("repeat: true\nsteps:\n" + indent(scenario)), StateDir: t.TempDir()})
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
		Card: a2abridge.CardOptions{Name: "Research Agent", BaseURL: base},
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

func indent(s string) string {
	var b bytes.Buffer
	for line := range bytes.SplitSeq([]byte(s), []byte("\n")) {
		if len(line) > 0 {
			b.WriteString("  ")
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
