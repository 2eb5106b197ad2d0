package a2aremote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
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

// A CancelTask refused with an error that echoes a host secret (here
// another agent's credential, which this agent's client never had) is
// logged scrubbed (docs/design.md#secrets: never in a log line).
func TestCancelRefusalLogIsScrubbed(t *testing.T) {
	dt.CheckLeaks(t)
	rr := newRawRemote(t, true, map[string]rawHandler{
		"SendStreamingMessage": func(w *rawWriter, _ json.RawMessage) {
			w.events(streamedTask("task-1", "TASK_STATE_SUBMITTED"), streamedStatus("task-1", "TASK_STATE_WORKING", "busy"))
			w.hold()
		},
		"CancelTask": func(w *rawWriter, _ json.RawMessage) {
			w.w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w.w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"cannot cancel: upstream token %s"}}`, w.id, dt.SecretToken)
		},
		"GetTask": func(w *rawWriter, _ json.RawMessage) { w.result(task("task-1", "TASK_STATE_WORKING")) },
	})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{rr.spec("raw"), rr.spec("keyed", func(s *registry.RemoteAgentSpec) { s.AuthRef = "env:" + dt.SecretEnv })})
	rec := e.Record(t, "run-s")
	ctx, cancel := context.WithCancel(dt.Ctx(t))
	done := make(chan delegation.Result, 1)
	go func() { done <- e.D.Delegate(ctx, delegator.Request{RunID: "run-s", Agent: "raw", Objective: "x"}) }()
	rec.WaitKind(t, delegation.DelegationStatus, "working")
	cancel()
	if res := <-done; res.Error == nil || res.Error.Code != delegation.CodeCancelPending {
		t.Fatalf("result %+v", res.Error)
	}
	logs := e.Logs.String()
	if !strings.Contains(logs, "remote cancel not confirmed") || !strings.Contains(logs, "upstream token [REDACTED]") {
		t.Fatalf("no scrubbed cancel refusal in the logs:\n%s", logs)
	}
	dt.NoSecret(t, "logs", logs)
}
