package a2aremote_test

import (
	"encoding/json"
	"strings"
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// What a delegation reads while recovering a cut stream (the
// resubscription, or GetTask when the agent cannot resubscribe) counts
// against its read budget (policy max_read_bytes) with what the first
// stream read: a remote cannot reset the bound by cutting its stream.
// Beyond the budget the delegation fails at once with remote_failed, with
// or without a cut (README, "Always": every byte read from a remote is
// bounded).
func TestRecoveryReadsCountAgainstTheReadBudget(t *testing.T) {
	dt.CheckLeaks(t)
	const budget = 64 << 10
	padding := strings.Repeat("p", 40<<10) // each response alone fits the budget, two do not
	cut := func(w *rawWriter, _ json.RawMessage) {
		w.events(streamedTask("task-1", "TASK_STATE_SUBMITTED"), streamedStatus("task-1", "TASK_STATE_WORKING", padding))
		// The stream ends without a terminal state: the host recovers.
	}
	for _, tt := range []struct {
		name     string
		handlers map[string]rawHandler
		recovery string // the recovery call expected ("": none)
	}{
		{"the first stream alone", map[string]rawHandler{
			"SendStreamingMessage": func(w *rawWriter, _ json.RawMessage) {
				w.events(streamedTask("task-1", "TASK_STATE_SUBMITTED"), streamedStatus("task-1", "TASK_STATE_WORKING", padding),
					streamedStatus("task-1", "TASK_STATE_WORKING", padding), streamedStatus("task-1", "TASK_STATE_COMPLETED", "done"))
			},
			"CancelTask": func(w *rawWriter, _ json.RawMessage) { w.result(task("task-1", "TASK_STATE_CANCELED")) },
		}, ""},
		{"resubscribe", map[string]rawHandler{
			"SendStreamingMessage": cut,
			"SubscribeToTask": func(w *rawWriter, _ json.RawMessage) {
				w.events(streamedTask("task-1", "TASK_STATE_WORKING"), streamedStatus("task-1", "TASK_STATE_WORKING", padding),
					streamedStatus("task-1", "TASK_STATE_COMPLETED", "done"))
			},
			"GetTask":    func(w *rawWriter, _ json.RawMessage) { w.result(task("task-1", "TASK_STATE_COMPLETED")) },
			"CancelTask": func(w *rawWriter, _ json.RawMessage) { w.result(task("task-1", "TASK_STATE_CANCELED")) },
		}, "SubscribeToTask"},
		{"get task", map[string]rawHandler{
			"SendStreamingMessage": cut,
			// An agent that cannot resubscribe: the host falls back to GetTask.
			"SubscribeToTask": func(w *rawWriter, _ json.RawMessage) { w.errorEvent(-32004, "unsupported operation") },
			"GetTask": func(w *rawWriter, _ json.RawMessage) {
				b, _ := json.Marshal(padding)
				w.result(`{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"m-done","role":"ROLE_AGENT","parts":[{"text":` + string(b) + `}]}}}`)
			},
			"CancelTask": func(w *rawWriter, _ json.RawMessage) { w.result(task("task-1", "TASK_STATE_CANCELED")) },
		}, "GetTask"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rr := newRawRemote(t, true, tt.handlers)
			e := env.NewEnv(t, []registry.RemoteAgentSpec{rr.spec("raw", func(s *registry.RemoteAgentSpec) { s.Policy.MaxReadBytes = budget })})
			rec := e.Record(t, "run-b")
			res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-b", Agent: "raw", Objective: "x"})
			if res.Status != delegation.StatusFailed || res.Error == nil || res.Error.Code != delegation.CodeRemoteFailed {
				t.Fatalf("result %s %+v, want remote_failed: the delegation read past its read budget", res.Status, res.Error)
			}
			if tt.recovery != "" && len(rr.callsOf(tt.recovery)) == 0 {
				t.Fatalf("no %s: the stream was not recovered\n%s", tt.recovery, e.Logs.String())
			}
			dt.CheckLifecycle(t, rec.WaitTerminals(t, 1))
		})
	}
}
