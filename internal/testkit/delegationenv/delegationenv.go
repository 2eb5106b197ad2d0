// Package delegationenv builds, for tests, a delegator over fake remote
// agents with fast timings: the registry with both protocol connectors, the
// memory bus and a debug log. It is imported by tests only; nothing in the
// product path may import it.
package delegationenv

import (
	"context"
	"log/slog"
	"testing"
	"time"

	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/a2aremote"
	"github.com/seed0634/agentadaptor/pkg/delegation/aguiremote"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// Config is what a test may tune: the delegator's config (Registry, Bus
// and Logger are set by NewEnv) and the protocols' options.
type Config struct {
	delegator.Config
	A2A  a2aremote.Options
	AGUI aguiremote.Options
}

// Env is a delegator over the registry of the test's remote agents, with
// fast timings (polling, recovery, cleanup) and a debug log.
type Env struct {
	D    *delegator.Delegator
	Bus  *delegation.MemoryBus
	Logs *dt.LogBuf
}

// Build builds an Env for specs; close releases it. It reports errors
// instead of failing a test, for harnesses that are not tests (godog steps).
func Build(specs []registry.RemoteAgentSpec, mod ...func(*Config)) (e *Env, close func(context.Context) error, err error) {
	e = &Env{Bus: delegation.NewMemoryBus(), Logs: &dt.LogBuf{}}
	cfg := Config{
		Config: delegator.Config{Bus: e.Bus, Logger: slog.New(slog.NewJSONHandler(e.Logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			CancelTimeout: 2 * time.Second, CleanupInterval: 20 * time.Millisecond, CleanupAttempts: 3},
		A2A: a2aremote.Options{PollInterval: 20 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond,
			RecoverBackoff: 20 * time.Millisecond, CreateGrace: 2 * time.Second},
	}
	for _, m := range mod {
		m(&cfg)
	}
	reg, err := registry.New(registry.Options{Connectors: []remote.Connector{a2aremote.New(cfg.A2A), aguiremote.New(cfg.AGUI)}}, specs...)
	if err != nil {
		return nil, nil, err
	}
	cfg.Registry = reg
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if e.D, err = delegator.New(ctx, cfg.Config); err != nil {
		return nil, nil, err
	}
	return e, e.D.Close, nil
}

// NewEnv builds an Env for specs; it is closed when the test ends.
func NewEnv(t testing.TB, specs []registry.RemoteAgentSpec, mod ...func(*Config)) *Env {
	t.Helper()
	e, closeEnv, err := Build(specs, mod...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := closeEnv(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

// Record starts recording runID's events on e's bus until the test ends.
func (e *Env) Record(t testing.TB, runID string) *dt.Recorder { return dt.Record(t, e.Bus, runID) }
