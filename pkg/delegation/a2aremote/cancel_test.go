package a2aremote_test

import (
	"context"
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

// cancelFake is a streaming fake agent answering CancelTask with mode whose
// tasks either finish at once ("finish") or work until cancelled.
func cancelFake(t *testing.T, mode fakea2a.CancelMode) *fakea2a.Server {
	return dt.Fake(t, fakea2a.Options{Streaming: true, Cancel: mode, Choose: fakea2a.ByText(map[string]fakea2a.Behavior{
		"finish": fakea2a.Script(fakea2a.Working("on it"), dt.AdaptorResultArtifact("done"), fakea2a.Completed("done")),
	}, fakea2a.Script(fakea2a.Working("busy"), fakea2a.Hang()))})
}

// delegateThenCancel starts a delegation of objective on agent "research"
// and cancels its parent context once the remote task is working.
func delegateThenCancel(t *testing.T, e *env.Env, runID string) delegation.Result {
	t.Helper()
	rec := e.Record(t, runID)
	ctx, cancel := context.WithCancel(dt.Ctx(t))
	defer cancel()
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(ctx, delegator.Request{RunID: runID, Agent: "research", Objective: "work"})
	}()
	rec.WaitKind(t, delegation.DelegationStatus, "working")
	cancel()
	return <-done
}

// Every request of a cancellation — the CancelTask, the GetTask that reads
// a refused task back, the retries of the cleanup watcher and the
// cancellation of an orphan by its audit record — carries the agent's
// configured tenant, like every other A2A request of the agent
// (docs/design.md#the-cascade, step 6; docs/design.md#a2a--delegation-event).
func TestCancelRequestsCarryTheTenant(t *testing.T) {
	dt.CheckLeaks(t)
	srv := cancelFake(t, fakea2a.CancelRefuse)
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) { s.Tenant = "acme" })})
	res := delegateThenCancel(t, e, "run-t")
	if res.Error == nil || res.Error.Code != delegation.CodeCancelPending {
		t.Fatalf("result %+v err %+v, want cancel_pending (the fake refuses)", res, res.Error)
	}
	// The cleanup watcher retries: GetTask, then CancelTask again.
	dt.WaitUntil(t, "the cleanup watcher's retry", func() bool { return len(srv.RequestsFor("CancelTask")) >= 2 })
	orphan := audit.Record{DelegationID: "del-orphan", RunID: "run-o", AgentKey: "research", Protocol: delegation.ProtocolA2A,
		RemoteTaskID: res.RemoteTaskID, Status: audit.StatusRunning, StartedAt: time.Now()}
	before := len(srv.RequestsFor("CancelTask"))
	_ = e.D.EndOrphan(dt.Ctx(t), orphan, delegation.CodeCancelled, "host lost")
	if len(srv.RequestsFor("CancelTask")) == before {
		t.Fatal("EndOrphan sent no CancelTask")
	}
	for _, method := range []string{"CancelTask", "GetTask"} {
		reqs := srv.RequestsFor(method)
		if len(reqs) == 0 {
			t.Errorf("no %s request", method)
		}
		for i, r := range reqs {
			if r.Tenant != "acme" || string(r.TaskID) != res.RemoteTaskID {
				t.Errorf("%s #%d: tenant %q task %q, want tenant acme task %q", method, i, r.Tenant, r.TaskID, res.RemoteTaskID)
			}
		}
	}
}

// A cancellation the remote refuses (not cancelable, or an unknown task) is
// confirmed only when a GetTask shows the task terminal or gone; a task the
// remote shows still running is cancel_pending, and the cleanup watcher
// keeps asking (docs/design.md#the-cascade, step 6).
func TestRefusedCancelIsConfirmedOnlyForAnEndedTask(t *testing.T) {
	dt.CheckLeaks(t)
	srv := cancelFake(t, fakea2a.CancelRefuse)
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})

	// A running task whose cancellation is refused: pending, never confirmed.
	res := delegateThenCancel(t, e, "run-r")
	if res.Status != delegation.StatusCancelled || res.Error == nil || res.Error.Code != delegation.CodeCancelPending {
		t.Fatalf("running task: result %+v err %+v, want cancelled with cancel_pending", res, res.Error)
	}
	if recs := e.D.Audit().ListRun("run-r"); len(recs) != 1 || recs[0].CancelConfirmed == nil || *recs[0].CancelConfirmed {
		t.Errorf("running task: audit cancel_confirmed %v, want false", recs)
	}
	if st, err := srv.TaskState(dt.Ctx(t), a2a.TaskID(res.RemoteTaskID)); err != nil || st != a2a.TaskStateWorking {
		t.Fatalf("the remote task is %s (%v); the test needs it still working", st, err)
	}

	// A finished task: refused, read back terminal, confirmed.
	fin := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-f", Agent: "research", Objective: "finish"})
	if fin.Status != delegation.StatusCompleted || fin.RemoteTaskID == "" {
		t.Fatalf("finishing task: %+v %+v", fin, fin.Error)
	}
	for _, tc := range []struct {
		name, taskID string
		want         remote.CancelOutcome
	}{
		{"still running", res.RemoteTaskID, remote.CancelPending},
		{"already completed", fin.RemoteTaskID, remote.CancelConfirmed},
		{"unknown to the remote", "no-such-task", remote.CancelConfirmed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orphan := audit.Record{DelegationID: "del-" + tc.taskID, RunID: "run-o", AgentKey: "research", Protocol: delegation.ProtocolA2A,
				RemoteTaskID: tc.taskID, Status: audit.StatusRunning, StartedAt: time.Now()}
			if out := e.D.EndOrphan(dt.Ctx(t), orphan, delegation.CodeCancelled, "host lost"); out != tc.want {
				t.Errorf("EndOrphan outcome %v, want %v", out, tc.want)
			}
		})
	}
}

// A task is never orphaned by cutting the request that creates it: when the
// parent is cancelled while message/stream is in flight (the remote has
// created the task, the host does not know its id yet), the request is let
// finish until its response names the task, which is then cancelled
// (docs/design.md#edge-cases; docs/design.md#guarantees, 10).
func TestCancelDuringTheCreatingRequestCancelsTheTask(t *testing.T) {
	dt.CheckLeaks(t)
	ctx, cancel := context.WithCancel(dt.Ctx(t))
	defer cancel()
	srv := dt.Fake(t, fakea2a.Options{Streaming: true, Choose: func(*a2a.Message) fakea2a.Behavior {
		cancel() // the parent gives up now: the remote holds the request, the host no task id
		return fakea2a.Script(fakea2a.Working("working"), fakea2a.Hang())
	}})
	// A generous grace: the response naming the task must come within it,
	// however loaded the machine.
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) { c.A2A.CreateGrace = time.Minute })
	res := e.D.Delegate(ctx, delegator.Request{RunID: "run-c", Agent: "research", Objective: "work"})
	if res.Status != delegation.StatusCancelled {
		t.Errorf("result %+v err %+v, want cancelled", res, res.Error)
	}
	tasks := srv.Tasks()
	if len(tasks) != 1 {
		t.Fatalf("remote tasks %v, want one", tasks)
	}
	if res.RemoteTaskID != string(tasks[0]) {
		t.Errorf("result names remote task %q, want %q", res.RemoteTaskID, tasks[0])
	}
	// Delegate's own CancelTask or, failing that, the cleanup watcher's.
	dt.WaitUntil(t, "the remote task cancelled", func() bool {
		st, err := srv.TaskState(dt.Ctx(t), tasks[0])
		return err == nil && st == a2a.TaskStateCanceled
	})
}
