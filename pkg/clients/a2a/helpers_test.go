package a2a_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	client "github.com/seed0634/agentadaptor/pkg/clients/a2a"
)

// leakCheck must be called first in a test: its cleanup then runs after the
// fake server's and the client's, and fails the test on leaked goroutines.
func leakCheck(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// cardHost is anything serving an Agent Card (a *fakea2a.Server).
type cardHost interface{ CardURL() string }

var _ cardHost = (*fakea2a.Server)(nil)

func dial(t *testing.T, f cardHost, opts client.Options) *client.Client {
	t.Helper()
	c, err := client.NewClient(testCtx(t), f.CardURL(), opts)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// collect drains a stream and returns its events.
func collect(t *testing.T, s *client.Stream) []client.Event {
	t.Helper()
	defer s.Close()
	var evs []client.Event
	for s.Next() {
		evs = append(evs, s.Event())
	}
	return evs
}

func terminalCount(evs []client.Event) int {
	n := 0
	for _, ev := range evs {
		if client.IsTerminalEvent(ev) {
			n++
		}
	}
	return n
}
