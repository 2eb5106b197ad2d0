package a2aremote_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	env "github.com/seed0634/agentadaptor/internal/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// A CancelTask that answers with a task still working is a cancellation
// asked for, not confirmed: the delegation ends cancelled with
// cancel_pending, the cleanup watcher keeps asking, and the audit says the
// cancellation was not confirmed (docs/design.md#the-cascade). The same
// holds for an orphaned delegation ended by its audit record.
func TestCancelAnsweredWithANonTerminalStateIsPending(t *testing.T) {
	dt.CheckLeaks(t)
	rr := newRawRemote(t, true, map[string]rawHandler{
		"SendStreamingMessage": func(w *rawWriter, _ json.RawMessage) {
			w.events(streamedTask("task-1", "TASK_STATE_SUBMITTED"), streamedStatus("task-1", "TASK_STATE_WORKING", "busy"))
			w.hold()
		},
		"CancelTask": func(w *rawWriter, _ json.RawMessage) { w.result(task("task-1", "TASK_STATE_WORKING")) },
		"GetTask":    func(w *rawWriter, _ json.RawMessage) { w.result(task("task-1", "TASK_STATE_WORKING")) },
	})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{rr.spec("raw")})
	rec := e.Record(t, "run-c")
	ctx, cancel := context.WithCancel(dt.Ctx(t))
	done := make(chan delegation.Result, 1)
	go func() { done <- e.D.Delegate(ctx, delegator.Request{RunID: "run-c", Agent: "raw", Objective: "x"}) }()
	rec.WaitKind(t, delegation.DelegationStatus, "working")
	cancel()
	res := <-done
	if res.Status != delegation.StatusCancelled || res.Error == nil || res.Error.Code != delegation.CodeCancelPending {
		t.Fatalf("result %+v err %+v, want cancelled with cancel_pending", res, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	if c := dt.OfKind(evs, delegation.DelegationCancelled); len(c) != 1 || c[0].Error == nil || c[0].Error.Code != delegation.CodeCancelPending {
		t.Errorf("cancelled events %+v", c)
	}
	rec.WaitKind(t, delegation.DelegationStatus, string(delegation.CodeCancelPending))
	// The watcher asks again (CleanupAttempts), since nothing confirmed it.
	dt.WaitUntil(t, "the cleanup watcher's retries", func() bool { return len(rr.callsOf("CancelTask")) >= 2 })
	recs := e.D.Audit().ListRun("run-c")
	if len(recs) != 1 || recs[0].CancelConfirmed == nil || *recs[0].CancelConfirmed {
		t.Errorf("audit cancel_confirmed %v, want false", recs)
	}

	// An orphan (its process gone) cancelled by its audit record.
	orphan := audit.Record{DelegationID: "del-orphan", RunID: "run-o", AgentKey: "raw", Protocol: delegation.ProtocolA2A,
		RemoteTaskID: "task-1", Status: audit.StatusRunning, StartedAt: time.Now()}
	if out := e.D.EndOrphan(dt.Ctx(t), orphan, delegation.CodeCancelled, "host lost"); out != remote.CancelPending {
		t.Errorf("EndOrphan outcome %v, want CancelPending", out)
	}
}
