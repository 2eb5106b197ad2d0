package adaptertest

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// Harness tells the suite how to drive one adapter.
type Harness struct {
	// Adapter is the adapter under test.
	Adapter agentadaptor.Adapter
	// Prompt is sent with every run (default "hello").
	Prompt string
	// Plain are run options for a run that completes successfully and
	// produces at least one text message.
	Plain []agentadaptor.RunOption
	// Slow are run options for a run that keeps going until it is
	// cancelled (it must emit run.started and then block).
	Slow []agentadaptor.RunOption
	// AdapterOptions are the per-run adapter options (WithAdapterOption) a
	// direct Prepare call needs to succeed, e.g. a scenario or fixture.
	AdapterOptions map[string]string
	// Deadline bounds each run (default 60s). It is a safety net, not a
	// timing assertion.
	Deadline time.Duration
}

const secretValue = "s3cr3t-conformance-token-value"

// Run runs the conformance suite as subtests of t.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Prompt == "" {
		h.Prompt = "hello"
	}
	if h.Deadline == 0 {
		h.Deadline = 60 * time.Second
	}
	t.Run("OneTerminalMonotonicSeq", func(t *testing.T) { testTerminal(t, h) })
	t.Run("Cancellation", func(t *testing.T) { testCancel(t, h) })
	t.Run("MCPInjectionReachesProfile", func(t *testing.T) { testMCPProfile(t, h) })
	t.Run("RuntimeInjectedMCP", func(t *testing.T) { testRuntimeInjected(t, h) })
	t.Run("TempDirRemoved", func(t *testing.T) { testTempDir(t, h) })
}

func newSDK(t *testing.T, h Harness) *agentadaptor.SDK {
	t.Helper()
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(h.Adapter))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return sdk
}

// Collect reads every payload of h until the channel closes or ctx ends.
func Collect(ctx context.Context, t testing.TB, h *agentadaptor.RunHandle) []agentadaptor.StreamPayload {
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
			t.Fatalf("stream of %s did not close: %v (got %d payloads)", h.RunID(), ctx.Err(), len(out))
			return out
		}
	}
}

// CheckStream asserts the stream invariants every run has: run.started
// first, exactly one terminal payload and it is last, RunID on every payload,
// Seq strictly increasing.
func CheckStream(t testing.TB, runID string, ps []agentadaptor.StreamPayload) {
	t.Helper()
	if len(ps) == 0 {
		t.Fatalf("no payloads")
	}
	if ps[0].Kind != agentadaptor.KindRunStarted {
		t.Errorf("first payload is %q, want run.started", ps[0].Kind)
	}
	terminals := 0
	var last uint64
	for i, p := range ps {
		if p.RunID != runID {
			t.Errorf("payload %d has RunID %q, want %q", i, p.RunID, runID)
		}
		if p.Seq <= last {
			t.Errorf("payload %d has Seq %d after %d", i, p.Seq, last)
		}
		last = p.Seq
		if p.Kind.Terminal() {
			terminals++
			if i != len(ps)-1 {
				t.Errorf("terminal payload %q at %d is not last (%d payloads)", p.Kind, i, len(ps))
			}
		}
	}
	if terminals != 1 {
		t.Errorf("got %d terminal payloads, want exactly 1", terminals)
	}
}

func testTerminal(t *testing.T, h Harness) {
	ctx, cancel := context.WithTimeout(context.Background(), h.Deadline)
	defer cancel()
	sdk := newSDK(t, h)
	for _, streaming := range []bool{false, true} {
		opts := append([]agentadaptor.RunOption{}, h.Plain...)
		if streaming {
			opts = append(opts, agentadaptor.WithStreaming())
		}
		hd, err := sdk.Start(ctx, h.Prompt, opts...)
		if err != nil {
			t.Fatalf("Start(streaming=%v): %v", streaming, err)
		}
		ps := Collect(ctx, t, hd)
		CheckStream(t, hd.RunID(), ps)
		res, err := hd.Wait(ctx)
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if res.Status != agentadaptor.StatusCompleted {
			t.Fatalf("streaming=%v: status %s (%v), want completed; stderr: %s", streaming, res.Status, res.Failure, res.RawStreams.Stderr)
		}
		if ps[len(ps)-1].Kind != agentadaptor.KindRunFinished {
			t.Errorf("terminal is %q, want run.finished", ps[len(ps)-1].Kind)
		}
		texts := 0
		for _, p := range ps {
			if p.Kind == agentadaptor.KindTextStart {
				texts++
			}
		}
		if texts == 0 {
			t.Errorf("streaming=%v: no text message in %d payloads", streaming, len(ps))
		}
	}
}

func testCancel(t *testing.T, h Harness) {
	ctx, cancel := context.WithTimeout(context.Background(), h.Deadline)
	defer cancel()
	sdk := newSDK(t, h)
	hd, err := sdk.Start(ctx, h.Prompt, append(h.Slow, agentadaptor.WithCancelGrace(2*time.Second))...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	first := <-hd.StreamEvents()
	if first.Kind != agentadaptor.KindRunStarted {
		t.Fatalf("first payload %q, want run.started", first.Kind)
	}
	if err := hd.Cancel(ctx); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	rest := Collect(ctx, t, hd)
	CheckStream(t, hd.RunID(), append([]agentadaptor.StreamPayload{first}, rest...))
	res, _ := hd.Wait(ctx)
	if res.Status != agentadaptor.StatusCancelled {
		t.Fatalf("status %s, want cancelled", res.Status)
	}
	if last := rest[len(rest)-1]; last.Kind != agentadaptor.KindRunCancelled {
		t.Errorf("terminal %q, want run.cancelled", last.Kind)
	}
}

func testMCPProfile(t *testing.T, h Harness) {
	tmp := t.TempDir()
	req := &agentadaptor.AdapterRequest{
		RunID: "run-conformance", Prompt: h.Prompt, WorkDir: tmp, TempDir: filepath.Join(tmp, "run"),
		MCPServers: []agentadaptor.MCPServerSpec{
			{Key: "conf-http", Transport: agentadaptor.MCPTransportHTTP, URL: "http://127.0.0.1:9/mcp", BearerTokenEnvVar: "CONF_TOKEN", Required: true, ToolTimeout: 7 * time.Minute},
			{Key: "conf-stdio", Transport: agentadaptor.MCPTransportStdio, Command: "/bin/true", Env: map[string]string{"CONF_SECRET": "${CONF_TOKEN}"}},
		},
		Env:     map[string]string{"CONF_TOKEN": secretValue, agentadaptor.EnvRunID: "run-conformance"},
		Secrets: map[string]bool{"CONF_TOKEN": true},
		Options: map[string]string{},
	}
	maps.Copy(req.Options, h.AdapterOptions)
	if err := os.MkdirAll(req.TempDir, 0o700); err != nil {
		t.Fatal(err)
	}
	inv, err := h.Adapter.Prepare(context.Background(), req)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if inv.Cleanup != nil {
		defer func() {
			if err := inv.Cleanup(); err != nil {
				t.Errorf("Cleanup: %v", err)
			}
		}()
	}
	argv := strings.Join(append([]string{inv.Path}, inv.Args...), "\x00")
	if strings.Contains(argv, secretValue) {
		t.Errorf("secret value appears on the command line: %q", inv.Args)
	}
	for k, v := range inv.Env {
		if strings.Contains(v, secretValue) {
			t.Errorf("adapter copies the secret into its own Env[%s]; it must rely on the SDK's", k)
		}
	}
	var profile strings.Builder
	profile.WriteString(argv)
	tokenByValue := false
	if cp, ok := inv.Conversation.(ConversationProfile); ok {
		// What the child receives over the conversation (never argv or a
		// file) may carry the token itself: the pipe is the run's own.
		p := cp.MCPProfile()
		profile.WriteString("\x00" + p)
		tokenByValue = strings.Contains(p, secretValue)
	}
	for _, dir := range []string{req.TempDir, req.WorkDir} {
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			if strings.Contains(string(data), secretValue) {
				t.Errorf("secret value written to %s", path)
			}
			profile.WriteString("\x00" + string(data))
			return nil
		})
	}
	for _, key := range []string{"conf-http", "conf-stdio"} {
		if !strings.Contains(profile.String(), key) {
			t.Errorf("MCP server %q does not reach the adapter's profile (argv or per-run files)", key)
		}
	}
	if !strings.Contains(profile.String(), "CONF_TOKEN") && !tokenByValue {
		t.Errorf("the bearer token variable name CONF_TOKEN does not reach the profile: the CLI could not authenticate")
	}
}

// ConversationProfile is implemented by the [agentadaptor.Conversation] of
// an adapter that hands the run's MCP set to its child over the
// conversation rather than on argv or in a file (the ACP adapter sends it
// in session/new): MCPProfile returns what the child will receive about
// the MCP servers. The suite then checks it like a per-run file, except
// that it may hold the bearer token's value, which travels over the run's
// own stdin pipe only.
type ConversationProfile interface {
	MCPProfile() string
}

// injector is a RuntimeServiceManager that injects an MCP server (Option A).
type injector struct{ released chan string }

type injected struct {
	ref      agentadaptor.RuntimeServiceRef
	released chan string
}

func (i *injector) Ensure(_ context.Context, req agentadaptor.RuntimeServiceRequest) (agentadaptor.RuntimeService, error) {
	return &injected{released: i.released, ref: agentadaptor.RuntimeServiceRef{
		ID: "conf-injected", Name: "conf-injected", URL: "http://127.0.0.1:9/mcp/" + req.RunID,
		Metadata: map[string]string{
			agentadaptor.MetaMCPEnabled: "true", agentadaptor.MetaMCPKey: "conf-injected",
			agentadaptor.MetaMCPAuth: "bearer",
		},
	}}, nil
}

func (s *injected) Ref() agentadaptor.RuntimeServiceRef { return s.ref }
func (s *injected) Release(context.Context) error {
	s.released <- s.ref.ID
	return nil
}

func testRuntimeInjected(t *testing.T, h Harness) {
	ctx, cancel := context.WithTimeout(context.Background(), h.Deadline)
	defer cancel()
	sdk := newSDK(t, h)
	inj := &injector{released: make(chan string, 1)}
	res, err := sdk.Run(ctx, h.Prompt, append(h.Plain, agentadaptor.WithRuntimeServices(inj))...)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	found := false
	for _, m := range res.MCPServers {
		if m.Key == "conf-injected" && m.BearerTokenEnvVar == agentadaptor.EnvRunToken {
			found = true
		}
	}
	if !found {
		t.Errorf("runtime-injected MCP server missing from the effective set: %+v", res.MCPServers)
	}
	select {
	case <-inj.released:
	default:
		t.Errorf("runtime service not released when Run returned")
	}
}

func testTempDir(t *testing.T, h Harness) {
	ctx, cancel := context.WithTimeout(context.Background(), h.Deadline)
	defer cancel()
	sdk := newSDK(t, h)
	root := t.TempDir()
	if _, err := sdk.Run(ctx, h.Prompt, append(h.Plain, agentadaptor.WithTempRoot(root))...); err != nil {
		t.Fatalf("Run: %v", err)
	}
	hd, err := sdk.Start(ctx, h.Prompt, append(h.Slow, agentadaptor.WithTempRoot(root))...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	<-hd.StreamEvents()
	if err := hd.Cancel(ctx); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 0 {
		t.Errorf("temp root not empty after runs: %v", entries)
	}
}
