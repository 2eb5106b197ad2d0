package agentadaptor_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/shellagent"
)

func TestMCPServerSpecValidate(t *testing.T) {
	tests := []struct {
		name  string
		spec  agentadaptor.MCPServerSpec
		field string // "" = valid
	}{
		{"http ok", agentadaptor.MCPServerSpec{Key: "a2a-delegation", URL: "http://127.0.0.1:1/mcp", BearerTokenEnvVar: "TOK"}, ""},
		{"stdio ok", agentadaptor.MCPServerSpec{Key: "fs", Command: "/bin/fs", Args: []string{"-x"}, Env: map[string]string{"A": "b"}}, ""},
		{"url with var", agentadaptor.MCPServerSpec{Key: "v", URL: "http://127.0.0.1:1/${AGENT_ADAPTOR_RUN_ID}"}, ""},
		{"empty key", agentadaptor.MCPServerSpec{URL: "http://x/"}, "MCPServerSpec.Key"},
		{"bad key", agentadaptor.MCPServerSpec{Key: "a b", URL: "http://x/"}, "MCPServerSpec.Key"},
		{"no command", agentadaptor.MCPServerSpec{Key: "k", Transport: agentadaptor.MCPTransportStdio}, "MCPServerSpec[k].Command"},
		{"no url", agentadaptor.MCPServerSpec{Key: "k", Transport: agentadaptor.MCPTransportHTTP}, "MCPServerSpec[k].URL"},
		{"relative url", agentadaptor.MCPServerSpec{Key: "k", URL: "/mcp"}, "MCPServerSpec[k].URL"},
		{"ftp url", agentadaptor.MCPServerSpec{Key: "k", URL: "ftp://h/mcp"}, "MCPServerSpec[k].URL"},
		{"unknown transport", agentadaptor.MCPServerSpec{Key: "k", Transport: "ws", URL: "http://h/"}, "MCPServerSpec[k].Transport"},
		{"stdio with url", agentadaptor.MCPServerSpec{Key: "k", Transport: agentadaptor.MCPTransportStdio, Command: "x", URL: "http://h/"}, "MCPServerSpec[k].URL"},
		{"http with command", agentadaptor.MCPServerSpec{Key: "k", Transport: agentadaptor.MCPTransportHTTP, URL: "http://h/", Command: "x"}, "MCPServerSpec[k].Command"},
		{"bad header", agentadaptor.MCPServerSpec{Key: "k", URL: "http://h/", Headers: map[string]string{"Bad Header": "v"}}, "MCPServerSpec[k].Headers"},
		{"header newline", agentadaptor.MCPServerSpec{Key: "k", URL: "http://h/", Headers: map[string]string{"X": "a\nb"}}, "MCPServerSpec[k].Headers"},
		{"bad token var", agentadaptor.MCPServerSpec{Key: "k", URL: "http://h/", BearerTokenEnvVar: "1X"}, "MCPServerSpec[k].BearerTokenEnvVar"},
		{"token and auth header", agentadaptor.MCPServerSpec{Key: "k", URL: "http://h/", BearerTokenEnvVar: "T", Headers: map[string]string{"authorization": "x"}}, "MCPServerSpec[k].BearerTokenEnvVar"},
		{"bad env name", agentadaptor.MCPServerSpec{Key: "k", Command: "x", Env: map[string]string{"A-B": "1"}}, "MCPServerSpec[k].Env"},
		{"negative timeout", agentadaptor.MCPServerSpec{Key: "k", Command: "x", ToolTimeout: -1}, "MCPServerSpec[k].ToolTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ce *agentadaptor.ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Fatalf("error %v, want *ConfigError for field %s", err, tt.field)
			}
		})
	}
}

func TestExpandMCPServer(t *testing.T) {
	vars := map[string]string{"AGENT_ADAPTOR_RUN_ID": "run-1", "SVC_URL": "http://127.0.0.1:5/mcp"}
	secrets := map[string]bool{"AGENT_ADAPTOR_RUN_TOKEN": true}
	got, err := agentadaptor.ExpandMCPServer(agentadaptor.MCPServerSpec{
		Key: "k", URL: "${SVC_URL}",
		Headers: map[string]string{"X-Run-ID": "${AGENT_ADAPTOR_RUN_ID}", "Authorization": "Bearer ${AGENT_ADAPTOR_RUN_TOKEN}", "X-User": "${HOME_TOKEN}"},
	}, vars, secrets)
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != "http://127.0.0.1:5/mcp" || got.Headers["X-Run-ID"] != "run-1" {
		t.Errorf("plain variables not expanded: %+v", got)
	}
	if got.Headers["Authorization"] != "Bearer ${AGENT_ADAPTOR_RUN_TOKEN}" {
		t.Errorf("secret reference must stay symbolic, got %q", got.Headers["Authorization"])
	}
	if got.Headers["X-User"] != "${HOME_TOKEN}" {
		t.Errorf("unknown references are left for the CLI, got %q", got.Headers["X-User"])
	}
	for _, bad := range []agentadaptor.MCPServerSpec{
		{Key: "k", URL: "http://h/${AGENT_ADAPTOR_RUN_TOKEN}"},
		{Key: "k", Command: "x", Args: []string{"--token=${AGENT_ADAPTOR_RUN_TOKEN}"}},
	} {
		if _, err := agentadaptor.ExpandMCPServer(bad, vars, secrets); err == nil {
			t.Errorf("secret in URL/argv accepted: %+v", bad)
		}
	}
}

// recordingManager is a RuntimeServiceManager that records Ensure/Release.
type recordingManager struct {
	mu       sync.Mutex
	ref      func(req agentadaptor.RuntimeServiceRequest) agentadaptor.RuntimeServiceRef
	fail     error
	ensured  []string
	released []string
	reqs     []agentadaptor.RuntimeServiceRequest
}

type recordedService struct {
	m   *recordingManager
	ref agentadaptor.RuntimeServiceRef
}

func (m *recordingManager) Ensure(_ context.Context, req agentadaptor.RuntimeServiceRequest) (agentadaptor.RuntimeService, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, m.fail
	}
	m.ensured = append(m.ensured, req.RunID)
	m.reqs = append(m.reqs, req)
	ref := agentadaptor.RuntimeServiceRef{ID: "svc"}
	if m.ref != nil {
		ref = m.ref(req)
	}
	return &recordedService{m: m, ref: ref}, nil
}

func (s *recordedService) Ref() agentadaptor.RuntimeServiceRef { return s.ref }
func (s *recordedService) Release(context.Context) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.m.released = append(s.m.released, s.ref.ID)
	return nil
}

func TestRuntimeServiceInjectionAndExpansion(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	ad := shell(`echo "$AGENT_ADAPTOR_RUN_TOKEN" > /dev/null; printenv SVC_SECRET >/dev/null`)
	mgr := &recordingManager{ref: func(req agentadaptor.RuntimeServiceRequest) agentadaptor.RuntimeServiceRef {
		return agentadaptor.RuntimeServiceRef{
			ID: "a2a-delegation", Name: "a2a-delegation", URL: "http://127.0.0.1:43127/mcp",
			Metadata: map[string]string{
				agentadaptor.MetaMCPEnabled: "true", agentadaptor.MetaMCPTransport: "http",
				agentadaptor.MetaMCPKey: "a2a-delegation", agentadaptor.MetaMCPAuth: "bearer",
				agentadaptor.MetaMCPToolTimeout: "10m",
			},
			SecretEnv: map[string]string{"SVC_SECRET": "svc-secret-value"},
		}
	}}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(ad), agentadaptor.WithDefaultMCP(agentadaptor.MCPServerSpec{
		Key: "static", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"X-Run-ID": "${AGENT_ADAPTOR_RUN_ID}", "X-Svc": "${AGENT_ADAPTOR_SERVICE_A2A_DELEGATION_URL}"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sdk.Run(ctx, "x", agentadaptor.WithRuntimeServices(mgr), agentadaptor.WithSessionKey("thread"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("%s: %v", res.Status, res.Failure)
	}
	seen := ad.Requests()[0]
	if len(seen.MCPServers) != 2 {
		t.Fatalf("effective MCP set = %+v", seen.MCPServers)
	}
	static, injected := seen.MCPServers[0], seen.MCPServers[1]
	if static.Headers["X-Run-ID"] != res.RunID || static.Headers["X-Svc"] != "http://127.0.0.1:43127/mcp" {
		t.Errorf("Option B expansion: %+v", static.Headers)
	}
	if injected.Key != "a2a-delegation" || injected.BearerTokenEnvVar != agentadaptor.EnvRunToken || injected.ToolTimeout != 10*time.Minute {
		t.Errorf("Option A injection: %+v", injected)
	}
	if seen.Env[agentadaptor.EnvRunToken] == "" || !seen.Secrets[agentadaptor.EnvRunToken] || !seen.Secrets["SVC_SECRET"] {
		t.Errorf("secrets not passed by environment: %v", seen.Secrets)
	}
	if mgr.reqs[0].RunID != res.RunID || mgr.reqs[0].RunToken != seen.Env[agentadaptor.EnvRunToken] || mgr.reqs[0].SessionKey != "thread" {
		t.Errorf("RuntimeServiceRequest = %+v", mgr.reqs[0])
	}
	if len(mgr.released) != 1 {
		t.Errorf("released %v", mgr.released)
	}
	if len(res.RuntimeServices) != 1 || res.RuntimeServices[0].SecretEnv != nil {
		t.Errorf("RunResult.RuntimeServices must be present and secret-free: %+v", res.RuntimeServices)
	}
}

func TestStartFailuresReleaseEverything(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	tests := []struct {
		name    string
		adapter *shellagent.Adapter
		mgrs    func() []*recordingManager
		code    agentadaptor.FailureCode
	}{
		{"binary missing", &shellagent.Adapter{Edit: func(_ *agentadaptor.AdapterRequest, inv *agentadaptor.Invocation) {
			inv.Path = "/nonexistent/agent-cli"
		}}, func() []*recordingManager { return []*recordingManager{{}} }, agentadaptor.FailureStart},
		{"second service fails", shell("true"), func() []*recordingManager {
			return []*recordingManager{{}, {fail: errors.New("port busy")}}
		}, agentadaptor.FailureRuntimeService},
		{"secret on argv", &shellagent.Adapter{Edit: func(req *agentadaptor.AdapterRequest, inv *agentadaptor.Invocation) {
			inv.Args = append(inv.Args, "--token="+req.Env[agentadaptor.EnvRunToken])
		}}, func() []*recordingManager { return []*recordingManager{{}} }, agentadaptor.FailureInvalidConfig},
		{"duplicate injected key", shell("true"), func() []*recordingManager {
			inj := func(agentadaptor.RuntimeServiceRequest) agentadaptor.RuntimeServiceRef {
				return agentadaptor.RuntimeServiceRef{ID: "x", URL: "http://127.0.0.1:1/", Metadata: map[string]string{agentadaptor.MetaMCPEnabled: "true", agentadaptor.MetaMCPKey: "dup"}}
			}
			return []*recordingManager{{ref: inj}, {ref: inj}}
		}, agentadaptor.FailureInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mgrs := tt.mgrs()
			var opts []agentadaptor.RunOption
			for _, m := range mgrs {
				opts = append(opts, agentadaptor.WithRuntimeServices(m))
			}
			root := t.TempDir()
			opts = append(opts, agentadaptor.WithTempRoot(root))
			sdk := newSDK(t, tt.adapter)
			_, err := sdk.Start(ctx, "x", opts...)
			var se *agentadaptor.StartError
			if !errors.As(err, &se) || se.Failure.Code != tt.code || se.RunID == "" {
				t.Fatalf("err = %v, want StartError with %s", err, tt.code)
			}
			for _, m := range mgrs {
				if len(m.ensured) != len(m.released) {
					t.Errorf("ensured %v released %v", m.ensured, m.released)
				}
			}
			if strings.Contains(err.Error(), "svc-secret") {
				t.Errorf("secret in error")
			}
			entries, _ := readDir(root)
			if len(entries) != 0 {
				t.Errorf("temp dir left behind: %v", entries)
			}
		})
	}
}

func TestStartConfigErrors(t *testing.T) {
	ctx := testCtx(t)
	sdk := newSDK(t, shell("true"))
	if _, err := sdk.Start(ctx, "x", agentadaptor.WithAdapterName("nope")); !errors.Is(err, agentadaptor.ErrUnknownAdapter) {
		t.Errorf("unknown adapter: %v", err)
	}
	var ce *agentadaptor.ConfigError
	if _, err := sdk.Start(ctx, "x", agentadaptor.WithMCP(agentadaptor.MCPServerSpec{Key: "bad key"})); !errors.As(err, &ce) {
		t.Errorf("bad MCP spec: %v", err)
	}
	if _, err := sdk.Start(ctx, "x", agentadaptor.WithWorkDir("/nonexistent/dir")); !errors.As(err, &ce) || ce.Field != "WithWorkDir" {
		t.Errorf("bad work dir: %v", err)
	}
	if _, err := sdk.Start(ctx, "x", agentadaptor.WithEnv(map[string]string{"A=B": "x"})); !errors.As(err, &ce) {
		t.Errorf("bad env: %v", err)
	}
	if _, err := agentadaptor.New(); err != nil {
		t.Errorf("an SDK without adapters is valid: %v", err)
	}
	empty, _ := agentadaptor.New()
	if _, err := empty.Start(ctx, "x"); !errors.Is(err, agentadaptor.ErrNoAdapter) {
		t.Errorf("no adapter: %v", err)
	}
	if _, err := agentadaptor.New(agentadaptor.WithAdapters(shell("true"), shell("true"))); !errors.As(err, &ce) {
		t.Errorf("duplicate adapters: %v", err)
	}
	if _, err := agentadaptor.New(agentadaptor.WithAdapters(shell("true")), agentadaptor.WithDefaultAdapter("x")); !errors.As(err, &ce) {
		t.Errorf("unknown default: %v", err)
	}
}

func TestPerCallOptionsOverrideDefaults(t *testing.T) {
	ctx := testCtx(t)
	ad := shell("true")
	sdk, err := agentadaptor.New(
		agentadaptor.WithAdapters(ad),
		agentadaptor.WithDefaultMCP(agentadaptor.MCPServerSpec{Key: "m", URL: "http://127.0.0.1:1/default"}),
		agentadaptor.WithRunDefaults(agentadaptor.WithModel("default-model"), agentadaptor.WithEnv(map[string]string{"A": "1", "B": "1"})),
	)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sdk.Run(ctx, "x", agentadaptor.WithModel("call-model"), agentadaptor.WithEnv(map[string]string{"B": "2"}),
		agentadaptor.WithMCP(agentadaptor.MCPServerSpec{Key: "m", URL: "http://127.0.0.1:1/call"}))
	if err != nil {
		t.Fatal(err)
	}
	seen := ad.Requests()[0]
	if seen.Model != "call-model" || seen.Env["A"] != "1" || seen.Env["B"] != "2" {
		t.Errorf("model %q env %v", seen.Model, seen.Env)
	}
	if len(seen.MCPServers) != 1 || seen.MCPServers[0].URL != "http://127.0.0.1:1/call" {
		t.Errorf("MCP override: %+v", seen.MCPServers)
	}
}

func TestSessionKeyResumes(t *testing.T) {
	ctx := testCtx(t)
	ad := shell("true")
	sdk := newSDK(t, ad)
	for range 2 {
		if _, err := sdk.Run(ctx, "x", agentadaptor.WithSessionKey("thread-9")); err != nil {
			t.Fatal(err)
		}
	}
	seen := ad.Requests()
	if seen[0].ResumeSessionID != "" || seen[1].ResumeSessionID != "shell-session" {
		t.Errorf("resume ids: %q then %q", seen[0].ResumeSessionID, seen[1].ResumeSessionID)
	}
}

// observingService records RunCancelling and Release in order.
type observingService struct {
	mu     sync.Mutex
	events []string
}

func (s *observingService) Ensure(context.Context, agentadaptor.RuntimeServiceRequest) (agentadaptor.RuntimeService, error) {
	return s, nil
}
func (s *observingService) Ref() agentadaptor.RuntimeServiceRef {
	return agentadaptor.RuntimeServiceRef{ID: "obs"}
}
func (s *observingService) RunCancelling() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, "cancelling")
}
func (s *observingService) Release(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, "released")
	return nil
}

func TestRunCancelObserverHearsCancelBeforeTheChildExits(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	obs := &observingService{}
	// The child ignores SIGINT: without the observer the service would only
	// learn of the cancel after the grace period, at Release.
	sdk := newSDK(t, shell("trap '' INT; sleep 30"))
	h, err := sdk.Start(ctx, "x", agentadaptor.WithRuntimeServices(obs), agentadaptor.WithCancelGrace(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if strings.Join(obs.events, ",") != "cancelling,released" {
		t.Fatalf("events %v, want cancelling then released", obs.events)
	}
}

// deadlineService records the deadline of the context Release gets.
type deadlineService struct {
	mu       sync.Mutex
	deadline time.Time
	released bool
}

func (s *deadlineService) Ensure(context.Context, agentadaptor.RuntimeServiceRequest) (agentadaptor.RuntimeService, error) {
	return s, nil
}
func (s *deadlineService) Ref() agentadaptor.RuntimeServiceRef {
	return agentadaptor.RuntimeServiceRef{ID: "svc"}
}
func (s *deadlineService) Release(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deadline, _ = ctx.Deadline()
	s.released = true
	return nil
}

// TestReleaseTimeout checks that WithReleaseTimeout sets the bound on
// releasing a run's runtime services: Release gets a context whose deadline
// is that far away (DefaultReleaseTimeout, 10s, without the option).
func TestReleaseTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	svc := &deadlineService{}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(shell(`true`)), agentadaptor.WithReleaseTimeout(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := sdk.Run(testCtx(t), "x", agentadaptor.WithRuntimeServices(svc)); err != nil {
		t.Fatal(err)
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	// An hour against 10s: no scheduling delay comes near the difference.
	if !svc.released || svc.deadline.Sub(start) < 30*time.Minute {
		t.Fatalf("released %v with a deadline %v after the start, want about an hour", svc.released, svc.deadline.Sub(start))
	}
}
