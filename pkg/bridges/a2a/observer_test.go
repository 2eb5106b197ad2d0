package a2a_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	agentadaptor "github.com/seed0634/agentadaptor"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
	a2aclient "github.com/seed0634/agentadaptor/pkg/clients/a2a"
)

// The TurnObserver takes part in every task turn: it sees the task, its
// options reach the run (a runtime service is ensured for each), and end
// gets the state the turn left the task in.
func TestTurnObserverSeesEveryTurn(t *testing.T) {
	type turn struct {
		info  a2abridge.TurnInfo
		state a2a.TaskState
	}
	var mu sync.Mutex
	var turns []turn
	svc := &countingService{}
	observe := func(ctx context.Context, ti a2abridge.TurnInfo) (context.Context, []agentadaptor.RunOption, func(a2a.TaskState)) {
		return ctx, []agentadaptor.RunOption{agentadaptor.WithRuntimeServices(svc)}, func(s a2a.TaskState) {
			mu.Lock()
			defer mu.Unlock()
			turns = append(turns, turn{ti, s})
		}
	}
	env := startBridge(t, "- ask: Which city?\n- say: Booked.\n", a2abridge.Exposure{}, func(c *a2abridge.Config) { c.Observer = observe })
	c := newClient(t, env, "")
	first := send(t, c, a2aclient.SendRequest{Text: "book a trip"})
	second := send(t, c, a2aclient.SendRequest{Text: "Paris", TaskID: first.taskID, ContextID: first.contextID})
	if second.final != a2a.TaskStateCompleted {
		t.Fatalf("second turn ended %s", second.final)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []turn{
		{a2abridge.TurnInfo{TaskID: string(first.taskID), ContextID: first.contextID}, a2a.TaskStateInputRequired},
		{a2abridge.TurnInfo{TaskID: string(first.taskID), ContextID: first.contextID, FollowUp: true}, a2a.TaskStateCompleted},
	}
	if len(turns) != 2 || turns[0] != want[0] || turns[1] != want[1] {
		t.Fatalf("turns %+v, want %+v", turns, want)
	}
	if n := svc.ensured.Load(); n != 2 {
		t.Fatalf("the observer's run option reached %d of 2 runs", n)
	}
}

// countingService is a runtime service that only counts the runs it is
// ensured for.
type countingService struct{ ensured atomic.Int32 }

func (c *countingService) Ensure(context.Context, agentadaptor.RuntimeServiceRequest) (agentadaptor.RuntimeService, error) {
	c.ensured.Add(1)
	return nopService{}, nil
}

type nopService struct{}

func (nopService) Ref() agentadaptor.RuntimeServiceRef {
	return agentadaptor.RuntimeServiceRef{ID: "observed"}
}
func (nopService) Release(context.Context) error { return nil }
