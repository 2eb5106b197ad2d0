package relaybench

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MachineDescription says what the benchmark ran on: CPUs, model, memory,
// kernel, Go and Node versions.
func MachineDescription(node string) string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for l := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = " " + strings.TrimSpace(string(b))
	}
	gov := runtime.Version()
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		gov = strings.TrimSpace(string(out))
	}
	nodev := "node ?"
	if node == "" {
		node = "node"
	}
	if out, err := exec.Command(node, "--version").Output(); err == nil {
		nodev = "Node " + strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("%d CPUs (nproc) %s%s, Linux%s, %s, %s", runtime.NumCPU(), model, mem, kernel, gov, nodev)
}

func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func us(d time.Duration) string { return num(float64(d) / float64(time.Microsecond)) }

func num(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a < 10:
		return fmt.Sprintf("%.2f", v)
	case a < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func ratio(a, b float64) string {
	if b <= 0 || a < 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// row is one metric across the systems: its values (for ratios) and how to
// print them.
type row struct {
	name string
	val  func(sys string) (float64, string, bool)
}

// table writes a row per metric with a column per system, then the ratio
// columns: project to each baseline (the systems that are not the project
// in some configuration: bare, peer), and each other configuration of the
// project (project-nice, project-nats) to bare only (to the first baseline
// if bare is not measured; to project if no baseline is).
func table(b *bytes.Buffer, systems []string, rows []row) {
	var variants, baselines []string
	for _, s := range systems {
		if strings.HasPrefix(s, "project") {
			variants = append(variants, s)
		} else {
			baselines = append(baselines, s)
		}
	}
	type pair struct{ a, b string }
	var ratios []pair
	for _, v := range variants {
		switch {
		case len(baselines) == 0:
			if v != "project" && slices.Contains(variants, "project") {
				ratios = append(ratios, pair{v, "project"})
			}
		case v == "project":
			for _, o := range baselines {
				ratios = append(ratios, pair{v, o})
			}
		case slices.Contains(baselines, "bare"):
			ratios = append(ratios, pair{v, "bare"})
		default:
			ratios = append(ratios, pair{v, baselines[0]})
		}
	}
	b.WriteString("| |")
	for _, s := range systems {
		b.WriteString(" " + s + " |")
	}
	for _, p := range ratios {
		b.WriteString(" " + p.a + "/" + p.b + " |")
	}
	b.WriteString("\n|---|")
	for range len(systems) + len(ratios) {
		b.WriteString("--:|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("| " + r.name + " |")
		for _, s := range systems {
			_, txt, ok := r.val(s)
			if !ok {
				txt = "—"
			}
			b.WriteString(" " + txt + " |")
		}
		for _, p := range ratios {
			av, _, aok := r.val(p.a)
			bv, _, bok := r.val(p.b)
			if !aok || !bok {
				b.WriteString(" — |")
				continue
			}
			b.WriteString(" " + ratio(av, bv) + " |")
		}
		b.WriteString("\n")
	}
}

// Markdown renders the results: one table per concurrency level, the long
// delegation, and the profile summary if any.
func (r *Results) Markdown() string {
	var b bytes.Buffer
	systems := r.Config.Systems
	if len(systems) == 0 {
		systems = Systems
	}
	if slices.Contains(systems, "project-nice") {
		fmt.Fprintf(&b, "project-nice is the project with `parent.nice: %d`: its parent processes run at that nice value.\n\n", cmp.Or(r.Config.ParentNice, DefaultParentNice))
	}
	for _, c := range r.Config.Levels {
		by := map[string]*LevelResult{}
		for i := range r.Levels {
			if r.Levels[i].Concurrency == c {
				by[r.Levels[i].System] = &r.Levels[i]
			}
		}
		if len(by) == 0 {
			continue
		}
		var any *LevelResult
		for _, s := range systems {
			if by[s] != nil {
				any = by[s]
				break
			}
		}
		fmt.Fprintf(&b, "### %d concurrent delegation%s\n\n", c, plural(c))
		fmt.Fprintf(&b, "%d delegations per system (%d worker%s, closed loop), each %d chunks of %d B, %v apart.\n\n",
			any.Runs, c, plural(c), any.Stream.Chunks, any.Stream.Size, any.Stream.Interval)
		get := func(f func(*LevelResult) (float64, string)) func(string) (float64, string, bool) {
			return func(s string) (float64, string, bool) {
				lr := by[s]
				if lr == nil {
					return 0, "", false
				}
				v, t := f(lr)
				return v, t, true
			}
		}
		dur := func(f func(*LevelResult) time.Duration) func(string) (float64, string, bool) {
			return get(func(lr *LevelResult) (float64, string) { d := f(lr); return float64(d), ms(d) })
		}
		// stage is a project-only row: the other systems have no parent and
		// no tool call.
		stage := func(name string, i int) row {
			return row{name, func(s string) (float64, string, bool) {
				lr := by[s]
				if lr == nil || lr.Stages[i].N == 0 {
					return 0, "", false
				}
				return float64(lr.Stages[i].P50), ms(lr.Stages[i].P50), true
			}}
		}
		rows := []row{
			{"relay latency p50, ms", dur(func(l *LevelResult) time.Duration { return l.Latency.P50 })},
			{"relay latency p99, ms", dur(func(l *LevelResult) time.Duration { return l.Latency.P99 })},
			{"steady-state p50, ms", dur(func(l *LevelResult) time.Duration { return l.Steady.P50 })},
			{"steady-state p99, ms", dur(func(l *LevelResult) time.Duration { return l.Steady.P99 })},
			{"time to first chunk p50, ms", dur(func(l *LevelResult) time.Duration { return l.FirstChunk.P50 })},
			{"time to first chunk p99, ms", dur(func(l *LevelResult) time.Duration { return l.FirstChunk.P99 })},
			stage("… p50 until RUN_STARTED (host admits the run, starts the parent), ms", 0),
			stage("… p50 then until subagent.started (the parent process starts, opens its MCP session, calls the tool), ms", 1),
			stage("… p50 then until the first chunk (A2A request, remote, relay), ms", 2),
			{"chunks/s", get(func(l *LevelResult) (float64, string) { return l.ChunksPerSec, num(l.ChunksPerSec) })},
			{"CPU per chunk, µs (project: serve alone)", get(func(l *LevelResult) (float64, string) {
				s, _ := l.CPUPerChunk()
				return float64(s), us(s)
			})},
			{"CPU per chunk, µs (project: its parents alone)", projectOnly(get(func(l *LevelResult) (float64, string) {
				s, a := l.CPUPerChunk()
				return float64(a - s), us(a - s)
			}))},
			{"CPU per chunk, µs (project: serve + parents)", get(func(l *LevelResult) (float64, string) {
				_, a := l.CPUPerChunk()
				return float64(a), us(a)
			})},
			{"RSS growth per active delegation, KiB (project: serve alone)", get(func(l *LevelResult) (float64, string) {
				s, _, _ := l.RSSPerDelegation()
				return s, num(s / 1024)
			})},
			{"RSS growth per active delegation, KiB (project: serve + parents)", get(func(l *LevelResult) (float64, string) {
				_, a, _ := l.RSSPerDelegation()
				return a, num(a / 1024)
			})},
			{"… of which anonymous (RssAnon), KiB", get(func(l *LevelResult) (float64, string) {
				_, _, a := l.RSSPerDelegation()
				return a, num(a / 1024)
			})},
			{"remote CPU per chunk, µs (same remote)", get(func(l *LevelResult) (float64, string) {
				d := l.RemoteCPU / time.Duration(max(1, l.Chunks))
				return float64(d), us(d)
			})},
			{"load client CPU per chunk, µs", get(func(l *LevelResult) (float64, string) {
				d := l.ClientCPU / time.Duration(max(1, l.Chunks))
				return float64(d), us(d)
			})},
			{"chunks lost / terminals lost / errors", get(func(l *LevelResult) (float64, string) {
				return -1, fmt.Sprintf("%d / %d / %d", l.Lost, l.LostTerminals, l.Errors)
			})},
			{"other CPU on the machine, cores (not measured processes)", get(func(l *LevelResult) (float64, string) {
				return -1, fmt.Sprintf("%.2f", l.OtherCPU.Seconds()/l.Wall.Seconds())
			})},
		}
		table(&b, systems, rows)
		for _, s := range systems {
			if lr := by[s]; lr != nil && lr.FirstError != "" {
				fmt.Fprintf(&b, "\n%s: first error: `%s`\n", s, oneLine(lr.FirstError))
			}
		}
		if lr := by["project-nats"]; lr != nil && lr.Follower.N > 0 {
			followerTable(&b, lr)
		}
		b.WriteString("\n")
	}
	r.fanOutMarkdown(&b, systems)
	if len(r.Long) > 0 {
		by := map[string]*LongResult{}
		for i := range r.Long {
			by[r.Long[i].System] = &r.Long[i]
		}
		fmt.Fprintf(&b, "### One long delegation of %d chunks\n\n", r.Long[0].Expected)
		fmt.Fprintf(&b, "Unpaced: the remote yields to its event loop between chunks and otherwise sends as fast as it can, so latency here is queueing; throughput is first to last chunk at the client. %d delegations one after the other on one instance of each system; the figures are those of the run with the median throughput. Quarters are of the chunks received; CPU is per chunk in each quarter (the project: serve alone; its parent idles while it waits for the tool result).\n\n", max(1, len(r.Long[0].Throughputs)))
		get := func(f func(*LongResult) (float64, string)) func(string) (float64, string, bool) {
			return func(s string) (float64, string, bool) {
				lr := by[s]
				if lr == nil {
					return 0, "", false
				}
				v, t := f(lr)
				return v, t, true
			}
		}
		perChunk := func(d time.Duration, l *LongResult) time.Duration { return d / time.Duration(max(1, l.Chunks)) }
		rows := []row{
			{"chunks received / lost, terminal", get(func(l *LongResult) (float64, string) {
				return -1, fmt.Sprintf("%d / %d, %v", l.Chunks, l.Lost, l.Terminal)
			})},
			{"throughput, chunks/s (median run)", get(func(l *LongResult) (float64, string) { return l.ChunksPerSec, num(l.ChunksPerSec) })},
			{"throughput of each run, chunks/s", get(func(l *LongResult) (float64, string) {
				var p []string
				for _, t := range l.Throughputs {
					p = append(p, num(t))
				}
				return -1, strings.Join(p, ", ")
			})},
			{"CPU per chunk, µs (project: serve alone)", get(func(l *LongResult) (float64, string) {
				d := perChunk(l.CPU.Self, l)
				return float64(d), us(d)
			})},
			{"CPU per chunk, µs (project: serve + parent)", get(func(l *LongResult) (float64, string) {
				d := perChunk(l.CPU.Self+l.CPU.Children, l)
				return float64(d), us(d)
			})},
			{"remote CPU per chunk, µs", get(func(l *LongResult) (float64, string) {
				d := perChunk(l.RemoteCPU, l)
				return float64(d), us(d)
			})},
			{"time to first chunk, ms", get(func(l *LongResult) (float64, string) { return float64(l.FirstChunk), ms(l.FirstChunk) })},
			{"relay latency p50 / p99, ms", get(func(l *LongResult) (float64, string) {
				return float64(l.Latency.P50), ms(l.Latency.P50) + " / " + ms(l.Latency.P99)
			})},
			{"wall per chunk by quarter, µs", get(func(l *LongResult) (float64, string) {
				return -1, us(l.QuarterWall[0]) + " / " + us(l.QuarterWall[1]) + " / " + us(l.QuarterWall[2]) + " / " + us(l.QuarterWall[3])
			})},
			{"CPU per chunk by quarter, µs", get(func(l *LongResult) (float64, string) {
				return -1, us(l.QuarterCPU[0]) + " / " + us(l.QuarterCPU[1]) + " / " + us(l.QuarterCPU[2]) + " / " + us(l.QuarterCPU[3])
			})},
			{"last quarter / second quarter, CPU per chunk", get(func(l *LongResult) (float64, string) {
				if l.QuarterCPU[1] <= 0 {
					return -1, "—"
				}
				v := float64(l.QuarterCPU[3]) / float64(l.QuarterCPU[1])
				return -1, fmt.Sprintf("%.2f", v)
			})},
			{"other CPU on the machine, cores (not measured processes)", get(func(l *LongResult) (float64, string) {
				return -1, fmt.Sprintf("%.2f", l.OtherCPU.Seconds()/max(1e-9, l.Elapsed.Seconds()))
			})},
		}
		table(&b, systems, rows)
		for _, s := range systems {
			if lr := by[s]; lr != nil && lr.Error != "" {
				fmt.Fprintf(&b, "\n%s: error: `%s`\n", s, oneLine(lr.Error))
			}
		}
		b.WriteString("\n")
	}
	r.fixedMarkdown(&b, systems)
	return b.String()
}

// projectOnly shows a row for the project's configurations only (the
// others have no parent processes).
func projectOnly(f func(string) (float64, string, bool)) func(string) (float64, string, bool) {
	return func(s string) (float64, string, bool) {
		if !strings.HasPrefix(s, "project") {
			return 0, "", false
		}
		return f(s)
	}
}

// fanOutMarkdown writes a table per fan-out shape.
func (r *Results) fanOutMarkdown(b *bytes.Buffer, systems []string) {
	for _, shape := range r.Config.FanOut {
		by := map[string][]*FanOutResult{} // a system's rounds
		rounds := 0
		for i := range r.FanOut {
			if fr := &r.FanOut[i]; fr.Shape == shape {
				by[fr.System] = append(by[fr.System], fr)
				rounds = max(rounds, len(by[fr.System]))
			}
		}
		if len(by) == 0 {
			continue
		}
		var s0 Stream
		for _, f := range by {
			s0 = f[0].Stream
		}
		fmt.Fprintf(b, "### Fan-out: %d runs × %d concurrent delegations each (%d streams)\n\n", shape.Runs, shape.Width, shape.Streams())
		fmt.Fprintf(b, "All %d runs at once, each delegation %d chunks of %d B, %v apart. The project's parent makes its %d tool calls at once (a `parallel:` step); the bare relay relays %d remote streams into each of its %d responses; the peer, which has no fan-out, gets one AG-UI run per remote stream. **Steady state** is the window from the moment every stream has had its first chunk until the first stream has had its last: latency, CPU and RSS are of that window unless a row says otherwise.",
			shape.Runs, s0.Chunks, s0.Size, s0.Interval, shape.Width, shape.Width, shape.Runs)
		if rounds > 1 {
			fmt.Fprintf(b, " Each system was measured %d times, the systems taking turns (each round in a rotated order, a fresh instance each time): a figure is the median of its rounds (ratios are of the medians), and a count is listed per round where the rounds differ.", rounds)
		}
		b.WriteString("\n\n")
		// median returns the median by value of f over a system's rounds
		// (the lower middle one of an even count); for a figure without a
		// value (v < 0: counts, text) the rounds' texts, joined when they
		// differ.
		median := func(frs []*FanOutResult, windowOnly bool, f func(*FanOutResult) (float64, string)) (float64, string, bool) {
			type vt struct {
				v float64
				t string
			}
			var got []vt
			for _, fr := range frs {
				if windowOnly && fr.Window == 0 {
					continue
				}
				v, t := f(fr)
				got = append(got, vt{v, t})
			}
			if len(got) == 0 {
				return 0, "", false
			}
			if got[0].v < 0 {
				texts := make([]string, len(got))
				for i, g := range got {
					texts[i] = g.t
				}
				if len(slices.Compact(slices.Clone(texts))) == 1 {
					return -1, texts[0], true
				}
				return -1, strings.Join(texts, "; "), true
			}
			slices.SortStableFunc(got, func(a, b vt) int { return cmp.Compare(a.v, b.v) })
			m := got[(len(got)-1)/2]
			return m.v, m.t, true
		}
		get := func(f func(*FanOutResult) (float64, string)) func(string) (float64, string, bool) {
			return func(s string) (float64, string, bool) { return median(by[s], false, f) }
		}
		windowed := func(f func(*FanOutResult) (float64, string)) func(string) (float64, string, bool) {
			return func(s string) (float64, string, bool) { return median(by[s], true, f) }
		}
		dur := func(f func(*FanOutResult) time.Duration) func(string) (float64, string, bool) {
			return windowed(func(fr *FanOutResult) (float64, string) { d := f(fr); return float64(d), ms(d) })
		}
		perChunk := func(d time.Duration, fr *FanOutResult) time.Duration {
			return d / time.Duration(max(1, fr.WindowChunks))
		}
		rows := []row{
			{"AG-UI runs (POST /agui)", get(func(f *FanOutResult) (float64, string) { return -1, strconv.Itoa(f.Requests) })},
			{"every stream started after, ms (ramp)", dur(func(f *FanOutResult) time.Duration { return f.Ramp })},
			{"steady state: window, s / chunks in it", windowed(func(f *FanOutResult) (float64, string) {
				return -1, fmt.Sprintf("%.1f / %d", f.Window.Seconds(), f.WindowChunks)
			})},
			{"steady-state relay latency p50, ms", dur(func(f *FanOutResult) time.Duration { return f.Steady.P50 })},
			{"steady-state relay latency p99, ms", dur(func(f *FanOutResult) time.Duration { return f.Steady.P99 })},
			{"relay latency p99, whole level, ms", get(func(f *FanOutResult) (float64, string) { return float64(f.Latency.P99), ms(f.Latency.P99) })},
			{"time to first chunk p50 per stream, ms", get(func(f *FanOutResult) (float64, string) { return float64(f.FirstChunk.P50), ms(f.FirstChunk.P50) })},
			{"time to first chunk p99 per stream, ms", get(func(f *FanOutResult) (float64, string) { return float64(f.FirstChunk.P99), ms(f.FirstChunk.P99) })},
			{"chunks/s in the window", windowed(func(f *FanOutResult) (float64, string) {
				v := float64(f.WindowChunks) / f.Window.Seconds()
				return v, num(v)
			})},
			{"CPU per chunk, µs (project: serve alone)", windowed(func(f *FanOutResult) (float64, string) {
				s, _ := f.CPUPerChunk()
				return float64(s), us(s)
			})},
			{"CPU per chunk, µs (project: its parents alone)", projectOnly(windowed(func(f *FanOutResult) (float64, string) {
				s, a := f.CPUPerChunk()
				return float64(a - s), us(a - s)
			}))},
			{"CPU per chunk, µs (project: serve + parents)", windowed(func(f *FanOutResult) (float64, string) {
				_, a := f.CPUPerChunk()
				return float64(a), us(a)
			})},
			{"CPU per chunk over the whole level, µs (project: serve + reaped parents)", get(func(f *FanOutResult) (float64, string) {
				d := (f.LevelCPU.Self + f.LevelCPU.Children) / time.Duration(max(1, f.Chunks))
				return float64(d), us(d)
			})},
			{"RSS growth per active delegation, KiB (project: serve alone)", windowed(func(f *FanOutResult) (float64, string) {
				s, _, _ := f.RSSPerDelegation()
				return s, num(s / 1024)
			})},
			{"RSS growth per active delegation, KiB (project: serve + parents)", windowed(func(f *FanOutResult) (float64, string) {
				_, a, _ := f.RSSPerDelegation()
				return a, num(a / 1024)
			})},
			{"… of which anonymous (RssAnon), KiB", windowed(func(f *FanOutResult) (float64, string) {
				_, _, a := f.RSSPerDelegation()
				return a, num(a / 1024)
			})},
			{"remote CPU per chunk, µs (same remote)", windowed(func(f *FanOutResult) (float64, string) {
				d := perChunk(f.RemoteCPU, f)
				return float64(d), us(d)
			})},
			{"load client CPU per chunk, µs", windowed(func(f *FanOutResult) (float64, string) {
				d := perChunk(f.ClientCPU, f)
				return float64(d), us(d)
			})},
			{"chunks lost / runs without terminal / errors", get(func(f *FanOutResult) (float64, string) {
				return -1, fmt.Sprintf("%d / %d / %d", f.Lost, f.LostTerminals, f.Errors)
			})},
			{"other CPU on the machine in the window, cores (not measured processes)", windowed(func(f *FanOutResult) (float64, string) {
				return -1, fmt.Sprintf("%.2f", f.OtherCPU.Seconds()/f.Window.Seconds())
			})},
		}
		table(b, systems, rows)
		if rounds > 1 {
			roundRatios(b, by["project"], by["bare"])
		}
		for _, s := range systems {
			for _, fr := range by[s] {
				switch {
				case fr.FirstError == "":
				case rounds > 1:
					fmt.Fprintf(b, "\n%s, round %d: first error: `%s`\n", s, fr.Round, oneLine(fr.FirstError))
				default:
					fmt.Fprintf(b, "\n%s: first error: `%s`\n", s, oneLine(fr.FirstError))
				}
			}
		}
		b.WriteString("\n")
	}
}

// roundRatios writes, round by round, the project's steady-state p99 and
// serve CPU per chunk over the bare relay's of the same round: how far one
// run's ratios move.
func roundRatios(b *bytes.Buffer, project, bare []*FanOutResult) {
	var p99, cpu []string
	for _, p := range project {
		for _, q := range bare {
			if q.Round != p.Round || p.Window == 0 || q.Window == 0 {
				continue
			}
			ps, _ := p.CPUPerChunk()
			qs, _ := q.CPUPerChunk()
			p99 = append(p99, ratio(float64(p.Steady.P99), float64(q.Steady.P99)))
			cpu = append(cpu, ratio(float64(ps), float64(qs)))
		}
	}
	if len(p99) > 0 {
		fmt.Fprintf(b, "\nRound by round, project/bare: steady-state p99 %s; serve CPU per chunk %s.\n", strings.Join(p99, ", "), strings.Join(cpu, ", "))
	}
}

// fixedMarkdown writes the fixed-cost table.
func (r *Results) fixedMarkdown(b *bytes.Buffer, systems []string) {
	if len(r.Fixed) == 0 {
		return
	}
	by := map[string]*FixedResult{}
	for i := range r.Fixed {
		by[r.Fixed[i].System] = &r.Fixed[i]
	}
	fc := r.Fixed[0].Config
	fmt.Fprintf(b, "### Fixed cost per run and per delegation\n\n")
	rounds := max(1, len(r.Fixed[0].Rounds))
	fmt.Fprintf(b, "Three shapes, each on a fresh instance after a warm-up, %d runs in a closed loop of %d: one delegation of %d chunks per run, one of %d chunks, and %d delegations of %d chunks at once; chunks %v apart. The cost of a chunk is the slope between the first two; a run with one delegation costs the first minus its chunks; each further delegation adds what the third costs beyond its %[9]d chunks and that first run, divided by %[8]d; a run's own cost is the rest. The project's \"serve\" rows leave its parent processes out (their rows are apart); the bare relay's \"run\" is one POST carrying the delegations. The peer has no fan-out, so no per-run cost of its own. %[10]s\n\n",
		fc.Runs, fc.Concurrency, fc.Short, fc.Long, fc.Width, fc.Short, fc.Interval, fc.Width-1, fc.Width*fc.Short, roundsNote(rounds))
	get := func(f func(*FixedResult) (float64, string)) func(string) (float64, string, bool) {
		return func(s string) (float64, string, bool) {
			fr := by[s]
			if fr == nil {
				return 0, "", false
			}
			v, t := f(fr)
			return v, t, true
		}
	}
	msF := func(ns float64) string { return num(ns / 1e6) }
	shapeRow := func(name string, f func(*FixedResult) FixedShape) row {
		return row{name, get(func(fr *FixedResult) (float64, string) {
			d := f(fr).PerRun.Self
			return float64(d), msF(float64(d))
		})}
	}
	rows := []row{
		shapeRow(fmt.Sprintf("CPU per run, ms: 1 delegation of %d chunks (project: serve)", fc.Short), func(fr *FixedResult) FixedShape { return fr.ShortOne }),
		shapeRow(fmt.Sprintf("… 1 delegation of %d chunks", fc.Long), func(fr *FixedResult) FixedShape { return fr.LongOne }),
		shapeRow(fmt.Sprintf("… %d delegations of %d chunks", fc.Width, fc.Short), func(fr *FixedResult) FixedShape { return fr.ShortWide }),
		{"CPU per paced chunk (slope), µs (project: serve)", get(func(fr *FixedResult) (float64, string) {
			v := fr.PerChunk().Self
			return v, num(v / 1e3)
		})},
		{"**fixed CPU per delegation, ms (project: serve)**", get(func(fr *FixedResult) (float64, string) {
			v := fr.PerDelegation().Self
			return v, msF(v)
		})},
		{"**fixed CPU per run, ms (project: serve)**", get(func(fr *FixedResult) (float64, string) {
			v := fr.PerRun().Self
			return v, msF(v)
		})},
		{"parents: CPU per run, ms (start, MCP session, exit)", projectOnly(get(func(fr *FixedResult) (float64, string) {
			v := fr.PerRun().Children
			return v, msF(v)
		}))},
		{"parents: CPU per delegation, ms (tool call, progress, result)", projectOnly(get(func(fr *FixedResult) (float64, string) {
			v := fr.PerDelegation().Children
			return v, msF(v)
		}))},
		{"runs that failed", get(func(fr *FixedResult) (float64, string) { return -1, strconv.Itoa(fr.Errors) })},
	}
	table(b, fixedSystems(systems), rows)
	if rounds > 1 {
		var parts []string
		for _, s := range fixedSystems(systems) {
			fr := by[s]
			if fr == nil {
				continue
			}
			var per []string
			for _, c := range fr.RoundPerRun() {
				per = append(per, msF(c.Self))
			}
			parts = append(parts, fmt.Sprintf("%s %s", s, strings.Join(per, " / ")))
		}
		fmt.Fprintf(b, "\nFixed CPU per run, ms, round by round: %s.\n", strings.Join(parts, "; "))
	}
	for _, s := range systems {
		if fr := by[s]; fr != nil && fr.FirstError != "" {
			fmt.Fprintf(b, "\n%s: first error: `%s`\n", s, oneLine(fr.FirstError))
		}
	}
	b.WriteString("\n")
}

// roundsNote says how the fixed-cost figures of rounds rounds combine.
func roundsNote(rounds int) string {
	if rounds <= 1 {
		return "One round."
	}
	return fmt.Sprintf("The pass is made %d times, the systems taking turns; every figure is the median of its rounds' (the shapes' rows too, each apart).", rounds)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// Doc markers: WriteDoc replaces what lies between them.
const (
	DocBegin = "<!-- bench-e2e:begin (generated by `make bench-e2e`; edit bench/e2e or internal/tools/relaybench instead) -->"
	DocEnd   = "<!-- bench-e2e:end -->"
)

// WriteDoc replaces the generated section of the doc at path (between
// DocBegin and DocEnd) with the machine, the command and the tables.
func (r *Results) WriteDoc(path string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	i := bytes.Index(old, []byte(DocBegin))
	j := bytes.Index(old, []byte(DocEnd))
	if i < 0 || j < i {
		return errors.New(path + ": no generated section (" + DocBegin + " ... " + DocEnd + ")")
	}
	var b bytes.Buffer
	b.Write(old[:i])
	b.WriteString(DocBegin + "\n\n")
	fmt.Fprintf(&b, "Run on %s: %s, in %v.\n\n", r.Started.UTC().Format("2006-01-02"), r.Machine, r.Duration.Round(time.Second))
	fmt.Fprintf(&b, "```sh\n%s\n```\n\n", r.Command)
	b.WriteString(r.Markdown())
	b.Write(old[j:])
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// followerTable writes project-nats's owner client beside a client that
// follows each run on the second replica (from RUN_STARTED on).
func followerTable(b *bytes.Buffer, lr *LevelResult) {
	fmt.Fprintf(b, "\nproject-nats, the same runs seen by the client that posted each (on the run's replica) and by a client following each on the other replica from its RUN_STARTED:\n\n")
	b.WriteString("| | owner's client | follower on another replica | follower / owner |\n|---|---|---|---|\n")
	for _, r := range []struct {
		name      string
		own, foll time.Duration
	}{
		{"relay latency p50, ms", lr.Latency.P50, lr.Follower.P50},
		{"relay latency p99, ms", lr.Latency.P99, lr.Follower.P99},
		{"steady-state p50, ms", lr.Steady.P50, lr.FollowerSteady.P50},
		{"steady-state p99, ms", lr.Steady.P99, lr.FollowerSteady.P99},
	} {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", r.name, ms(r.own), ms(r.foll), ratio(float64(r.foll), float64(r.own)))
	}
	fmt.Fprintf(b, "| chunks received / lost, failed follows | %d / %d | %d / %d, %d | |\n", lr.Chunks, lr.Lost, lr.FollowerChunks, lr.FollowerLost, lr.FollowerErrors)
	if lr.FollowerFirstError != "" {
		fmt.Fprintf(b, "\nfollower: first error: `%s`\n", oneLine(lr.FollowerFirstError))
	}
}
