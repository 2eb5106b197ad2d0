package relaybench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultFanOut are the fan-out shapes measured by default. At 10 × 100
// the streams are paced 200 ms apart, 300 chunks each: 1,000 streams at
// 20 ms would ask the remote alone for 50,000 chunks a second, over four
// cores of its CPU on the 2-core machine the report is made on, so no
// system would reach a steady state (every stream started before the
// first ends); 5,000 a second leaves the relays room to be measured.
const DefaultFanOut = "10x10,10x100:300@200ms"

// FanShape is a fan-out level: Runs parent runs at once, each with Width
// delegations at once (the shape users run: few parents, several
// delegations each). Chunks and Interval, when set, replace the fan-out
// stream's for this shape alone.
type FanShape struct {
	Runs, Width int
	Chunks      int
	Interval    time.Duration
}

// Streams is the number of remote streams of the shape.
func (f FanShape) Streams() int { return f.Runs * f.Width }

func (f FanShape) String() string { return fmt.Sprintf("%dx%d", f.Runs, f.Width) }

// stream returns the stream of each of the shape's delegations: def with
// the shape's own chunks and interval.
func (f FanShape) stream(def Stream) Stream {
	if f.Chunks > 0 {
		def.Chunks = f.Chunks
	}
	if f.Interval > 0 {
		def.Interval = f.Interval
	}
	return def
}

// ParseFanShapes parses "10x10,10x100:300@200ms": RUNSxDELEGATIONS, each
// optionally with its own CHUNKS@INTERVAL.
func ParseFanShapes(s string) ([]FanShape, error) {
	var out []FanShape
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		bad := fmt.Errorf("bad fan-out shape %q: want RUNSxDELEGATIONS[:CHUNKS@INTERVAL], e.g. 10x100 or 10x100:300@200ms", part)
		dims, stream, hasStream := strings.Cut(part, ":")
		a, b, ok := strings.Cut(dims, "x")
		r, err1 := strconv.Atoi(a)
		w, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || r < 1 || w < 1 {
			return nil, bad
		}
		shape := FanShape{Runs: r, Width: w}
		if hasStream {
			c, iv, ok := strings.Cut(stream, "@")
			n, err1 := strconv.Atoi(c)
			d, err2 := time.ParseDuration(iv)
			if !ok || err1 != nil || err2 != nil || n < 2 || d <= 0 {
				return nil, bad
			}
			shape.Chunks, shape.Interval = n, d
		}
		out = append(out, shape)
	}
	return out, nil
}

// FanOutResult is one system at one fan-out shape. The steady state is
// the window from the moment every stream has had its first chunk to the
// moment the first stream has had its last one: every delegation is live
// and none has ended. Latency, CPU and memory figures are of that window
// unless their name says otherwise.
type FanOutResult struct {
	System string
	Shape  FanShape
	Stream Stream
	// Round is the round of the shape this result is of, from 1.
	Round int
	// Requests is the number of POST /agui: Runs for the project and the
	// bare relay (each carries Width streams), Runs×Width for the peer (one
	// remote stream per AG-UI run: @ag-ui/a2a has no fan-out).
	Requests int
	// Chunks received (distinct), Lost (never received), Duplicates.
	Chunks, Lost, Duplicates int
	// LostTerminals counts runs without their terminal events; Errors runs
	// that failed, FirstError the first such error.
	LostTerminals, Errors int
	FirstError            string
	// Ramp is the time from the start of the level until every stream had
	// its first chunk (0: never); Window the steady state's length.
	Ramp, Window time.Duration
	// WindowChunks are the chunks that arrived in the window.
	WindowChunks int
	// Steady is the relay latency of the window's chunks; Latency that of
	// every chunk of the level.
	Steady, Latency Percentiles
	// FirstChunk is per stream: request sent to its first chunk.
	FirstChunk Percentiles
	// CPU over the window: the system's process (Self) and its live
	// children (Children: the project's parent processes, read from their
	// own /proc/PID/stat while they run).
	CPU                  CPU
	RemoteCPU, ClientCPU time.Duration
	OtherCPU             time.Duration
	// LevelCPU is the system's CPU over the whole level, its reaped
	// children included (the parents' start-up and exit too).
	LevelCPU CPU
	// RSS when idle (after a warm-up run of the same shape) and at its peak
	// in the window; *All adds the children, Anon* their anonymous part.
	IdleRSS, PeakRSS, IdleRSSAll, PeakRSSAll, IdleAnonAll, PeakAnonAll int64
	Wall                                                               time.Duration
}

// CPUPerChunk returns the system's CPU per chunk in the window, and with
// its children.
func (r *FanOutResult) CPUPerChunk() (self, all time.Duration) {
	if r.WindowChunks == 0 {
		return 0, 0
	}
	n := time.Duration(r.WindowChunks)
	return r.CPU.Self / n, (r.CPU.Self + r.CPU.Children) / n
}

// RSSPerDelegation returns (peak in the window - idle) / streams, for the
// process alone, with its children, and their anonymous part.
func (r *FanOutResult) RSSPerDelegation() (self, all, anon float64) {
	c := float64(max(1, r.Shape.Streams()))
	return float64(r.PeakRSS-r.IdleRSS) / c, float64(r.PeakRSSAll-r.IdleRSSAll) / c, float64(r.PeakAnonAll-r.IdleAnonAll) / c
}

// fanRequests says how a system is driven in a fan-out shape: requests
// runs at once, each with the given options.
func fanRequests(k *systemKind, shape FanShape, s Stream, fan *fanTracker) (requests int, o runOpts) {
	switch k {
	case kindPeer:
		return shape.Streams(), runOpts{width: 1, message: s.Objective(), fan: fan}
	case kindBare:
		msg := s.Objective()
		if shape.Width > 1 {
			msg += " fanout=" + strconv.Itoa(shape.Width)
		}
		return shape.Runs, runOpts{width: shape.Width, message: msg, fan: fan}
	}
	// The project: its parent's scenario makes Width delegations, each with
	// the run's prompt as objective.
	return shape.Runs, runOpts{width: shape.Width, message: s.Objective(), fan: fan}
}

// snap is a reading of every measured process at one instant.
type snap struct {
	at                   int64 // monoNow
	sys                  CPU
	kids                 time.Duration // live children's own CPU
	remote, client, busy time.Duration
}

func takeSnap(pid, remote int, children bool) snap {
	s := snap{at: monoNow()}
	s.sys, _ = ReadCPU(pid)
	if children {
		for _, c := range Children(pid) {
			if cpu, err := ReadCPU(c); err == nil {
				s.kids += cpu.Self
			}
		}
	}
	r, _ := ReadCPU(remote)
	me, _ := ReadCPU(os.Getpid())
	s.remote, s.client, s.busy = r.Self, me.Self, ReadMachineBusy()
	return s
}

// rssSample is one reading of the RSS sampler.
type rssSample struct {
	at              int64
	self, all, anon int64
}

// fanMonitor samples RSS through a fan-out level and takes the snapshots
// that open and close its steady state.
type fanMonitor struct {
	samples    []rssSample
	start, end *snap
	stop, done chan struct{}
}

func monitorFan(pid, remote int, children bool, every time.Duration, fan *fanTracker) *fanMonitor {
	m := &fanMonitor{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		t := time.NewTicker(every)
		defer t.Stop()
		started, ended := fan.allStarted, fan.firstEnded
		for {
			self, all, anon := memAll(pid, children)
			m.samples = append(m.samples, rssSample{monoNow(), self, all, anon})
			select {
			case <-m.stop:
				return
			case <-started:
				s := takeSnap(pid, remote, children)
				m.start, started = &s, nil
			case <-ended:
				if m.start != nil {
					s := takeSnap(pid, remote, children)
					m.end = &s
				}
				ended = nil
			case <-t.C:
			}
		}
	}()
	return m
}

func (m *fanMonitor) finish() {
	close(m.stop)
	<-m.done
}

func runFanOut(ctx context.Context, env *Env, cfg *Config, k *systemKind, remote *proc, remoteURL string, shape FanShape) (*FanOutResult, error) {
	sys, err := env.startSystem(k, remoteURL, sysSpec{width: shape.Width, nice: cfg.ParentNice})
	if err != nil {
		return nil, err
	}
	defer sys.proc.stop()
	s := shape.stream(cfg.FanStream)
	res := &FanOutResult{System: k.name, Shape: shape, Stream: s}
	// Warm-up: one run of the shape (the peer: Width runs), 2 unpaced
	// chunks per stream.
	warm := Stream{Chunks: 2, Size: s.Size}
	wn, wo := fanRequests(k, FanShape{Runs: 1, Width: shape.Width}, warm, nil)
	for _, st := range load(ctx, sys.url, k, warm, wn, wn, nil, wo) {
		if st.Err != nil || !st.Terminal || st.Lost > 0 {
			return nil, fmt.Errorf("warm-up run failed: terminal=%v lost=%d err=%v %s", st.Terminal, st.Lost, st.Err, st.Diag)
		}
	}
	time.Sleep(300 * time.Millisecond)
	pid := sys.proc.pid()
	children := k == kindProject || k == kindProjectNATS || k == kindProjectNice
	res.IdleRSS, res.IdleRSSAll, res.IdleAnonAll = memAll(pid, children)
	fan := newFanTracker(shape.Streams())
	n, o := fanRequests(k, shape, s, fan)
	res.Requests = n
	every := cfg.SampleEvery
	if every == 0 {
		every = 100 * time.Millisecond
	}
	cpu0, err := ReadCPU(pid)
	if err != nil {
		return nil, err
	}
	mon := monitorFan(pid, remote.pid(), children, every, fan)
	lctx, cancel := context.WithTimeout(ctx, cfg.LevelTimeout)
	start, t0 := time.Now(), monoNow()
	stats := load(lctx, sys.url, k, s, n, n, nil, o)
	res.Wall = time.Since(start)
	cancel()
	mon.finish()
	time.Sleep(300 * time.Millisecond) // serve reaps the last parents
	if cpu1, err := ReadCPU(pid); err == nil {
		res.LevelCPU = cpu1.Sub(cpu0)
	}
	var lat, steady, first []int64
	for _, st := range stats {
		lat = append(lat, st.Lat...)
		if st.FirstChunks != nil {
			for _, d := range st.FirstChunks {
				if d > 0 {
					first = append(first, int64(d))
				}
			}
		} else if st.Chunks > 0 {
			first = append(first, int64(st.FirstChunk))
		}
		if mon.start != nil && mon.end != nil {
			for i, at := range st.SteadyAt {
				if at >= mon.start.at && at <= mon.end.at {
					steady = append(steady, st.Steady[i])
				}
			}
		}
		res.Chunks += st.Chunks
		res.Lost += st.Lost
		res.Duplicates += st.Duplicates
		if !st.Terminal {
			res.LostTerminals++
		}
		if st.Err != nil {
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = st.Err.Error()
			}
		} else if st.Diag != "" && res.FirstError == "" {
			res.FirstError = st.Diag
		}
	}
	if missing := n - len(stats); missing > 0 {
		res.LostTerminals += missing
		res.Lost += missing * s.Chunks * o.width
		if res.FirstError == "" {
			res.FirstError = fmt.Sprintf("%d runs never ran (level timeout %v)", missing, cfg.LevelTimeout)
		}
	}
	res.Latency, res.Steady, res.FirstChunk = percentiles(lat), percentiles(steady), percentiles(first)
	res.WindowChunks = len(steady)
	if a, b := mon.start, mon.end; a != nil {
		res.Ramp = time.Duration(a.at - t0)
		if b != nil {
			res.Window = time.Duration(b.at - a.at)
			res.CPU = CPU{Self: b.sys.Self - a.sys.Self, Children: b.kids - a.kids}
			res.RemoteCPU, res.ClientCPU = b.remote-a.remote, b.client-a.client
			res.OtherCPU = max(0, b.busy-a.busy-res.CPU.Self-res.CPU.Children-res.RemoteCPU-res.ClientCPU)
			res.PeakRSS, res.PeakRSSAll, res.PeakAnonAll = res.IdleRSS, res.IdleRSSAll, res.IdleAnonAll
			for _, smp := range mon.samples {
				if smp.at >= a.at && smp.at <= b.at {
					res.PeakRSS, res.PeakRSSAll, res.PeakAnonAll = max(res.PeakRSS, smp.self), max(res.PeakRSSAll, smp.all), max(res.PeakAnonAll, smp.anon)
				}
			}
		}
	}
	if res.Window == 0 && res.FirstError == "" {
		if n := fan.started.Load(); n < int64(shape.Streams()) {
			res.FirstError = fmt.Sprintf("no steady state: %d of %d streams started", n, shape.Streams())
		} else {
			res.FirstError = fmt.Sprintf("no steady state: the first stream ended before the last one started (every stream started after %v)", res.Ramp.Round(time.Millisecond))
		}
	}
	return res, nil
}

// runFanOuts runs every fan-out shape for every system, cfg.FanRounds
// times: in round r the systems start from the r-th, so that none is
// always measured first or right after the same one.
func runFanOuts(ctx context.Context, env *Env, cfg *Config, kinds []*systemKind, remote *proc, remoteURL string, res *Results) error {
	rounds := max(1, cfg.FanRounds)
	for _, shape := range cfg.FanOut {
		for round := range rounds {
			for i := range kinds {
				k := kinds[(i+round)%len(kinds)]
				if err := ctx.Err(); err != nil {
					return err
				}
				fr, err := runFanOut(ctx, env, cfg, k, remote, remoteURL, shape)
				if err != nil {
					return fmt.Errorf("%s at %s, round %d: %w", k.name, shape, round+1, err)
				}
				fr.Round = round + 1
				res.FanOut = append(res.FanOut, *fr)
				sp, al := fr.CPUPerChunk()
				env.logf("%-7s fan-out %s round %d/%d: requests=%d chunks=%d lost=%d lostTerminals=%d errors=%d ramp=%v window=%v steady p50=%v p99=%v cpu/chunk=%v (%v with parents) wall=%v",
					k.name, shape, round+1, rounds, fr.Requests, fr.Chunks, fr.Lost, fr.LostTerminals, fr.Errors, fr.Ramp.Round(time.Millisecond), fr.Window.Round(time.Millisecond),
					fr.Steady.P50, fr.Steady.P99, sp, al, fr.Wall.Round(time.Millisecond))
				if fr.FirstError != "" {
					env.logf("  first error: %s", fr.FirstError)
				}
			}
		}
	}
	return nil
}

// fixedSystems are the systems of the fixed-cost pass: the project's
// configurations and the bare relay (the peer has no fan-out, so no per-run
// cost apart from the per-delegation one).
func fixedSystems(systems []string) []string {
	return slices.DeleteFunc(slices.Clone(systems), func(s string) bool { return s == "peer" })
}
