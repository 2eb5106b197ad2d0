package a2adelegation

import (
	"context"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/seed0634/agentadaptor/internal/fakea2a"
)

type a2aTaskID = a2a.TaskID

const (
	timeMillisecond = time.Millisecond
	timeHour        = time.Hour
)

func contextWithCancel(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(ctx)
}

// waitUntil polls cond (generous deadline; not a timing assertion).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func tctxBG() context.Context { return context.Background() }

func fakeWorkingThenRelease() []any {
	return []any{fakea2aWorking("busy"), fakea2aAwaitRelease(), fakea2aCompleted("ok")}
}

var (
	fakea2aWorking      = fakea2a.Working
	fakea2aAwaitRelease = fakea2a.AwaitRelease
	fakea2aCompleted    = fakea2a.Completed
)

func (m *MemoryArtifactStore) putBG(a StoredArtifact) error { return m.Put(context.Background(), a) }
