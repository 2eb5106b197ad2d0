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

// gatedParser holds the first line until gate is closed, then takes a
// millisecond per line: the reader of a host starved of CPU, which reads
// the child's output after it exited, and slowly (so the pipe still holds
// some of it whenever the run looks).
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
	time.Sleep(time.Millisecond)
	return p.Parser.ParseLine(line, emit)
}

// outliving returns the script lines that start escapee in a session of
// its own, so that the SIGKILL of the child's group misses it, and wait
// until it has left the group (it writes its pid after setsid). The
// returned pid reads that pid; the process is killed at the test's end.
func outliving(t *testing.T, escapee string) (script string, pid func() int) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "pid")
	pid = func() int {
		b, _ := os.ReadFile(file)
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	t.Cleanup(func() {
		if p := pid(); p > 0 {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	q := shellagent.Quote(file)
	return shellagent.Script(
		"setsid sh -c "+shellagent.Quote("echo $$ > "+q+"; "+escapee)+" &",
		"while [ ! -s "+q+" ]; do sleep 0.01; done",
	), pid
}

// A reader that gets to the child's output only after the child exited
// and the bound passed (a host starved of CPU) reads all of it, alone and
// beside a process that outlived the child and holds its pipes open (the
// run then ends once the child's own bytes are read).
func TestLateReaderLosesNothingTheChildWrote(t *testing.T) {
	for _, c := range []struct{ name, escapee string }{
		{"alone", ""},
		{"beside a process that holds the pipes", "exec sleep 120"},
	} {
		t.Run(c.name, func(t *testing.T) {
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
			script := shellagent.Script(shellagent.Print(ps...), "touch "+shellagent.Quote(exited))
			if c.escapee != "" {
				prefix, _ := outliving(t, c.escapee)
				script = shellagent.Script(prefix, script)
			}
			gate := make(chan struct{})
			a := shell(script)
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
				t.Fatalf("the run did not end: %v", err)
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
		})
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
			prefix, pid := outliving(t, c.escapee)
			script := shellagent.Script(prefix, textScript("done"))
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
