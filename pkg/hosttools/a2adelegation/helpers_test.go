package a2adelegation

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor/internal/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
)

func TestMain(m *testing.M) {
	scripted.MaybeRunAgent()
	goleak.VerifyTestMain(m, leakOpts()...)
}

// leakOpts ignores goroutines that belong to the standard library's
// connection pools and to test infrastructure, not to this package.
func leakOpts() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreAnyFunction("github.com/cucumber/godog.(*runner).concurrent"),
	}
}

// checkLeaks verifies, at the end of a test, that no goroutine is left
// once the test's cleanups (fake servers, services) ran.
func checkLeaks(t *testing.T) {
	t.Helper()
	opts := append(leakOpts(), goleak.IgnoreCurrent())
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
}

// secretToken is the credential behind the test auth ref.
const secretToken = "sk-SECRET-9f8e7d6c5b4a3210"

const secretEnv = "A2ADELEGATION_TEST_TOKEN"

func init() { _ = os.Setenv(secretEnv, secretToken) }

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fake starts a fake A2A agent requiring the test secret.
func fake(t *testing.T, opts fakea2a.Options) *fakea2a.Server {
	t.Helper()
	if opts.RequireToken == "" {
		opts.RequireToken = secretToken
	}
	return fakea2a.New(t, opts)
}

func streamingFake(t *testing.T, steps ...any) *fakea2a.Server {
	return fake(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(steps...)...)})
}

func specFor(key string, srv *fakea2a.Server, mod ...func(*RemoteAgentSpec)) RemoteAgentSpec {
	s := RemoteAgentSpec{Key: key, DisplayName: strings.ToUpper(key[:1]) + key[1:] + " Agent", Description: "Host-written description of " + key + ".",
		Protocol: ProtocolA2A, AgentCardURL: srv.CardURL(), AuthRef: "env:" + secretEnv, Policy: DefaultPolicy()}
	for _, m := range mod {
		m(&s)
	}
	return s
}

// logBuf collects slog output.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type env struct {
	svc  *Service
	bus  *MemoryBus
	logs *logBuf
}

// newEnv builds a Service for specs (Close registered as a cleanup).
func newEnv(t *testing.T, specs []RemoteAgentSpec, mod ...func(*Config)) *env {
	t.Helper()
	reg, err := NewRegistry(specs...)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{bus: NewMemoryBus(), logs: &logBuf{}}
	cfg := Config{Registry: reg, Bus: e.bus, Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		CancelTimeout: 2 * time.Second, PollInterval: 20 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond,
		RecoverBackoff: 20 * time.Millisecond, CleanupInterval: 20 * time.Millisecond, CleanupAttempts: 3}
	for _, m := range mod {
		m(&cfg)
	}
	svc, err := New(tctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := svc.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

// recorder subscribes to a run's events and keeps them.
type recorder struct {
	mu     sync.Mutex
	events []DelegationEvent
	notify chan struct{}
	sub    *Subscription
	done   chan struct{}
}

func (e *env) record(t *testing.T, runID string) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{notify: make(chan struct{}, 1), done: make(chan struct{})}
	r.sub = e.bus.SubscribeRun(ctx, runID)
	go func() {
		defer close(r.done)
		for ev := range r.sub.C {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
			select {
			case r.notify <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		r.sub.Close()
		<-r.done
	})
	return r
}

func (r *recorder) all() []DelegationEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]DelegationEvent(nil), r.events...)
}

// waitFor waits (generously) until pred holds for the recorded events.
func (r *recorder) waitFor(t *testing.T, what string, pred func([]DelegationEvent) bool) []DelegationEvent {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		evs := r.all()
		if pred(evs) {
			return evs
		}
		select {
		case <-r.notify:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; events: %s", what, kindsOf(evs))
		}
	}
}

func (r *recorder) waitKind(t *testing.T, k DelegationEventKind, status string) DelegationEvent {
	t.Helper()
	var found DelegationEvent
	r.waitFor(t, string(k)+" "+status, func(evs []DelegationEvent) bool {
		for _, ev := range evs {
			if ev.Kind == k && (status == "" || ev.Status == status) {
				found = ev
				return true
			}
		}
		return false
	})
	return found
}

func (r *recorder) waitTerminals(t *testing.T, n int) []DelegationEvent {
	t.Helper()
	return r.waitFor(t, "terminal events", func(evs []DelegationEvent) bool { return countTerminals(evs) >= n })
}

func countTerminals(evs []DelegationEvent) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind.Terminal() {
			n++
		}
	}
	return n
}

func kindsOf(evs []DelegationEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(string(ev.Kind))
		if ev.Status != "" {
			b.WriteString("(" + ev.Status + ")")
		}
		b.WriteString(" ")
	}
	return b.String()
}

func ofKind(evs []DelegationEvent, k DelegationEventKind) []DelegationEvent {
	var out []DelegationEvent
	for _, ev := range evs {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// checkLifecycle asserts the per-delegation invariants: started first,
// exactly one terminal, nothing after it but a correlation status.
func checkLifecycle(t *testing.T, evs []DelegationEvent) {
	t.Helper()
	byDel := map[string][]DelegationEvent{}
	var order []string
	for _, ev := range evs {
		if _, ok := byDel[ev.DelegationID]; !ok {
			order = append(order, ev.DelegationID)
		}
		byDel[ev.DelegationID] = append(byDel[ev.DelegationID], ev)
	}
	for _, id := range order {
		list := byDel[id]
		if list[0].Kind != DelegationStarted {
			t.Errorf("delegation %s: first event %s, want subagent.started (%s)", id, list[0].Kind, kindsOf(list))
		}
		terms := 0
		for i, ev := range list {
			if ev.Kind.Terminal() {
				terms++
				for _, after := range list[i+1:] {
					if after.Status != StatusCorrelated {
						t.Errorf("delegation %s: %s after the terminal event", id, after.Kind)
					}
				}
			}
		}
		if terms != 1 {
			t.Errorf("delegation %s: %d terminal events, want 1 (%s)", id, terms, kindsOf(list))
		}
	}
}

// noSecret asserts that none of the values contain the test secret.
func noSecret(t *testing.T, what string, values ...any) {
	t.Helper()
	for _, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := v.(string); ok {
			b = []byte(s)
		}
		if bytes.Contains(b, []byte(secretToken)) {
			t.Errorf("%s contains the secret: %s", what, b)
		}
	}
}

func adaptorResultArtifact(summary string) fakea2a.Step {
	return fakea2a.Artifact(fakea2a.ArtifactSpec{ID: ArtifactAgentAdaptorResult, Name: ArtifactAgentAdaptorResult, LastChunk: true,
		Parts: []*a2a.Part{a2a.NewDataPart(map[string]any{"summary": summary, "status": "completed", "session_id": "sess-1",
			"usage": map[string]any{"input_tokens": 3, "output_tokens": 5}, "artifacts": []any{map[string]any{"id": "notes.md", "name": "notes.md", "mime_type": "text/markdown"}}})}})
}

func textArtifact(name, mime, text string) fakea2a.Step {
	p := a2a.NewTextPart(text)
	p.MediaType = mime
	return fakea2a.Artifact(fakea2a.ArtifactSpec{ID: name, Name: name, Parts: []*a2a.Part{p}, LastChunk: true})
}
