package delegator

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

type resolved struct{ run, del, parent string }

func newTestCorrelator() (*Correlator, *[]resolved, *sync.Mutex) {
	var mu sync.Mutex
	var got []resolved
	c := NewCorrelator(func(run, del, parent string) {
		mu.Lock()
		got = append(got, resolved{run, del, parent})
		mu.Unlock()
	}, registry.ReservedToolName, "delegate_to_research_agent")
	return c, &got, &mu
}

func TestCorrelatorStrong(t *testing.T) {
	c, got, _ := newTestCorrelator()
	c.ObserveToolCall("run", "toolu-1", "mcp__a2a-delegation__delegate_to_agent")
	if p, lvl := c.Register("run", "del-1", "toolu-1"); p != "toolu-1" || lvl != CorrelationStrong {
		t.Errorf("%q %s", p, lvl)
	}
	// The strong claim consumed the observation: a medium delegation does not get it.
	if p, lvl := c.Register("run", "del-2", ""); p != "" || lvl != CorrelationPending {
		t.Errorf("%q %s", p, lvl)
	}
	if len(*got) != 0 {
		t.Errorf("callbacks %v", *got)
	}
}

func TestCorrelatorMediumByCallOrder(t *testing.T) {
	c, got, mu := newTestCorrelator()
	// Observation first.
	if !c.IsDelegationTool("mcp__a2a_delegation__delegate_to_research_agent") || c.IsDelegationTool("mcp__x__other") || c.IsDelegationTool("Bash") {
		t.Error("tool name matching")
	}
	c.ObserveToolCall("run", "call-1", registry.ReservedToolName)
	c.ObserveToolCall("run", "call-x", "Bash") // ignored
	if p, lvl := c.Register("run", "del-1", ""); p != "call-1" || lvl != CorrelationMedium {
		t.Errorf("%q %s", p, lvl)
	}
	// Delegations first: resolved later in order, announced.
	c.Register("run", "del-2", "")
	c.Register("run", "del-3", "")
	if c.ParentOf("del-2") != "" {
		t.Error("resolved too early")
	}
	if d := c.ObserveToolCall("run", "call-2", registry.ReservedToolName); d != "del-2" {
		t.Errorf("claimed %q", d)
	}
	c.ObserveToolCall("run", "call-2", registry.ReservedToolName) // duplicate observation ignored
	c.ObserveToolCall("run", "call-3", "delegate_to_research_agent")
	if c.ParentOf("del-2") != "call-2" || c.ParentOf("del-3") != "call-3" || c.Level("del-3") != CorrelationMedium {
		t.Errorf("parents %q %q", c.ParentOf("del-2"), c.ParentOf("del-3"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(*got) != 2 || (*got)[0] != (resolved{"run", "del-2", "call-2"}) || (*got)[1] != (resolved{"run", "del-3", "call-3"}) {
		t.Errorf("callbacks %v", *got)
	}
	// Runs do not mix.
	c.ObserveToolCall("other", "call-o", registry.ReservedToolName)
	if p, _ := c.Register("run", "del-4", ""); p != "" {
		t.Errorf("cross-run claim %q", p)
	}
	c.ForgetRun("run")
	if c.ParentOf("del-2") != "" {
		t.Error("ForgetRun kept state")
	}
}

func TestWeakCorrelationFailureModes(t *testing.T) {
	now := time.Unix(1000, 0)
	c := NewCorrelator(nil, registry.ReservedToolName)
	c.now = func() time.Time { return now }
	window := 2 * time.Second

	// Works only for one isolated call.
	c.ObserveToolCall("run-1", "call-1", registry.ReservedToolName)
	if run, call, err := c.ResolveWeak("del-1", window); err != nil || run != "run-1" || call != "call-1" {
		t.Fatalf("isolated call: %q %q %v", run, call, err)
	}
	// Failure mode 1: concurrent calls (same run or across runs) are ambiguous: refused.
	c.ObserveToolCall("run-1", "call-2", registry.ReservedToolName)
	c.ObserveToolCall("run-2", "call-3", registry.ReservedToolName)
	if _, _, err := c.ResolveWeak("del-2", window); !errors.Is(err, ErrWeakAmbiguous) {
		t.Errorf("concurrent calls: %v, want ErrWeakAmbiguous", err)
	}
	// Failure mode 2: a retried request finds no candidate once the only
	// observation was claimed.
	c2 := NewCorrelator(nil, registry.ReservedToolName)
	c2.now = func() time.Time { return now }
	c2.ObserveToolCall("run-1", "call-1", registry.ReservedToolName)
	if _, _, err := c2.ResolveWeak("del-1", window); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c2.ResolveWeak("del-1-retry", window); !errors.Is(err, ErrWeakNoCandidate) {
		t.Errorf("retry: %v, want ErrWeakNoCandidate", err)
	}
	// Failure mode 3 (the reason weak mode is diagnostic only): a stale
	// observation whose MCP request never arrived is claimed by an
	// unrelated later request: a silent misassociation.
	c3 := NewCorrelator(nil, registry.ReservedToolName)
	c3.now = func() time.Time { return now }
	c3.ObserveToolCall("run-A", "call-lost", registry.ReservedToolName) // its request failed client-side
	now = now.Add(time.Second)
	run, call, err := c3.ResolveWeak("del-from-run-B", window)
	if err != nil || run != "run-A" || call != "call-lost" {
		t.Fatalf("stale observation: %q %q %v", run, call, err)
	}
	t.Logf("known failure: a request of another run was attributed to %s/%s", run, call)
	// Outside the window nothing is guessed.
	c3.ObserveToolCall("run-A", "call-old", registry.ReservedToolName)
	now = now.Add(time.Hour)
	if _, _, err := c3.ResolveWeak("del-x", window); !errors.Is(err, ErrWeakNoCandidate) {
		t.Errorf("outside the window: %v", err)
	}
}
