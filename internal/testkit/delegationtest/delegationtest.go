// Package delegationtest is the shared test scaffolding of the delegation
// packages (internal/testkit/delegationenv adds a delegator over fake remotes): a
// recorder of a run's bus events with generous waits ([Recorder]), the lifecycle and
// no-secret assertions every delegation test makes, programmable remote
// AG-UI agents ([NewSSERemote], [NewAGUIBridge]) and the fake A2A steps the
// tests share. It is imported by tests only; nothing in the product path
// may import it.
package delegationtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// SecretToken is the credential behind the test auth ref: no event, result,
// record or log line may ever contain it.
const SecretToken = "sk-SECRET-9f8e7d6c5b4a3210"

// SecretEnv is the environment variable SecretToken is read from
// (auth ref "env:" + SecretEnv).
const SecretEnv = "A2ADELEGATION_TEST_TOKEN"

func init() { _ = os.Setenv(SecretEnv, SecretToken) }

// LeakOptions ignores goroutines that belong to the standard library's
// connection pools and to test infrastructure.
func LeakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreAnyFunction("github.com/cucumber/godog.(*runner).concurrent"),
	}
}

// CheckLeaks verifies, at the end of a test, that no goroutine is left
// once the test's cleanups (fake servers, delegators) ran.
func CheckLeaks(t testing.TB) {
	t.Helper()
	opts := append(LeakOptions(), goleak.IgnoreCurrent())
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
}

// Ctx returns a context that ends with the test (at most 30s).
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Fake starts a fake A2A agent requiring the test secret.
func Fake(t testing.TB, opts fakea2a.Options) *fakea2a.Server {
	t.Helper()
	if opts.RequireToken == "" {
		opts.RequireToken = SecretToken
	}
	return fakea2a.New(t, opts)
}

// StreamingFake starts a streaming fake A2A agent "research" playing steps.
func StreamingFake(t testing.TB, steps ...any) *fakea2a.Server {
	return Fake(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(steps...)...)})
}

// SpecFor is the registry spec of an A2A agent served by srv, with the
// test secret as its credential.
func SpecFor(key string, srv *fakea2a.Server, mod ...func(*registry.RemoteAgentSpec)) registry.RemoteAgentSpec {
	s := registry.RemoteAgentSpec{Key: key, DisplayName: strings.ToUpper(key[:1]) + key[1:] + " Agent", Description: "Host-written description of " + key + ".",
		Protocol: delegation.ProtocolA2A, AgentCardURL: srv.CardURL(), AuthRef: "env:" + SecretEnv, Policy: registry.DefaultPolicy()}
	for _, m := range mod {
		m(&s)
	}
	return s
}

// AGUISpec is the registry spec of a remote AG-UI agent at url, with the
// test secret as its credential.
func AGUISpec(key, url string, mod ...func(*registry.RemoteAgentSpec)) registry.RemoteAgentSpec {
	s := registry.RemoteAgentSpec{Key: key, DisplayName: strings.ToUpper(key[:1]) + key[1:] + " Agent", Description: "Host-written description of " + key + ".",
		Protocol: delegation.ProtocolAGUI, EndpointURL: url, AuthRef: "env:" + SecretEnv, Policy: registry.DefaultPolicy()}
	for _, m := range mod {
		m(&s)
	}
	return s
}

// LogBuf collects slog output; safe for concurrent use.
type LogBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LogBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Recorder subscribes to a run's events and keeps them.
type Recorder struct {
	mu     sync.Mutex
	events []delegation.DelegationEvent
	notify chan struct{}
	sub    *delegation.Subscription
	done   chan struct{}
}

// Record starts recording runID's events on bus until the test ends.
func Record(t testing.TB, bus delegation.EventBus, runID string) *Recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Recorder{notify: make(chan struct{}, 1), done: make(chan struct{})}
	r.sub = bus.SubscribeRun(ctx, runID)
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

// All returns the events recorded so far.
func (r *Recorder) All() []delegation.DelegationEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delegation.DelegationEvent(nil), r.events...)
}

// WaitFor waits (generously: 20s) until pred holds for the recorded events.
func (r *Recorder) WaitFor(t testing.TB, what string, pred func([]delegation.DelegationEvent) bool) []delegation.DelegationEvent {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		evs := r.All()
		if pred(evs) {
			return evs
		}
		select {
		case <-r.notify:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; events: %s", what, KindsOf(evs))
		}
	}
}

// WaitKind waits for an event of kind k (and status, if not "").
func (r *Recorder) WaitKind(t testing.TB, k delegation.DelegationEventKind, status string) delegation.DelegationEvent {
	t.Helper()
	var found delegation.DelegationEvent
	r.WaitFor(t, string(k)+" "+status, func(evs []delegation.DelegationEvent) bool {
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

// WaitTerminals waits for n terminal events.
func (r *Recorder) WaitTerminals(t testing.TB, n int) []delegation.DelegationEvent {
	t.Helper()
	return r.WaitFor(t, "terminal events", func(evs []delegation.DelegationEvent) bool { return CountTerminals(evs) >= n })
}

// CountTerminals counts the terminal events of evs.
func CountTerminals(evs []delegation.DelegationEvent) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind.Terminal() {
			n++
		}
	}
	return n
}

// KindsOf renders evs as "kind(status) ..." for messages.
func KindsOf(evs []delegation.DelegationEvent) string {
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

// OfKind returns the events of kind k.
func OfKind(evs []delegation.DelegationEvent, k delegation.DelegationEventKind) []delegation.DelegationEvent {
	var out []delegation.DelegationEvent
	for _, ev := range evs {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// CheckLifecycle asserts the per-delegation invariants: started first,
// exactly one terminal, nothing after it but a correlation status.
func CheckLifecycle(t testing.TB, evs []delegation.DelegationEvent) {
	t.Helper()
	byDel := map[string][]delegation.DelegationEvent{}
	var order []string
	for _, ev := range evs {
		if _, ok := byDel[ev.DelegationID]; !ok {
			order = append(order, ev.DelegationID)
		}
		byDel[ev.DelegationID] = append(byDel[ev.DelegationID], ev)
	}
	for _, id := range order {
		list := byDel[id]
		if list[0].Kind != delegation.DelegationStarted {
			t.Errorf("delegation %s: first event %s, want subagent.started (%s)", id, list[0].Kind, KindsOf(list))
		}
		terms := 0
		for i, ev := range list {
			if ev.Kind.Terminal() {
				terms++
				for _, after := range list[i+1:] {
					if after.Status != delegation.StatusCorrelated {
						t.Errorf("delegation %s: %s after the terminal event", id, after.Kind)
					}
				}
			}
		}
		if terms != 1 {
			t.Errorf("delegation %s: %d terminal events, want 1 (%s)", id, terms, KindsOf(list))
		}
	}
}

// NoSecret asserts that none of the values (strings as is, anything else
// as JSON) contain SecretToken.
func NoSecret(t testing.TB, what string, values ...any) {
	t.Helper()
	for _, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := v.(string); ok {
			b = []byte(s)
		}
		if bytes.Contains(b, []byte(SecretToken)) {
			t.Errorf("%s contains the secret: %s", what, b)
		}
	}
}

// AdaptorResultArtifact is the agent-adaptor-result artifact a remote
// behind pkg/bridges/a2a sends, with summary.
func AdaptorResultArtifact(summary string) fakea2a.Step {
	return fakea2a.Artifact(fakea2a.ArtifactSpec{ID: remote.ReservedArtifactID, Name: remote.ReservedArtifactID, LastChunk: true,
		Parts: []*a2a.Part{a2a.NewDataPart(map[string]any{"summary": summary, "status": "completed", "session_id": "sess-1",
			"usage": map[string]any{"input_tokens": 3, "output_tokens": 5}, "artifacts": []any{map[string]any{"id": "notes.md", "name": "notes.md", "mime_type": "text/markdown"}}})}})
}

// TextArtifact is a complete one-part text artifact.
func TextArtifact(name, mime, text string) fakea2a.Step {
	p := a2a.NewTextPart(text)
	p.MediaType = mime
	return fakea2a.Artifact(fakea2a.ArtifactSpec{ID: name, Name: name, Parts: []*a2a.Part{p}, LastChunk: true})
}

// WaitUntil waits (generously: 20s) until cond holds, checking every few
// milliseconds. Use it for conditions with no event to wait on (a counter
// of a fake server); it is not a timing assertion.
func WaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
