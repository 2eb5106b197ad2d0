package delegator_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// cancelTaskCalls counts the CancelTask calls the fake received (a record
// whose TaskID is still empty is one being filled in right now).
func cancelTaskCalls(srv *fakea2a.Server) (n int) {
	for _, c := range srv.RequestsFor("CancelTask") {
		if c.TaskID != "" {
			n++
		}
	}
	return n
}

// retryClaim is a CancelClaim that answers "this process" (the first ask
// CancelMine, later ones CancelMineAgain, as the cluster's) and, when late
// is set, holds every retry until the fake shows that the first
// cancellation took effect: the earlier CancelTask reached the remote
// before the retry, whatever the machine's load, so the retry's outcome is
// the rule's, not the timing's.
func retryClaim(srv *fakea2a.Server, late bool, asked *atomic.Int32) func(context.Context, string, string) (delegator.CancelTurn, error) {
	return func(context.Context, string, string) (delegator.CancelTurn, error) {
		if asked.Add(1) == 1 {
			return delegator.CancelMine, nil
		}
		if !late {
			return delegator.CancelMineAgain, nil
		}
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if cancelTaskCalls(srv) == 0 {
				continue // the first CancelTask never reached the fake: the retry sends it
			}
			for _, id := range srv.Tasks() {
				if st, err := srv.TaskState(context.Background(), id); err == nil && st == a2a.TaskStateCanceled {
					return delegator.CancelMineAgain, nil
				}
			}
		}
		return delegator.CancelMineAgain, nil
	}
}

// cancelWhenWorking runs req, cancels its context once the delegation
// reports working, and returns its result.
func cancelWhenWorking(t *testing.T, e *env.Env, rec *dt.Recorder, req delegator.Request) delegation.Result {
	t.Helper()
	ctx, cancel := context.WithCancel(dt.Ctx(t))
	defer cancel()
	done := make(chan delegation.Result, 1)
	go func() { done <- e.D.Delegate(ctx, req) }()
	rec.WaitKind(t, delegation.DelegationStatus, "working")
	cancel()
	return <-done
}

// A cleanup retry reads the remote task before it cancels it again: a
// CancelTask that reached the remote and took effect, but whose answer the
// host never read (later than CancelTimeout), ends the delegation
// cancelled with cancel_pending as documented, and its retry finds the
// task canceled and stops — one CancelTask at the remote in all. A
// remote that shows the task still running after the first CancelTask is
// sent it again.
func TestCleanupRetryReadsTheTaskFirst(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     fakea2a.CancelMode
		late     bool
		confirms bool // the watcher stops: the retry confirmed the cancellation
	}{
		{"answer lost, cancel took effect", fakea2a.CancelLateAnswer, true, true},
		{"cancel did not take effect", fakea2a.CancelHang, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dt.CheckLeaks(t)
			srv := dt.Fake(t, fakea2a.Options{Streaming: true, Cancel: tc.mode, Behavior: fakea2a.Script(fakea2a.Working("busy"), fakea2a.Hang())})
			var asked atomic.Int32
			e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) {
				c.CancelTimeout = time.Second
				c.CleanupInterval, c.CleanupAttempts, c.CleanupSlowInterval = 10*time.Millisecond, 3, time.Hour
				c.CancelClaim = retryClaim(srv, tc.late, &asked)
			})
			rec := e.Record(t, "run-r")
			res := cancelWhenWorking(t, e, rec, delegator.Request{RunID: "run-r", Agent: "research", Objective: "x"})
			if res.Status != delegation.StatusCancelled || res.Error == nil || res.Error.Code != delegation.CodeCancelPending {
				t.Fatalf("result %+v %+v", res, res.Error)
			}
			evs := rec.WaitTerminals(t, 1)
			dt.CheckLifecycle(t, evs)
			if c := dt.OfKind(evs, delegation.DelegationCancelled); len(c) != 1 || c[0].Status != string(delegation.CodeCancelPending) {
				t.Fatalf("events %s", dt.KindsOf(evs))
			}
			if tc.confirms {
				dt.WaitUntil(t, "the watcher to confirm the cancellation", func() bool { return e.D.Stats().CleanupWatchers == 0 || cancelTaskCalls(srv) > 1 })
				if n := cancelTaskCalls(srv); n != 1 {
					t.Fatalf("%d CancelTask calls at the remote, want 1", n)
				}
				if len(srv.RequestsFor("GetTask")) == 0 {
					t.Fatal("the retry did not read the task")
				}
				return
			}
			dt.WaitUntil(t, "the retry to cancel the running task again", func() bool { return cancelTaskCalls(srv) >= 2 })
			for _, c := range srv.RequestsFor("CancelTask")[1:] {
				if c.TaskID != "" && c.Metadata["reason"] != "cleanup" {
					t.Errorf("retry %+v", c)
				}
			}
		})
	}
}

// The same rule for an orphan another process ended (EndOrphan): its
// CancelTask took effect but its answer was lost, the record ends
// cancelled with the cancellation unconfirmed, and the retry by task id
// finds the task canceled — one CancelTask at the remote.
func TestOrphanCleanupRetryReadsTheTaskFirst(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.Fake(t, fakea2a.Options{Streaming: true, Cancel: fakea2a.CancelLateAnswer, Behavior: fakea2a.Script(fakea2a.Working("on it"), fakea2a.Hang())})
	shared := audit.NewMemory(audit.Options{})
	ownerAudit := audit.NewMemory(audit.Options{})
	owner := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) { c.Audit = ownerAudit })
	var asked atomic.Int32
	survivor := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) {
		c.Audit = shared
		c.CancelTimeout = time.Second
		c.CleanupInterval, c.CleanupAttempts, c.CleanupSlowInterval = 10*time.Millisecond, 3, time.Hour
		c.CancelClaim = retryClaim(srv, true, &asked)
	})
	ctx, cancel := context.WithCancel(dt.Ctx(t))
	defer cancel()
	done := make(chan delegation.Result, 1)
	go func() {
		done <- owner.D.Delegate(ctx, delegator.Request{RunID: "run-o", Agent: "research", Objective: "x"})
	}()
	var rec audit.Record
	dt.WaitUntil(t, "the delegation to name its remote task", func() bool {
		recs := ownerAudit.ListRun("run-o")
		if len(recs) == 1 && len(srv.Tasks()) == 1 && hasTaskID(recs[0]) {
			rec = recs[0]
			return true
		}
		return false
	})
	shared.Begin(rec)
	if out := survivor.D.EndOrphan(dt.Ctx(t), rec, "host_lost", "the host running the run stopped"); out != remote.CancelPending {
		t.Fatalf("outcome %v, want pending (the answer was lost)", out)
	}
	got := shared.ListRun("run-o")[0]
	if got.Status != delegation.StatusCancelled || got.CancelConfirmed == nil || *got.CancelConfirmed {
		t.Fatalf("record %+v", got)
	}
	dt.WaitUntil(t, "the watcher to confirm the cancellation", func() bool { return survivor.D.Stats().CleanupWatchers == 0 || cancelTaskCalls(srv) > 1 })
	if n := cancelTaskCalls(srv); n != 1 {
		t.Fatalf("%d CancelTask calls at the remote, want 1", n)
	}
	// The owner's delegation sees its task canceled by the remote.
	res := <-done
	if res.Status != delegation.StatusCancelled {
		t.Fatalf("owner's result %+v", res)
	}
	if n := cancelTaskCalls(srv); n != 1 {
		t.Fatalf("%d CancelTask calls at the remote, want 1", n)
	}
}

// A cancellation this process claimed before (CancelMineAgain: here the
// same process ends as lost a run whose task it had cancelled already)
// reads the task first: the task is canceled, so no second CancelTask.
func TestCancelClaimedAgainReadsTheTaskFirst(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Working("on it"), fakea2a.Hang())
	ownerAudit := audit.NewMemory(audit.Options{})
	var asked atomic.Int32
	claim := retryClaim(srv, false, &asked)
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) {
		c.Audit = ownerAudit
		c.CancelClaim = claim
	})
	ctx, cancel := context.WithCancel(dt.Ctx(t))
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(ctx, delegator.Request{RunID: "run-a", Agent: "research", Objective: "x"})
	}()
	var running audit.Record
	dt.WaitUntil(t, "the delegation to name its remote task", func() bool {
		recs := ownerAudit.ListRun("run-a")
		if len(recs) == 1 && hasTaskID(recs[0]) {
			running = recs[0]
			return true
		}
		return false
	})
	cancel()
	if res := <-done; res.Status != delegation.StatusCancelled || res.Error == nil || res.Error.Code != delegation.CodeCancelled {
		t.Fatalf("result %+v %+v", res, res.Error)
	}
	if n := cancelTaskCalls(srv); n != 1 {
		t.Fatalf("%d CancelTask calls, want 1", n)
	}
	// The record as it stood while the delegation ran (a view that had
	// not seen its end): ended again as lost, by the same process.
	if out := e.D.EndOrphan(dt.Ctx(t), running, "host_lost", "lost"); out != remote.CancelConfirmed {
		t.Fatalf("outcome %v", out)
	}
	if n := cancelTaskCalls(srv); n != 1 {
		t.Fatalf("%d CancelTask calls, want 1: a task this process cancelled was cancelled again", n)
	}
	if asked.Load() != 2 {
		t.Fatalf("the claim was asked %d times, want 2", asked.Load())
	}
}
