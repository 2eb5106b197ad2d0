package delegator_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// Every cancellation of a remote task asks Config.CancelClaim first: a
// task another host process cancels gets nothing from this one (the
// delegation still ends cancelled), and a claim that cannot be checked
// leaves the cancellation pending (retried). EndOrphan asks too.
func TestCancelClaimDecidesWhoCancels(t *testing.T) {
	for _, tc := range []struct {
		name    string
		claim   func() (delegator.CancelTurn, error)
		cancels int
		code    delegation.FailureCode
	}{
		{"this process", func() (delegator.CancelTurn, error) { return delegator.CancelMine, nil }, 1, delegation.CodeCancelled},
		{"another process", func() (delegator.CancelTurn, error) { return delegator.CancelOthers, nil }, 0, delegation.CodeCancelled},
		{"unknown", func() (delegator.CancelTurn, error) { return delegator.CancelOthers, errors.New("NATS away") }, 0, delegation.CodeCancelPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dt.CheckLeaks(t)
			srv := dt.StreamingFake(t, fakea2a.Working("busy"), fakea2a.Hang())
			var asked atomic.Int32
			e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) {
				c.CleanupInterval = time.Hour
				c.CancelClaim = func(_ context.Context, runID, delegationID string) (delegator.CancelTurn, error) {
					if runID != "run-g" || delegationID == "" {
						t.Errorf("claim asked for %q %q", runID, delegationID)
					}
					asked.Add(1)
					return tc.claim()
				}
			})
			rec := e.Record(t, "run-g")
			res := cancelWhenWorking(t, e, rec, delegator.Request{RunID: "run-g", Agent: "research", Objective: "x"})
			if res.Status != delegation.StatusCancelled || res.Error == nil || res.Error.Code != tc.code {
				t.Fatalf("result %+v %+v", res, res.Error)
			}
			if n := len(srv.RequestsFor("CancelTask")); n != tc.cancels {
				t.Fatalf("%d CancelTask calls, want %d", n, tc.cancels)
			}
			if asked.Load() != 1 {
				t.Fatalf("the claim was asked %d times", asked.Load())
			}
		})
	}
	t.Run("orphan of another process", func(t *testing.T) {
		dt.CheckLeaks(t)
		srv := dt.StreamingFake(t, fakea2a.Working("busy"), fakea2a.Hang())
		e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) {
			c.CancelClaim = func(context.Context, string, string) (delegator.CancelTurn, error) {
				return delegator.CancelOthers, nil
			}
		})
		rec := audit.Record{DelegationID: "del-1", RunID: "run-o", AgentKey: "research", Protocol: "a2a", RemoteTaskID: "task-1", Status: audit.StatusRunning, StartedAt: time.Now()}
		if out := e.D.EndOrphan(dt.Ctx(t), rec, "host_lost", "gone"); out != remote.CancelNotNeeded {
			t.Fatalf("outcome %v", out)
		}
		if n := len(srv.RequestsFor("CancelTask")); n != 0 {
			t.Fatalf("%d CancelTask calls, want 0", n)
		}
	})
}

// A remote task whose cancellation is not confirmed gets at most
// CleanupAttempts cancellations (the first included) in its first
// minute, then one per CleanupSlowInterval: here 3, then none for an hour.
func TestCleanupWatcherIsGentle(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.Fake(t, fakea2a.Options{Streaming: true, Cancel: fakea2a.CancelRefuse, Behavior: fakea2a.Script(fakea2a.Working("busy"), fakea2a.Hang())})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) {
		c.CleanupInterval, c.CleanupAttempts, c.CleanupSlowInterval = 10*time.Millisecond, 3, time.Hour
	})
	rec := e.Record(t, "run-w")
	ctx, cancel := context.WithCancel(dt.Ctx(t))
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(ctx, delegator.Request{RunID: "run-w", Agent: "research", Objective: "x"})
	}()
	rec.WaitKind(t, delegation.DelegationStatus, "working")
	cancel()
	<-done
	cancels := func() (n int) {
		for _, c := range srv.RequestsFor("CancelTask") {
			if c.TaskID != "" {
				n++
			}
		}
		return n
	}
	dt.WaitUntil(t, "the early retries", func() bool { return cancels() >= 3 })
	// The early retries came after 10-20ms and 20-40ms; the next one is
	// an hour away. Far longer than the early ones, nothing more comes.
	time.Sleep(500 * time.Millisecond)
	if n := cancels(); n != 3 {
		t.Fatalf("%d CancelTask calls, want 3 (the first and two retries)", n)
	}
	if st := e.D.Stats(); st.CleanupWatchers != 1 {
		t.Fatalf("stats %+v: the watcher must keep going (hourly)", st)
	}
}

// The defaults' schedule: at most 3 cancellations in a task's first
// minute, then hourly (jittered), until 24 hours after the first.
func TestCleanupScheduleDefaults(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Completed("ok"))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) {
		c.CleanupInterval, c.CleanupAttempts = 0, 0 // the defaults
	})
	for range 200 {
		elapsed, attempts, early := time.Duration(0), 1, 1
		for {
			wait, ok := e.D.CleanupDelay(attempts, elapsed)
			if !ok {
				break
			}
			elapsed += wait
			attempts++
			if elapsed < time.Minute {
				early++
				if wait < 2500*time.Millisecond {
					t.Fatalf("retry %d after %v: faster than half the first interval", attempts, wait)
				}
			} else if attempts > 3 && wait < 30*time.Minute {
				t.Fatalf("retry %d after %v in the slow phase", attempts, wait)
			}
		}
		if early > 3 {
			t.Fatalf("%d cancellations in the first minute", early)
		}
		if elapsed > 24*time.Hour || attempts < 20 {
			t.Fatalf("%d cancellations over %v", attempts, elapsed)
		}
	}
}

// brokenContexts is a ContextStore that cannot read thread contexts.
type brokenContexts struct{ *delegator.MemoryContexts }

func (b brokenContexts) Lookup(context.Context, delegator.ContextKey) (string, bool, error) {
	return "", false, errors.New("store unreachable")
}

// stickyObserver counts unreadable sticky contexts.
type stickyObserver struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *stickyObserver) DelegationStarted(ctx context.Context, _ delegator.ObservedDelegation) (context.Context, func(delegation.Result)) {
	return ctx, func(delegation.Result) {}
}
func (o *stickyObserver) RemoteError(string, delegation.FailureCode) {}
func (o *stickyObserver) StickyContextUnreadable(agent string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n[agent]++
}

// A sticky context that cannot be read is not silent: the delegation runs
// in a new remote context, the user sees subagent.status
// context_unavailable right after subagent.started, and the observer
// counts it.
func TestUnreadableStickyContextIsShown(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Completed("ok"))
	spec := dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) { s.Policy.ContextPolicy = registry.ContextStickyPerParentThreadAgent })
	obs := &stickyObserver{n: map[string]int{}}
	e := env.NewEnv(t, []registry.RemoteAgentSpec{spec}, func(c *env.Config) {
		c.Contexts = brokenContexts{delegator.NewMemoryContexts(0)}
		c.Observer = obs
	})
	rec := e.Record(t, "run-s")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-s", SessionKey: "thread-1", Agent: "research", Objective: "x"})
	if res.Status != delegation.StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	evs := rec.WaitTerminals(t, 1)
	if len(evs) < 2 || evs[0].Kind != delegation.DelegationStarted || evs[1].Kind != delegation.DelegationStatus || evs[1].Status != delegator.StatusContextUnavailable || evs[1].Text == "" {
		t.Fatalf("events %s", dt.KindsOf(evs))
	}
	dt.CheckLifecycle(t, evs)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.n["research"] != 1 {
		t.Fatalf("observer counts %v", obs.n)
	}
}
