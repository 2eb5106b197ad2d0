package agentadaptor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// shellAdapter runs a /bin/sh script whose stdout lines are StreamPayload JSON
// (or anything else, which the parser rejects). It lets the core tests drive
// process supervision without a real CLI.
type shellAdapter struct {
	name   string
	script string
	// prepare, if set, may edit the invocation (e.g. to misbehave).
	prepare func(req *agentadaptor.AdapterRequest, inv *agentadaptor.Invocation)
}

func (a *shellAdapter) Name() string {
	if a.name == "" {
		return "shell"
	}
	return a.name
}

func (a *shellAdapter) Prepare(_ context.Context, req *agentadaptor.AdapterRequest) (*agentadaptor.Invocation, error) {
	script := a.script
	if s := req.Options["script"]; s != "" {
		script = s
	}
	inv := &agentadaptor.Invocation{Path: "/bin/sh", Args: []string{"-c", script}, Parser: &jsonParser{}}
	if a.prepare != nil {
		a.prepare(req, inv)
	}
	return inv, nil
}

type jsonParser struct{ last string }

func (p *jsonParser) ParseLine(b []byte, emit agentadaptor.Emitter) error {
	var sp agentadaptor.StreamPayload
	if err := json.Unmarshal(b, &sp); err != nil {
		return fmt.Errorf("not a payload: %w", err)
	}
	if sp.Kind == agentadaptor.KindTextEnd {
		p.last = sp.Text
	}
	emit(sp)
	return nil
}

func (p *jsonParser) Finish(agentadaptor.ExitStatus, agentadaptor.Emitter) agentadaptor.Outcome {
	return agentadaptor.Outcome{Output: p.last, SessionID: "shell-session"}
}

// echo returns a shell command printing the JSON of p.
func echo(p agentadaptor.StreamPayload) string {
	b, _ := json.Marshal(p)
	return "echo '" + string(b) + "'"
}

func textScript(text string) string {
	return strings.Join([]string{
		echo(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextStart, MessageID: "m1"}),
		echo(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: "m1", Delta: text}),
		echo(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextEnd, MessageID: "m1", Text: text}),
	}, "; ")
}

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

func collect(ctx context.Context, t testing.TB, h *agentadaptor.RunHandle) []agentadaptor.StreamPayload {
	t.Helper()
	var out []agentadaptor.StreamPayload
	for {
		select {
		case p, ok := <-h.StreamEvents():
			if !ok {
				return out
			}
			out = append(out, p)
		case <-ctx.Done():
			t.Fatalf("stream did not close: %v", ctx.Err())
		}
	}
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

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, err
}
