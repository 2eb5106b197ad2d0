package a2a_test

import (
	"context"
	"errors"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
)

// TestEveryFinishedTaskRefusesMessages specifies that a message to a task in
// any terminal state — completed, failed or canceled, not only completed —
// is UnsupportedOperation, and that the refused message starts no turn: the
// task stays as it was (docs/design.md#a2a--delegation-event; README, a2a
// serve).
func TestEveryFinishedTaskRefusesMessages(t *testing.T) {
	for _, tc := range []struct {
		name, scenario string
		finish         func(t *testing.T, c *a2aclient.Client, task *a2a.Task) *a2a.Task
		want           a2a.TaskState
	}{
		{name: "completed", scenario: "- say: done\n", want: a2a.TaskStateCompleted},
		{name: "failed", scenario: "- say: trying\n- fail: the tool exploded\n", want: a2a.TaskStateFailed},
		{
			name: "canceled", scenario: "- ask: Which city?\n- say: Booked it.\n", want: a2a.TaskStateCanceled,
			finish: func(t *testing.T, c *a2aclient.Client, task *a2a.Task) *a2a.Task {
				got, err := c.CancelTask(context.Background(), &a2a.CancelTaskRequest{ID: task.ID})
				if err != nil {
					t.Fatalf("CancelTask: %v", err)
				}
				return got
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := startBridge(t, tc.scenario, a2abridge.Exposure{})
			c := goClient(t, env, a2a.TransportProtocolJSONRPC, a2a.Version, nil)
			first := tc.want
			if tc.finish != nil {
				first = a2a.TaskStateInputRequired
			}
			task := firstTurn(t, c, "go", first)
			if tc.finish != nil {
				task = tc.finish(t, c, task)
			}
			if task.Status.State != tc.want {
				t.Fatalf("task is %s, want %s", task.Status.State, tc.want)
			}
			if _, err := c.SendMessage(context.Background(), followUp(task, "more")); !errors.Is(err, a2a.ErrUnsupportedOperation) {
				t.Errorf("SendMessage to a %s task: %v, want UnsupportedOperation", tc.want, err)
			}
			// Streamed over REST: a2a-go's JSON-RPC client reads a plain JSON-RPC
			// error answered to a streaming call as an empty stream.
			rc := goClient(t, env, a2a.TransportProtocolHTTPJSON, a2a.Version, nil)
			if _, err := collect(rc.SendStreamingMessage(context.Background(), followUp(task, "more"))); !errors.Is(err, a2a.ErrUnsupportedOperation) {
				t.Errorf("SendStreamingMessage to a %s task: %v, want UnsupportedOperation", tc.want, err)
			}
			after, err := c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: task.ID})
			if err != nil {
				t.Fatal(err)
			}
			if after.Status.State != tc.want || len(after.History) != len(task.History) {
				t.Errorf("after the refused message: %s with %d history messages, want %s with %d",
					after.Status.State, len(after.History), tc.want, len(task.History))
			}
		})
	}
}
