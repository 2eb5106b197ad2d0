package agentadaptor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/shellagent"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"

	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
)

// readyLine is what the children of these tests print once their SIGINT
// trap is installed.
var readyLine = shellagent.Print(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextStart, MessageID: "ready"})

// waitReady reads h's payloads until the child said it is ready.
func waitReady(t *testing.T, ctx context.Context, h *agentadaptor.RunHandle) {
	t.Helper()
	for {
		select {
		case p, ok := <-h.StreamEvents():
			if !ok {
				t.Fatal("the run ended before its child was ready")
			}
			if p.Kind == agentadaptor.KindTextStart && p.MessageID == "ready" {
				return
			}
		case <-ctx.Done():
			t.Fatal("the child never said it was ready")
		}
	}
}

// cancelWatcher is a runtime service that records, when the SDK calls
// RunCancelling, whether the run's child is still alive (its pid is in
// pidFile), and when it is released.
type cancelWatcher struct {
	pidFile string
	mu      sync.Mutex
	events  []string
}

func (s *cancelWatcher) Ensure(context.Context, agentadaptor.RuntimeServiceRequest) (agentadaptor.RuntimeService, error) {
	return s, nil
}

func (s *cancelWatcher) Ref() agentadaptor.RuntimeServiceRef {
	return agentadaptor.RuntimeServiceRef{ID: "cancel-watcher"}
}

func (s *cancelWatcher) RunCancelling() {
	b, _ := os.ReadFile(s.pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, fmt.Sprintf("cancelling(child alive: %v)", pid > 0 && alive(pid)))
}

func (s *cancelWatcher) Release(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, "released")
	return nil
}

// Runtime services hear RunCancelling while the child is still running,
// before it is signalled (docs/design.md#the-cascade, step 2): the child
// here has its SIGINT trap installed and sleeps through the whole grace
// period, so a call made after the SIGINT/SIGKILL wait would find it gone.
func TestRunCancellingComesBeforeTheChildExits(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	obs := &cancelWatcher{pidFile: pidFile}
	script := shellagent.Script(
		"trap '' INT",
		"echo $$ > "+shellagent.Quote(pidFile),
		readyLine,
		"sleep 300",
	)
	sdk := newSDK(t, shell(script))
	h, err := sdk.Start(ctx, "x", agentadaptor.WithStreaming(), agentadaptor.WithRuntimeServices(obs),
		agentadaptor.WithCancelGrace(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, ctx, h)
	if err := h.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	adaptertest.Collect(ctx, t, h)
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCancelled {
		t.Fatalf("status %s: %v", res.Status, res.Failure)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if got := strings.Join(obs.events, ", "); got != "cancelling(child alive: true), released" {
		t.Fatalf("the service heard %q, want RunCancelling while the child ran, then Release", got)
	}
}

// A cancelled child gets its grace period (docs/design.md#the-cascade, step
// 3): SIGINT first, and SIGKILL only if it has not exited when the grace
// ends. This child traps SIGINT, notes it, then does its cleanup — which
// the test holds until it has seen the note — and exits on its own, well
// within the grace; a SIGKILL sent with the SIGINT would cut the cleanup.
func TestCancelGivesTheChildItsGrace(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	cleanup := shellagent.Gate(filepath.Join(dir, "cleanup"))
	m := shellagent.Quote(marker)
	script := shellagent.Script(
		fmt.Sprintf("trap 'echo interrupted >> %s; %s; echo cleaned-up >> %s; exit 0' INT", m, cleanup.Wait(), m),
		readyLine,
		// An asynchronous list ignores SIGINT; wait returns when the trap
		// fires, so the trap runs at once.
		"sleep 300 >/dev/null 2>&1 &",
		"wait",
	)
	sdk := newSDK(t, shell(script))
	// The grace only bounds the test: the child exits long before.
	h, err := sdk.Start(ctx, "x", agentadaptor.WithStreaming(), agentadaptor.WithCancelGrace(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, ctx, h)
	cancelled := make(chan error, 1)
	go func() { cancelled <- h.Cancel(ctx) }()
	noted := func() bool {
		b, _ := os.ReadFile(marker)
		return strings.Contains(string(b), "interrupted")
	}
	ended := func() bool {
		select {
		case <-h.Done():
			return true
		default:
			return false
		}
	}
	// The child notes the SIGINT; a child killed at once never does (the
	// run then ends without it).
	testenv.WaitUntil(t, "the child to note the SIGINT, or the run to end", func() bool { return noted() || ended() })
	cleanup.Release(t)
	if err := <-cancelled; err != nil {
		t.Fatal(err)
	}
	adaptertest.Collect(ctx, t, h)
	res, _ := h.Wait(ctx)
	b, _ := os.ReadFile(marker)
	if got := string(b); got != "interrupted\ncleaned-up\n" {
		t.Fatalf("the child's notes: %q, want it interrupted and then cleaned up (SIGKILL before the grace ended?)", got)
	}
	if res.Status != agentadaptor.StatusCancelled || res.ExitCode != 0 {
		t.Fatalf("status %s, exit code %d (%v): want cancelled, and the child's own exit 0", res.Status, res.ExitCode, res.Failure)
	}
}
