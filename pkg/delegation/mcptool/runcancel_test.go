package mcptool_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	agentadaptor "github.com/seed0634/agentadaptor"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/internal/testkit/shellagent"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/mcptool"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// tokenCapture wraps the delegation service's manager and keeps the run
// token the SDK gave the run (the service it returns is the real one).
type tokenCapture struct {
	agentadaptor.RuntimeServiceManager
	mu    *sync.Mutex
	token *string
}

func (c tokenCapture) Ensure(ctx context.Context, req agentadaptor.RuntimeServiceRequest) (agentadaptor.RuntimeService, error) {
	c.mu.Lock()
	*c.token = req.RunToken
	c.mu.Unlock()
	return c.RuntimeServiceManager.Ensure(ctx, req)
}

// A parent run cancelled while its delegation is active cancels the remote
// task at once (docs/design.md#the-cascade, step 2), through the real SDK
// path: SDK.Cancel -> RunCancelling of the delegation service -> the
// delegator -> A2A CancelTask. The parent CLI here ignores SIGINT and
// waits at a gate, and its tool call never sends notifications/cancelled:
// the remote cancel must arrive while it still runs, long before the SDK
// releases the service (which would cancel the delegation too, as
// parent_run_ended).
func TestRunCancelReachesTheRemoteWhileTheParentStillRuns(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Working("busy"), fakea2a.Hang())
	e := newEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	exit := shellagent.Gate(filepath.Join(t.TempDir(), "exit"))
	parent := &shellagent.Adapter{Script: shellagent.Script(
		"trap '' INT",
		shellagent.Print(agentadaptor.StreamPayload{Kind: agentadaptor.KindToolCallStart, ToolCallID: "call-1", ToolName: "mcp__a2a-delegation__delegate_to_agent"}),
		exit.Wait(),
	)}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(parent))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var token string
	ctx := dt.Ctx(t)
	// The grace only bounds the test: the parent exits when the test opens
	// its gate.
	h, err := sdk.Start(ctx, "x", agentadaptor.WithStreaming(), agentadaptor.WithCancelGrace(time.Hour),
		agentadaptor.WithRuntimeServices(tokenCapture{e.srv.RuntimeService(), &mu, &token}))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range h.StreamEvents() {
		}
	}()
	var once sync.Once
	letParentExit := func() { once.Do(func() { exit.Release(t) }) }
	defer func() {
		// Whatever happened, let the parent go and wait for the run's end.
		letParentExit()
		_ = h.Cancel(ctx)
	}()
	rec := e.Record(t, h.RunID())
	mu.Lock()
	tok := token
	mu.Unlock()
	// The parent CLI's tool call, with the run's own token (what the CLI's
	// MCP client sends); it never cancels it.
	c, err := e.connect(t, tok)
	if err != nil {
		t.Fatal(err)
	}
	done := callAsync(context.Background(), c, mcptool.ToolName, map[string]any{"agent": "research", "objective": "x"}, mcp.Meta{mcptool.MetaScriptedToolCallID: "call-1"})
	rec.WaitKind(t, delegation.DelegationStatus, "working")

	cancelled := make(chan error, 1)
	go func() { cancelled <- h.Cancel(ctx) }()
	dt.WaitUntil(t, "the remote task's cancel while the parent CLI still runs", func() bool { return len(srv.RequestsFor("CancelTask")) > 0 })
	select {
	case <-h.Done():
		t.Fatal("the run ended before the test let the parent CLI exit")
	default:
	}
	if cs := srv.RequestsFor("CancelTask"); cs[0].Metadata["reason"] != "parent_cancelled" {
		t.Errorf("cancel reason %v, want parent_cancelled (RunCancelling), not the release's parent_run_ended", cs[0].Metadata["reason"])
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	if len(dt.OfKind(evs, delegation.DelegationCancelled)) != 1 {
		t.Errorf("events %s", dt.KindsOf(evs))
	}
	if out := <-done; out["status"] != "cancelled" {
		t.Errorf("tool result %v", out)
	}

	letParentExit()
	if err := <-cancelled; err != nil {
		t.Fatal(err)
	}
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCancelled {
		t.Errorf("run status %s", res.Status)
	}
	if n := len(srv.RequestsFor("CancelTask")); n != 1 {
		t.Errorf("%d CancelTask requests, want 1", n)
	}
}
