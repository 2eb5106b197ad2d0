//go:build linux

package agentadaptor_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/shellagent"
	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
)

// After the child exits, the run reads everything it wrote before it ends,
// however late its reader gets to it: the wait for the pipes' end is
// bounded (a process that left the group may hold them open), but only
// what comes after the child's own output is let go (docs/design.md#order-of-a-run).

// gatedParser holds the first line until gate is closed: the reader of a
// host starved of CPU, which reads the child's output after it exited.
type gatedParser struct {
	agentadaptor.Parser
	gate  <-chan struct{}
	first bool
}

func (p *gatedParser) ParseLine(line []byte, emit agentadaptor.Emitter) error {
	if !p.first {
		p.first = true
		<-p.gate
	}
	return p.Parser.ParseLine(line, emit)
}

func TestLateReaderLosesNothingTheChildWrote(t *testing.T) {
	defer goleak.VerifyNone(t)
	defer agentadaptor.SetPipeDrainBound(10 * time.Millisecond)()
	ctx := testCtx(t)
	const n = 200 // about 60 KB of lines: the pipe holds them all, so the child exits at once
	ps := []agentadaptor.StreamPayload{{Kind: agentadaptor.KindTextStart, MessageID: "m1"}}
	for i := range n {
		ps = append(ps, agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: "m1", Delta: fmt.Sprintf("%03d %s ", i, strings.Repeat("x", 200))})
	}
	ps = append(ps, agentadaptor.StreamPayload{Kind: agentadaptor.KindTextEnd, MessageID: "m1", Text: "the end"})
	exited := filepath.Join(t.TempDir(), "exited")
	gate := make(chan struct{})
	a := shell(shellagent.Script(shellagent.Print(ps...), "touch "+shellagent.Quote(exited)))
	a.Edit = func(_ *agentadaptor.AdapterRequest, inv *agentadaptor.Invocation) {
		inv.Parser = &gatedParser{Parser: inv.Parser, gate: gate}
	}
	sdk := newSDK(t, a)
	h, err := sdk.Start(ctx, "x", agentadaptor.WithStreaming())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(gate)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if _, err := os.Stat(exited); err == nil {
				break
			}
		}
		time.Sleep(200 * time.Millisecond) // the child is gone and the bound long past: the reader now reads late
	}()
	got := adaptertest.Collect(ctx, t, h)
	res, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deltas := 0
	for _, p := range got {
		if p.Kind == agentadaptor.KindTextDelta {
			if want := fmt.Sprintf("%03d ", deltas); !strings.HasPrefix(p.Delta, want) {
				t.Fatalf("delta %d is %.10q", deltas, p.Delta)
			}
			deltas++
		}
	}
	if res.Status != agentadaptor.StatusCompleted || res.Output != "the end" || deltas != n {
		t.Fatalf("status %s, output %q, %d of %d deltas: the late reader lost what the child wrote before it exited", res.Status, res.Output, deltas, n)
	}
}

// A process that left the child's group and keeps its pipes open, silent
// or writing, does not hold the run once the bound has passed.
func TestProcessThatOutlivesTheChildDoesNotHoldTheRun(t *testing.T) {
	for _, c := range []struct {
		name, escapee string
		quiet         bool // it outlives the run (a writer dies of SIGPIPE once the run closed its ends)
	}{
		{"silent", "exec sleep 120", true},
		{"writing to stderr", "while :; do echo noise >&2; done", false},
		{"writing to stdout", `while :; do echo '{"kind":"text.delta","messageId":"m2","delta":"noise"}'; done`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			defer agentadaptor.SetPipeDrainBound(10 * time.Millisecond)()
			ctx := testCtx(t)
			pidFile := shellagent.Quote(filepath.Join(t.TempDir(), "pid"))
			// The child goes on once the process has left its group (it
			// writes its pid after setsid): the group's SIGKILL misses it.
			script := shellagent.Script(
				"setsid sh -c "+shellagent.Quote("echo $$ > "+pidFile+"; "+c.escapee)+" &",
				"while [ ! -s "+pidFile+" ]; do sleep 0.01; done",
				textScript("done"),
			)
			pid := func() int {
				b, _ := os.ReadFile(strings.Trim(pidFile, "'"))
				n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				return n
			}
			t.Cleanup(func() {
				if p := pid(); p > 0 {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			})
			sdk := newSDK(t, shell(script))
			h, err := sdk.Start(ctx, "x", agentadaptor.WithStreaming())
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.Collect(ctx, t, h)
			res, err := h.Wait(ctx)
			if err != nil {
				t.Fatalf("the run did not end while a process that left its group held its pipes: %v", err)
			}
			if res.Status != agentadaptor.StatusCompleted || res.Output != "done" {
				t.Fatalf("status %s, output %q", res.Status, res.Output)
			}
			if p := pid(); c.quiet && !alive(p) {
				t.Fatalf("the process that left the group (pid %d) is gone: it held nothing", p)
			}
		})
	}
}
