package agentadaptor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/shellagent"
)

// shell returns the test adapter of these tests (internal/testkit/shellagent): a
// /bin/sh script whose stdout lines are StreamPayload JSON (or anything
// else, which the parser rejects). It lets the core tests drive process
// supervision without a real CLI. Its runs report the session
// "shell-session".
func shell(script string) *shellagent.Adapter {
	return &shellagent.Adapter{Script: script, SessionID: "shell-session"}
}

// textScript prints one whole text message (message m1).
func textScript(text string) string { return shellagent.Text("m1", text) }

func newSDK(t testing.TB, adapters ...agentadaptor.Adapter) *agentadaptor.SDK {
	t.Helper()
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(adapters...))
	if err != nil {
		t.Fatal(err)
	}
	return sdk
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func kinds(ps []agentadaptor.StreamPayload) []string {
	var out []string
	for _, p := range ps {
		k := string(p.Kind)
		if k == "" {
			k = "custom:" + p.Name
		}
		out = append(out, k)
	}
	return out
}

// alive reports whether pid is a live, non-zombie process.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	data, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i > 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func readDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, err
}
