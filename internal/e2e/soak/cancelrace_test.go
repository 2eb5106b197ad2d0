package soak_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	a2aclient "github.com/seed0634/agentadaptor/pkg/clients/a2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/a2aremote"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// TestCancelRaceLeavesNoRemoteTask is the regression test of what the soak
// found with AGENTADAPTOR_SOAK_EARLY_CANCEL > 0: a delegation whose parent
// context is cancelled while its message/stream request is in flight (the
// remote has received it, the delegator has not seen the first event, so it
// does not know the remote task id) used to end as a confirmed "cancelled"
// while the remote task it created kept running, with no CancelTask ever
// sent. Every delegation's remote task must end cancelled or finished (one
// of the soak's checks, docs/benchmarks.md): the delegator now lets the
// creating request name the task before it cancels it.
func TestCancelRaceLeavesNoRemoteTask(t *testing.T) {
	const n = 10
	var cancels sync.Map // objective -> context.CancelFunc
	srv := fakea2a.New(t, fakea2a.Options{Streaming: true, RequireToken: agentToken, Choose: func(m *a2a.Message) fakea2a.Behavior {
		if m != nil && len(m.Parts) > 0 && m.Parts[0] != nil {
			if c, ok := cancels.LoadAndDelete(m.Parts[0].Text()); ok {
				c.(context.CancelFunc)() // the parent cancels now: the request has reached the remote
			}
		}
		return fakea2a.Script(fakea2a.Working("working"), fakea2a.Hang())
	}})
	pol := registry.DefaultPolicy()
	pol.MaxConcurrentPerRun = n
	reg, err := newRegistry(registry.RemoteAgentSpec{Key: "research", DisplayName: "Research", Description: "d",
		Protocol: delegation.ProtocolA2A, AgentCardURL: srv.CardURL(), AuthRef: "env:" + tokenEnv, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	svc, err := delegator.New(ctx, delegator.Config{Registry: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		CleanupInterval: 20 * time.Millisecond, CleanupAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Close(ctx) }()

	var wg sync.WaitGroup
	results := make([]delegation.Result, n)
	for i := range n {
		obj := fmt.Sprintf("task %d", i)
		dctx, dcancel := context.WithCancel(ctx)
		defer dcancel()
		cancels.Store(obj, dcancel)
		wg.Go(func() {
			results[i] = svc.Delegate(dctx, delegator.Request{RunID: "run-1", Agent: "research", Objective: obj})
		})
	}
	wg.Wait()

	c, err := a2aclient.NewClient(ctx, srv.CardURL(), a2aclient.Options{AuthRef: "env:" + tokenEnv})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	// A task the delegator learned of too late for the delegation itself is
	// cancelled by its cleanup watcher (every 20ms, 3 attempts), after
	// Delegate returned. Wait, with a generous bound, until every remote
	// task is terminal: a task that never gets there is the failure.
	var bad []string
	testenv.Poll(30*time.Second, func() bool {
		bad = bad[:0]
		for _, id := range srv.Tasks() {
			task, err := c.GetTask(ctx, a2aclient.GetTaskRequest{TaskID: id})
			if err != nil {
				t.Fatalf("GetTask %s: %v", id, err)
			}
			if !a2aclient.IsTerminal(task.Status.State) {
				bad = append(bad, fmt.Sprintf("%s is %s", id, task.Status.State))
			}
		}
		return len(bad) == 0
	})
	if len(bad) > 0 {
		var codes []string
		for _, r := range results {
			code := ""
			if r.Error != nil {
				code = string(r.Error.Code)
			}
			codes = append(codes, fmt.Sprintf("%s/%s task=%q", r.Status, code, r.RemoteTaskID))
		}
		t.Errorf("%d of %d remote tasks were left running after their delegations were cancelled (CancelTask requests: %d): %s\nresults: %s",
			len(bad), len(srv.Tasks()), len(srv.RequestsFor("CancelTask")), strings.Join(bad, "; "), strings.Join(codes, ", "))
	}
}

// newRegistry builds a registry of A2A agents.
func newRegistry(specs ...registry.RemoteAgentSpec) (*registry.Registry, error) {
	return registry.New(registry.Options{Connectors: []remote.Connector{a2aremote.New(a2aremote.Options{})}}, specs...)
}
