package delegator_test

import (
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"

	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/clients/a2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

func TestServiceRegroupsWhenParentResolvedLater(t *testing.T) {
	srv := dt.StreamingFake(t, fakeWorkingThenRelease()...)
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	rec := e.Record(t, "run-m")
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-m", Agent: "research", Objective: "x"})
	}()
	st := rec.WaitKind(t, delegation.DelegationStatus, "working")
	if st.ParentToolCallID != "" {
		t.Fatalf("parent known too early: %+v", st)
	}
	// The UI mux sees the parent's tool_call.start only now.
	e.D.Correlator().ObserveToolCall("run-m", "toolu-late", "mcp__a2a-delegation__delegate_to_agent")
	ev := rec.WaitKind(t, delegation.DelegationStatus, delegation.StatusCorrelated)
	if ev.ParentToolCallID != "toolu-late" || ev.DelegationID != st.DelegationID || ev.AgentKey != "research" {
		t.Errorf("regroup event %+v", ev)
	}
	srv.Release(a2a.TaskID(st.RemoteTaskID))
	<-done
	for _, ev := range dt.OfKind(rec.WaitTerminals(t, 1), delegation.DelegationFinished) {
		if ev.ParentToolCallID != "toolu-late" {
			t.Errorf("later events not regrouped: %+v", ev)
		}
	}
}
