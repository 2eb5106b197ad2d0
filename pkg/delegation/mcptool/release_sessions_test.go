package mcptool_test

import (
	"testing"

	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// When a run's last service instance is released, the MCP sessions its CLI
// opened are closed by the endpoint: the CLI's session ends (its
// listening stream is ended and the revoked token cannot reopen it), and
// nothing of the run stays open on the host. Releasing an instance while
// another of the run lives closes nothing: the same session keeps serving
// tool calls (docs/design.md#secrets, "The MCP endpoint";
// docs/design.md#the-cascade, step 5).
func TestReleasingTheRunsLastInstanceClosesItsMCPSessions(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Completed("ok"))
	e := newEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	first := e.ensureRun(t, "run-1", tokenA)
	last := e.ensureRun(t, "run-1", tokenA)
	c, err := e.connect(t, tokenA)
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"agent": "research", "objective": "x"}
	if _, out := call(t, dt.Ctx(t), c, "delegate_to_agent", args, nil); out["status"] != delegation.StatusCompleted {
		t.Fatalf("a call of the run: %v", out)
	}
	if err := first.Release(dt.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, out := call(t, dt.Ctx(t), c, "delegate_to_agent", args, nil); out["status"] != delegation.StatusCompleted {
		t.Fatalf("a call over the same session while the run lives: %v", out)
	}
	if err := last.Release(dt.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		_ = c.session.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-dt.Ctx(t).Done():
		_ = c.session.Close()
		<-ended
		t.Fatal("the CLI's MCP session is still open after the run's last service instance was released")
	}
}
