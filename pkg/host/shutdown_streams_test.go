package host_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/host"
)

// Shutdown with many runs in flight: it returns only once every run's
// stream has emitted its terminal event, so each client's stream, read
// after Shutdown returned, ends with it — none is cut by the hub closing
// first (docs/design.md#shutdown, step 2). Each run's delegation keeps
// its stream busy (status updates) up to the moment it is cancelled.
func TestShutdownEndsEveryStreamWithItsTerminal(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const runs = 8
	remote, spec := researchAgent(t, fakea2a.Script(
		fakea2a.Working("reading 1"), fakea2a.Working("reading 2"), fakea2a.Working("reading 3"), fakea2a.Hang()))
	spec.Policy.MaxConcurrentGlobal = runs
	h, srv := goHost(t, host.Config{Agents: []registry.RemoteAgentSpec{spec}, MaxActiveRuns: runs}, delegating)
	bodies := make([]io.ReadCloser, runs)
	for i := range runs {
		resp := post(t, srv.URL+"/agui", strings.Replace(input, "run-client-1", fmt.Sprintf("run-shut-%d", i), 1))
		bodies[i] = resp.Body
		defer resp.Body.Close()
	}
	testenv.WaitUntil(t, "every delegation to start at the remote", func() bool { return len(remote.Tasks()) == runs })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, b := range bodies {
		wg.Go(func() {
			rest, _ := io.ReadAll(b)
			if !bytes.Contains(rest, []byte(`"type":"RUN_ERROR"`)) && !bytes.Contains(rest, []byte(`"type":"RUN_FINISHED"`)) {
				t.Errorf("run %d: the stream ended without its terminal event:\n%s", i, rest)
			}
		})
	}
	wg.Wait()
}

// A run's terminal event waits in its stream for its delegations'
// terminal events, bounded by the stream's hold. Here the bus never
// delivers the delegation's terminal, so when the run has ended its
// stream has not: Shutdown still returns only once the stream has
// emitted its terminal (the hold ran out), never cutting it at the run's
// end (docs/design.md#shutdown, step 2).
func TestShutdownWaitsForAStreamHeldBehindItsRun(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	host.SetBus(t, func() delegation.EventBus { return terminalsWithheld{delegation.NewMemoryBus()} })
	remote, spec := researchAgent(t, fakea2a.Script(fakea2a.Working("reading"), fakea2a.Hang()))
	h, srv := goHost(t, host.Config{Agents: []registry.RemoteAgentSpec{spec}}, delegating)
	resp := post(t, srv.URL+"/agui", input)
	defer resp.Body.Close()
	testenv.WaitUntil(t, "the delegation to start at the remote", func() bool { return len(remote.Tasks()) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(resp.Body)
	if !bytes.Contains(rest, []byte(`"type":"RUN_ERROR"`)) {
		t.Fatalf("the stream ended without its terminal event:\n%s", rest)
	}
}

// terminalsWithheld is a bus that loses every delegation's terminal event.
type terminalsWithheld struct{ delegation.EventBus }

func (b terminalsWithheld) Publish(ev delegation.DelegationEvent) {
	if !ev.Kind.Terminal() {
		b.EventBus.Publish(ev)
	}
}
