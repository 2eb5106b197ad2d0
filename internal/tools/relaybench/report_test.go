package relaybench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The ratio columns: project to every baseline, the project's other
// configurations to bare only.
func TestTableRatioColumns(t *testing.T) {
	vals := map[string]float64{"project": 120, "project-nice": 30, "bare": 3, "peer": 40}
	rows := []row{{"p99", func(s string) (float64, string, bool) {
		v, ok := vals[s]
		return v, "", ok
	}}}
	for _, tt := range []struct {
		systems []string
		header  string
		ratios  string
	}{
		{[]string{"project", "project-nice", "bare", "peer"},
			"| | project | project-nice | bare | peer | project/bare | project/peer | project-nice/bare |",
			"| 40.00× | 3.00× | 10.00× |"},
		{[]string{"project", "bare", "peer"},
			"| | project | bare | peer | project/bare | project/peer |",
			"| 40.00× | 3.00× |"},
		{[]string{"project", "project-nice"},
			"| | project | project-nice | project-nice/project |",
			"| 0.25× |"},
		{[]string{"project-nice", "peer"},
			"| | project-nice | peer | project-nice/peer |",
			"| 0.75× |"},
	} {
		var b bytes.Buffer
		table(&b, tt.systems, rows)
		lines := strings.Split(b.String(), "\n")
		if lines[0] != tt.header {
			t.Errorf("%v: header %q, want %q", tt.systems, lines[0], tt.header)
		}
		if !strings.HasSuffix(lines[2], tt.ratios) {
			t.Errorf("%v: row %q, want it to end in %q", tt.systems, lines[2], tt.ratios)
		}
		if n, want := strings.Count(lines[1], "|"), strings.Count(lines[0], "|"); n != want {
			t.Errorf("%v: separator %q has %d bars, header %d", tt.systems, lines[1], n, want)
		}
	}
}

// The fixed costs are derived from the three shapes: here serve costs
// 3 ms per run, 1 ms per delegation and 100 µs per chunk, the parents 10
// ms per run and 2 ms per delegation.
func TestFixedCostDerivation(t *testing.T) {
	cfg := FixedConfig{Runs: 100, Concurrency: 10, Width: 10, Short: 2, Long: 102}
	r := &FixedResult{Config: cfg,
		ShortOne:  FixedShape{PerRun: fixedCost(1, 2, 1)},
		LongOne:   FixedShape{PerRun: fixedCost(1, 102, 1)},
		ShortWide: FixedShape{PerRun: fixedCost(10, 2, 1)},
	}
	nearNS(t, "per chunk", r.PerChunk().Self, 0.1e6)
	nearNS(t, "per delegation", r.PerDelegation().Self, 1e6)
	nearNS(t, "per run", r.PerRun().Self, 3e6)
	nearNS(t, "parents per chunk", r.PerChunk().Children, 0)
	nearNS(t, "parents per delegation", r.PerDelegation().Children, 2e6)
	nearNS(t, "parents per run", r.PerRun().Children, 10e6)
}

// fixedCost is the CPU per run of a shape of width delegations of chunks
// chunks when serve costs 3 ms per run, 1 ms per delegation and 100 µs per
// chunk, all slowed by k, and the parents 10 ms per run and 2 ms per
// delegation.
func fixedCost(width, chunks int, k float64) CPU {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	return CPU{Self: ms(k * (3 + float64(width)*(1+0.1*float64(chunks)))), Children: ms(10 + 2*float64(width))}
}

// nearNS fails t unless got is within 1 ns of want.
func nearNS(t *testing.T, name string, got, want float64) {
	t.Helper()
	if d := got - want; d > 1 || d < -1 {
		t.Errorf("%s = %.0f ns, want %.0f", name, got, want)
	}
}

// With rounds, each derived figure is the median of the rounds' own: a
// round skewed by a slower machine in one of its shapes (here the wide
// run of round 2 at twice the CPU) moves neither the figures nor the
// shapes' medians; and each round's per-run figure is kept.
func TestFixedCostMedianOfRounds(t *testing.T) {
	cfg := FixedConfig{Runs: 100, Rounds: 3, Concurrency: 10, Width: 10, Short: 2, Long: 102}
	r := &FixedResult{Config: cfg}
	for _, slow := range []float64{1, 2, 1} {
		r.addRound(FixedRound{
			ShortOne:  FixedShape{PerRun: fixedCost(1, 2, 1), Runs: 100},
			LongOne:   FixedShape{PerRun: fixedCost(1, 102, 1), Runs: 100},
			ShortWide: FixedShape{PerRun: fixedCost(10, 2, slow), Runs: 100},
		})
	}
	nearNS(t, "per chunk", r.PerChunk().Self, 0.1e6)
	nearNS(t, "per delegation", r.PerDelegation().Self, 1e6)
	nearNS(t, "per run", r.PerRun().Self, 3e6)
	nearNS(t, "parents per run", r.PerRun().Children, 10e6)
	nearNS(t, "wide shape's median", float64(r.ShortWide.PerRun.Self), float64(fixedCost(10, 2, 1).Self))
	if r.ShortWide.Runs != 300 {
		t.Errorf("wide shape: %d runs, want the rounds' 300", r.ShortWide.Runs)
	}
	per := r.RoundPerRun()
	if len(per) != 3 {
		t.Fatalf("%d rounds' per-run figures, want 3", len(per))
	}
	nearNS(t, "round 1 per run", per[0].Self, 3e6)
	if per[1].Self > 2.9e6 && per[1].Self < 3.1e6 {
		t.Errorf("round 2 per run = %.0f ns: the skewed round is not its own", per[1].Self)
	}
}

// The fan-out table renders for every system, and a level without a
// steady state shows "—" in the window's rows instead of zeros.
func TestFanOutTableWithoutSteadyState(t *testing.T) {
	shape := FanShape{Runs: 2, Width: 3}
	res := &Results{Config: Config{Systems: []string{"project", "bare"}, FanOut: []FanShape{shape}}}
	res.FanOut = []FanOutResult{
		{System: "project", Shape: shape, Requests: 2, Chunks: 60, Window: 2 * time.Second, WindowChunks: 50, CPU: CPU{Self: 10 * time.Millisecond}},
		{System: "bare", Shape: shape, Requests: 2, Chunks: 60, FirstError: "no steady state: 5 of 6 streams started"},
	}
	md := res.Markdown()
	if !strings.Contains(md, "### Fan-out: 2 runs × 3 concurrent delegations each (6 streams)") {
		t.Fatalf("no fan-out table:\n%s", md)
	}
	for l := range strings.SplitSeq(md, "\n") {
		if strings.HasPrefix(l, "| CPU per chunk, µs (project: serve alone) |") {
			if want := "| CPU per chunk, µs (project: serve alone) | 200 | — | — |"; l != want {
				t.Errorf("row %q, want %q", l, want)
			}
			return
		}
	}
	t.Errorf("no CPU row:\n%s", md)
}

// With rounds, each figure is the median of a system's rounds (the lower
// middle one of an even count), ratios are of the medians, counts that
// differ are listed per round, and the project's ratios to the bare relay
// are given round by round.
func TestFanOutTableMediansOfRounds(t *testing.T) {
	shape := FanShape{Runs: 2, Width: 3}
	res := &Results{Config: Config{Systems: []string{"project", "bare"}, FanOut: []FanShape{shape}}}
	round := func(sys string, r int, cpu time.Duration, p99 time.Duration, lost int) FanOutResult {
		return FanOutResult{System: sys, Shape: shape, Round: r, Requests: 2, Chunks: 100, Lost: lost, Window: time.Second,
			WindowChunks: 100, CPU: CPU{Self: cpu}, Steady: Percentiles{P99: p99}}
	}
	res.FanOut = []FanOutResult{
		round("project", 1, 30*time.Millisecond, 9*time.Millisecond, 0),
		round("bare", 1, 10*time.Millisecond, 3*time.Millisecond, 0),
		round("bare", 2, 20*time.Millisecond, 1*time.Millisecond, 0),
		round("project", 2, 10*time.Millisecond, 1*time.Millisecond, 1),
		round("project", 3, 20*time.Millisecond, 4*time.Millisecond, 0),
		round("bare", 3, 40*time.Millisecond, 2*time.Millisecond, 0),
	}
	md := res.Markdown()
	want := []string{
		"| CPU per chunk, µs (project: serve alone) | 200 | 200 | 1.00× |",
		"| steady-state relay latency p99, ms | 4.00 | 2.00 | 2.00× |",
		"| chunks lost / runs without terminal / errors | 0 / 0 / 0; 1 / 0 / 0; 0 / 0 / 0 | 0 / 0 / 0 | — |",
		"Round by round, project/bare: steady-state p99 3.00×, 1.00×, 2.00×; serve CPU per chunk 3.00×, 0.50×, 0.50×.",
		"Each system was measured 3 times",
	}
	for _, w := range want {
		if !strings.Contains(md, w) {
			t.Errorf("no %q in:\n%s", w, md)
		}
	}
}
