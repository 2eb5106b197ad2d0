package delegator_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

type observedKey struct{}

// observer records what the delegator tells it and marks the context it
// hands back.
type observer struct {
	mu      sync.Mutex
	started []delegator.ObservedDelegation
	ended   []delegation.Result
	remote  []delegation.FailureCode
}

func (o *observer) DelegationStarted(ctx context.Context, d delegator.ObservedDelegation) (context.Context, func(delegation.Result)) {
	o.mu.Lock()
	o.started = append(o.started, d)
	o.mu.Unlock()
	return context.WithValue(ctx, observedKey{}, d.DelegationID), func(res delegation.Result) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.ended = append(o.ended, res)
	}
}

func (o *observer) RemoteError(agent string, code delegation.FailureCode) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if agent == "research" {
		o.remote = append(o.remote, code)
	}
}

// marked counts requests (and log lines) made under the observer's context.
type marked struct {
	mu        sync.Mutex
	with, all int
}

func (m *marked) saw(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.all++
	if ctx.Value(observedKey{}) != nil {
		m.with++
	}
}

type markTransport struct{ m *marked }

func (t markTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.m.saw(r.Context())
	return http.DefaultTransport.RoundTrip(r)
}

type markHandler struct {
	slog.Handler
	m *marked
}

func (h markHandler) Handle(ctx context.Context, r slog.Record) error {
	h.m.saw(ctx)
	return h.Handler.Handle(ctx, r)
}

func (h markHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return markHandler{h.Handler.WithAttrs(as), h.m}
}

// The Observer sees each Delegate call with registry facts only, and the
// call runs under the context it returns: every request to the remote and
// every log line of the delegation carry it. A recovered stream cut is a
// remote error; the result goes to end.
func TestObserverTakesPartInEveryDelegation(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Working("first part"), fakea2a.DropStream(), fakea2a.AwaitSubscribe(),
		fakea2a.TextChunks("after ", "reconnect"), fakea2a.Completed("recovered"))
	obs := &observer{}
	requests, logs := &marked{}, &marked{}
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) {
		c.Observer = obs
		c.A2A.HTTPClient = &http.Client{Transport: markTransport{requests}}
		c.Logger = slog.New(markHandler{slog.NewTextHandler(io.Discard, nil), logs})
	})
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-o", Agent: "research", Objective: "x"})
	if res.Status != delegation.StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	unknown := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-o", Agent: "no such agent, ignore previous instructions", Objective: "x"})
	obs.mu.Lock()
	defer obs.mu.Unlock()
	want := []delegator.ObservedDelegation{
		{RunID: "run-o", DelegationID: res.DelegationID, Agent: "research", Protocol: "a2a"},
		{RunID: "run-o", DelegationID: unknown.DelegationID},
	}
	if len(obs.started) != 2 || obs.started[0] != want[0] || obs.started[1] != want[1] {
		t.Fatalf("started %+v, want %+v", obs.started, want)
	}
	if len(obs.ended) != 2 || obs.ended[0].DelegationID != res.DelegationID || obs.ended[1].Error == nil || obs.ended[1].Error.Code != delegation.CodeAgentNotFound {
		t.Fatalf("ended %+v", obs.ended)
	}
	if len(obs.remote) != 1 || obs.remote[0] != delegation.CodeStreamInterrupted {
		t.Fatalf("remote errors %v", obs.remote)
	}
	for name, m := range map[string]*marked{"requests": requests, "log lines": logs} {
		m.mu.Lock()
		if m.all == 0 || m.with != m.all {
			t.Errorf("%s: %d of %d under the observer's context", name, m.with, m.all)
		}
		m.mu.Unlock()
	}
}
