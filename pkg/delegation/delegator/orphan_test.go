package delegator_test

import (
	"context"
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

// A second delegator (another host process) ends a delegation the first
// one was following, from its audit record alone: one CancelTask reaches
// the remote, and the record ends cancelled with the code. The first
// process is dead as far as the shared store goes: its writes go to a store
// of its own (else its own end, once the remote cancels, would race the
// survivor's).
func TestEndOrphanCancelsTheRemoteTaskFromTheAudit(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Working("on it"), fakea2a.Hang())
	shared := audit.NewMemory(audit.Options{})
	ownerAudit := audit.NewMemory(audit.Options{})
	owner := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) { c.Audit = ownerAudit })
	survivor := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) { c.Audit = shared })
	ctx, cancel := context.WithCancel(dt.Ctx(t))
	done := make(chan delegation.Result, 1)
	go func() {
		done <- owner.D.Delegate(ctx, delegator.Request{RunID: "run-1", ParentToolCallID: "toolu-1", Agent: "research", Objective: "x"})
	}()
	var rec audit.Record
	for deadline := time.Now().Add(20 * time.Second); ; {
		if recs := ownerAudit.ListRun("run-1"); len(recs) == 1 && len(srv.Tasks()) == 1 && hasTaskID(recs[0]) {
			rec = recs[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the delegation never named its remote task")
		}
		time.Sleep(10 * time.Millisecond)
	}
	shared.Begin(rec) // what the owner had written to the shared store before it died
	if out := survivor.D.EndOrphan(dt.Ctx(t), rec, "host_lost", "the host running the run stopped"); out != remote.CancelConfirmed {
		t.Fatalf("outcome %v", out)
	}
	if n := len(srv.RequestsFor("CancelTask")); n != 1 {
		t.Fatalf("%d CancelTask calls, want 1", n)
	}
	got := shared.ListRun("run-1")[0]
	if got.Status != delegation.StatusCancelled || got.Result == nil || got.Result.Error.Code != "host_lost" || got.CancelConfirmed == nil || !*got.CancelConfirmed {
		t.Fatalf("record %+v", got)
	}
	// An ended record is left alone.
	if out := survivor.D.EndOrphan(dt.Ctx(t), got, "host_lost", "again"); out != remote.CancelNotNeeded {
		t.Fatalf("second outcome %v", out)
	}
	cancel()
	<-done
}

// Sticky contexts live in the ContextStore: a thread's context is shared by
// two delegators given the same store; a run's is forgotten at EndRun.
func TestContextStoreIsShared(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Completed("ok"))
	store := delegator.NewMemoryContexts(0)
	spec := dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) { s.Policy.ContextPolicy = registry.ContextStickyPerParentThreadAgent })
	a := env.NewEnv(t, []registry.RemoteAgentSpec{spec}, func(c *env.Config) { c.Contexts = store })
	b := env.NewEnv(t, []registry.RemoteAgentSpec{spec}, func(c *env.Config) { c.Contexts = store })
	r1 := a.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-a", SessionKey: "thread-1", Agent: "research", Objective: "x"})
	r2 := b.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-b", SessionKey: "thread-1", Agent: "research", Objective: "y"})
	if r1.RemoteContextID == "" || r2.RemoteContextID != r1.RemoteContextID {
		t.Fatalf("contexts %q %q", r1.RemoteContextID, r2.RemoteContextID)
	}
	if id, ok := store.Get(context.Background(), delegator.ContextKey{Thread: "thread-1", Agent: "research"}); !ok || id != r1.RemoteContextID {
		t.Fatalf("store: %q %v", id, ok)
	}
	store.Put(context.Background(), delegator.ContextKey{Run: "run-z", Agent: "research"}, "ctx-z")
	if err := a.D.EndRun(dt.Ctx(t), "run-z"); err != nil {
		t.Fatal(err)
	}
	if _, ok := store.Get(context.Background(), delegator.ContextKey{Run: "run-z", Agent: "research"}); ok {
		t.Fatal("EndRun must forget the run's contexts")
	}
}

func hasTaskID(rec audit.Record) bool {
	for _, ev := range rec.Events {
		if ev.RemoteTaskID != "" {
			return true
		}
	}
	return rec.RemoteTaskID != ""
}
