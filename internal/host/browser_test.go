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

	"github.com/seed0634/agentadaptor/internal/host"
	"github.com/seed0634/agentadaptor/internal/testenv"
)

// TestBrowserEndToEnd drives the embedded web UI in Debian's Chromium with
// playwright-core (tests/browser/e2e.mjs) against the demo host: the nested
// subagent panel streams text before the tool result and ends finished; Stop
// cancels the run; a reload mid-delegation resumes through Last-Event-ID.
// Screenshots land in $SCREENSHOT_DIR (default tests/browser/out).
func TestBrowserEndToEnd(t *testing.T) {
	root, _ := filepath.Abs("../..")
	_, err := exec.LookPath("chromium")
	testenv.Require(t, "Debian's chromium", err)
	_, err = os.Stat(filepath.Join(root, "tests/browser/node_modules/playwright-core"))
	testenv.Require(t, "playwright-core in tests/browser/node_modules", err)
	h, err := host.New(context.Background(), nil, host.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
		_ = srv.Shutdown(ctx)
	}()
	shots := os.Getenv("SCREENSHOT_DIR")
	if shots == "" {
		shots = filepath.Join(root, "tests/browser/out")
	}
	cmd := exec.Command("node", filepath.Join(root, "tests/browser/e2e.mjs"), "http://"+ln.Addr().String(), "--expect-delegation")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "SCREENSHOT_DIR="+shots)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil || !strings.Contains(string(out), " 0 failed") {
		t.Fatalf("browser end-to-end failed: %v", err)
	}
}
