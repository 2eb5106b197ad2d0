package a2a_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
	a2aclient "github.com/seed0634/agentadaptor/pkg/clients/a2a"
)

func TestMain(m *testing.M) {
	scripted.MaybeRunAgent()
	os.Exit(m.Run())
}

// bridgeEnv is a bridge over the scripted adapter on a loopback httptest
// server.
type bridgeEnv struct {
	srv    *httptest.Server
	bridge *a2abridge.Server
}

func (e *bridgeEnv) cardURL() string { return e.srv.URL + a2abridge.PathAgentCard }

// close stops the HTTP server and the bridge (its runs) in order.
func (e *bridgeEnv) close(t *testing.T) {
	t.Helper()
	e.srv.CloseClientConnections()
	e.srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.bridge.Close(ctx); err != nil {
		t.Errorf("bridge close: %v", err)
	}
}

func writeScenario(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startBridge serves the scripted adapter with scenario over A2A on a
// loopback listener; the card's base URL is the listener's. configure, if
// given, adjusts the configuration. The environment is closed by t.Cleanup
// unless the test closes it first.
func startBridge(t *testing.T, scenario string, exposure a2abridge.Exposure, configure ...func(*a2abridge.Config)) *bridgeEnv {
	t.Helper()
	ad, err := scripted.New(scripted.Config{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(ad))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	cfg := a2abridge.Config{
		SDK: sdk, Adapter: scripted.Name, Exposure: exposure,
		RunOptions: []agentadaptor.RunOption{
			agentadaptor.WithAdapterOption(scripted.OptionScenario, writeScenario(t, scenario)),
			agentadaptor.WithCancelGrace(2 * time.Second),
			// The race runtime of the re-executed test binary sleeps 1s at exit.
			agentadaptor.WithEnv(map[string]string{"GORACE": "atexit_sleep_ms=0"}),
		},
		Card: a2abridge.CardOptions{Name: "scripted-remote", BaseURL: "http://" + srv.Listener.Addr().String()},
	}
	for _, f := range configure {
		f(&cfg)
	}
	b, err := a2abridge.NewServer(cfg)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	srv.Config.Handler = b.Handler()
	srv.Start()
	env := &bridgeEnv{srv: srv, bridge: b}
	t.Cleanup(func() { env.close(t) })
	return env
}

func newClient(t *testing.T, env *bridgeEnv, transport a2aclient.TransportProtocol) *a2aclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := a2aclient.Options{}
	if transport != "" {
		opts.PreferredTransports = []a2aclient.TransportProtocol{transport}
	}
	c, err := a2aclient.NewClient(ctx, env.cardURL(), opts)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	if transport != "" && c.Transport() != transport {
		t.Fatalf("client chose %s, want %s", c.Transport(), transport)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// collected is what one streaming call delivered.
type collected struct {
	events    []a2a.Event
	states    []a2a.TaskState
	taskID    a2a.TaskID
	contextID string
	final     a2a.TaskState
	finalMsg  string
}

// chunks returns the artifact updates of artifacts named name, in order.
func (c *collected) chunks(name string) []*a2a.TaskArtifactUpdateEvent {
	var out []*a2a.TaskArtifactUpdateEvent
	for _, ev := range c.events {
		if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok && a.Artifact.Name == name {
			out = append(out, a)
		}
	}
	return out
}

// result decodes the last agent-adaptor-result artifact.
func (c *collected) result(t *testing.T) map[string]any {
	t.Helper()
	rs := c.chunks(a2abridge.ArtifactAgentAdaptorResult)
	if len(rs) == 0 {
		t.Fatalf("no %s artifact among %d events", a2abridge.ArtifactAgentAdaptorResult, len(c.events))
	}
	return resultData(t, rs[len(rs)-1].Artifact)
}

func resultData(t *testing.T, a *a2a.Artifact) map[string]any {
	t.Helper()
	if len(a.Parts) != 1 {
		t.Fatalf("result artifact has %d parts, want 1", len(a.Parts))
	}
	m, ok := a.Parts[0].Data().(map[string]any)
	if !ok {
		t.Fatalf("result artifact part is %T, want a data object", a.Parts[0].Data())
	}
	return m
}

// drain reads a stream to its end.
func drain(t *testing.T, s *a2aclient.Stream) *collected {
	t.Helper()
	c := &collected{}
	for s.Next() {
		ev := s.Event()
		c.events = append(c.events, ev)
		if st, ok := a2aclient.StateOf(ev); ok {
			c.states = append(c.states, st)
		}
		if u, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && u.Status.Message != nil {
			c.finalMsg = a2aclient.TextOf(u.Status.Message.Parts)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	c.taskID, c.contextID, c.final = s.TaskID(), s.ContextID(), s.State()
	return c
}

func send(t *testing.T, c *a2aclient.Client, req a2aclient.SendRequest) *collected {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := c.SendStreaming(ctx, req)
	if err != nil {
		t.Fatalf("SendStreaming: %v", err)
	}
	defer s.Close()
	return drain(t, s)
}

// textOfArtifact joins the text parts of chunks of one artifact id.
func textOfChunks(chunks []*a2a.TaskArtifactUpdateEvent) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString(a2aclient.TextOf(c.Artifact.Parts))
	}
	return b.String()
}

// byArtifact groups chunks by artifact id, in first-seen order.
func byArtifact(chunks []*a2a.TaskArtifactUpdateEvent) [][]*a2a.TaskArtifactUpdateEvent {
	idx := map[a2a.ArtifactID]int{}
	var out [][]*a2a.TaskArtifactUpdateEvent
	for _, c := range chunks {
		i, ok := idx[c.Artifact.ID]
		if !ok {
			i = len(out)
			idx[c.Artifact.ID] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], c)
	}
	return out
}

// processGone reports whether pid no longer exists (or is a zombie).
func processGone(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] == 'Z'
	}
	return false
}

// childAgents lists the pids of this process's children that run the
// scripted agent.
func childAgents(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc: cannot observe child processes")
	}
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(self) || f[0] == "Z" {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmd), "--scenario") {
			out = append(out, pid)
		}
	}
	return out
}
