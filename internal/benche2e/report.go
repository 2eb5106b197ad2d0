package benche2e

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
	return b.String()
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
	DocBegin = "<!-- bench-e2e:begin (generated by `make bench-e2e`; edit bench/e2e or internal/benche2e instead) -->"
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
