package relaybench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is one benchmark run.
type Config struct {
	// Systems to measure, in report order (default [Systems]).
	Systems []string
	// ParentNice is project-nice's parent.nice, 1..19 (default
	// DefaultParentNice).
	ParentNice int
	// Levels are the concurrency levels (concurrent delegations).
	Levels []int
	// Stream is what each delegation of a level streams.
	Stream Stream
	// Runs returns how many delegations a level of concurrency c runs
	// (default max(2c, 20)); each of the c workers starts its next
	// delegation when its last one ended.
	Runs func(c int) int
	// Warmup delegations per started system, before measuring (default 1;
	// negative for none).
	Warmup int
	// Long is the chunk count of the long delegation (0: none); it streams
	// as fast as the remote can (interval 0). LongRepeat delegations run one
	// after the other on one instance of each system (default 3); the one
	// with the median throughput is reported.
	Long, LongRepeat int
	// FanOut are the fan-out shapes (R runs × D delegations each, all at
	// once), each delegation streaming FanStream.
	FanOut    []FanShape
	FanStream Stream
	// FanRounds is how many times each fan-out shape is measured (default
	// 1). The systems take turns within a round, each round in a rotated
	// order, and the report gives each figure's median over the rounds:
	// at 10 × 10 one run's ratios to the bare relay move by half their
	// value between runs of the same build.
	FanRounds int
	// Fixed is the fixed-cost pass (none when Fixed.Runs is 0).
	Fixed FixedConfig
	// ProfileLevel and ProfileSeconds: when ProfileOut is set, a CPU
	// profile of serve is taken over ProfileSeconds while the project runs
	// at ProfileLevel (after the measured levels, in a separate pass of a
	// serve binary built with pprof: Env.Agentadaptor is replaced by
	// ProfileBinary for that pass). ProfileShape, when set, replaces
	// ProfileLevel: "level:N", "fanout:RxD" (FanStream) or "fixed:D" (runs
	// of D delegations of Fixed.Short chunks in a closed loop of
	// Fixed.Concurrency: the fixed costs).
	ProfileOut     string
	ProfileBinary  string
	ProfileLevel   int
	ProfileShape   string
	ProfileSeconds int
	// SampleEvery is the RSS sampling period (default 100ms; 500ms when
	// sampling the project's parent processes at 500+ concurrency).
	SampleEvery time.Duration
	// LevelTimeout bounds one level of one system (default 10m).
	LevelTimeout time.Duration
}

func (c *Config) runs(level int) int {
	if c.Runs != nil {
		return c.Runs(level)
	}
	return max(2*level, 20)
}

// Percentiles of a sample.
type Percentiles struct {
	P50, P99 time.Duration
	N        int
}

func percentiles(ns []int64) Percentiles {
	if len(ns) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	at := func(p float64) time.Duration {
		i := int(float64(len(s)) * p)
		return time.Duration(s[min(len(s)-1, i)])
	}
	return Percentiles{P50: at(0.50), P99: at(0.99), N: len(s)}
}

// LevelResult is one system at one concurrency level.
type LevelResult struct {
	System      string
	Concurrency int
	Runs        int
	Stream      Stream
	// Chunks received (distinct), Lost (never received), Duplicates.
	Chunks, Lost, Duplicates int
	// LostTerminals counts runs without their terminal event(s); Errors
	// runs that failed (HTTP, RUN_ERROR, broken stream), FirstError the
	// first such error.
	LostTerminals, Errors int
	FirstError            string
	Latency, Steady       Percentiles
	FirstChunk            Percentiles
	// Stages split the time to the first chunk of the runs that went
	// through all of them (the project's): until RUN_STARTED, then until
	// subagent.started, then until the first chunk (see RunStats.Marks).
	Stages       [numMarks + 1]Percentiles
	Wall         time.Duration
	ChunksPerSec float64
	// CPU of the system's process: Self (utime+stime) and Children
	// (cutime+cstime: the project's parent CLIs, reaped by serve).
	CPU CPU
	// RemoteCPU and ClientCPU: the shared remote's and the load client's
	// (this process) CPU over the same window, for context.
	RemoteCPU, ClientCPU time.Duration
	// RSS of the system's process when idle (after warm-up) and at its
	// peak during the level; *All adds its child processes (the project's
	// parents), sampled at the same instants.
	IdleRSS, PeakRSS, IdleRSSAll, PeakRSSAll int64
	// AnonAll is the anonymous part (RssAnon) of *RSSAll, which leaves
	// out the binary's pages that every parent process maps.
	IdleAnonAll, PeakAnonAll int64
	// OtherCPU is the machine's busy CPU time during the level minus that
	// of the measured processes (system, its reaped children, remote, load
	// client): other work on the machine, plus kernel work not charged to
	// a process. It says how quiet the machine was.
	OtherCPU time.Duration
	// Follower (project-nats): the same runs as a client following each
	// on the second replica saw them (from RUN_STARTED on): latency and
	// steady-state latency of the chunks, chunks received and lost, runs
	// whose follow failed (the first error).
	Follower, FollowerSteady     Percentiles
	FollowerChunks, FollowerLost int
	FollowerErrors               int
	FollowerFirstError           string
}

// CPUPerChunk returns the system process's CPU per chunk, and with its
// children.
func (r *LevelResult) CPUPerChunk() (self, all time.Duration) {
	if r.Chunks == 0 {
		return 0, 0
	}
	return r.CPU.Self / time.Duration(r.Chunks), (r.CPU.Self + r.CPU.Children) / time.Duration(r.Chunks)
}

// RSSPerDelegation returns (peak - idle) / concurrency in bytes, for the
// process alone, with its children, and with its children counting only
// anonymous memory.
func (r *LevelResult) RSSPerDelegation() (self, all, anonAll float64) {
	c := float64(max(1, r.Concurrency))
	return float64(r.PeakRSS-r.IdleRSS) / c, float64(r.PeakRSSAll-r.IdleRSSAll) / c, float64(r.PeakAnonAll-r.IdleAnonAll) / c
}

// LongResult is one system streaming the long delegation.
type LongResult struct {
	System   string
	Chunks   int // received
	Expected int
	Lost     int
	Terminal bool
	Error    string
	// Wall from the first chunk to the last, and the throughput over it.
	Wall         time.Duration
	ChunksPerSec float64
	FirstChunk   time.Duration
	Latency      Percentiles
	// CPU over the delegation (system processes; the project: serve,
	// children added once reaped) and the remote's.
	CPU       CPU
	RemoteCPU time.Duration
	// Quarters: wall time and system CPU (serve alone for the project, from
	// /proc/PID/task/*/schedstat) per chunk for each quarter of the stream,
	// to see whether cost is linear.
	QuarterWall [4]time.Duration
	QuarterCPU  [4]time.Duration
	// Throughputs of every repetition, in the order run.
	Throughputs []float64
	// OtherCPU: as in LevelResult, over this delegation.
	OtherCPU time.Duration
	Elapsed  time.Duration
}

// Results is a whole run.
type Results struct {
	Started  time.Time
	Machine  string
	Command  string
	Config   Config `json:"-"`
	Levels   []LevelResult
	FanOut   []FanOutResult
	Long     []LongResult
	Fixed    []FixedResult
	Profile  string // pprof top of serve, when profiled
	Duration time.Duration
}

// Run runs the benchmark: the remote once, then per level each system
// fresh (started, warmed up, measured, stopped), then the long delegation
// per system, then the profile pass.
func Run(ctx context.Context, env *Env, cfg Config) (*Results, error) {
	if len(cfg.Systems) == 0 {
		cfg.Systems = Systems
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = 1
	}
	if cfg.LevelTimeout == 0 {
		cfg.LevelTimeout = 10 * time.Minute
	}
	if cfg.LongRepeat == 0 {
		cfg.LongRepeat = 3
	}
	if cfg.ParentNice == 0 {
		cfg.ParentNice = DefaultParentNice
	}
	kinds := make([]*systemKind, 0, len(cfg.Systems))
	for _, s := range cfg.Systems {
		k, err := kindOf(s)
		if err != nil {
			return nil, err
		}
		kinds = append(kinds, k)
	}
	if err := os.MkdirAll(env.WorkDir, 0o755); err != nil {
		return nil, err
	}
	res := &Results{Started: time.Now(), Config: cfg}
	remote, remoteURL, err := env.startRemote()
	if err != nil {
		return nil, err
	}
	defer remote.stop()
	env.logf("remote %s (pid %d)", remoteURL, remote.pid())
	for _, c := range cfg.Levels {
		for _, k := range kinds {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			lr, err := runLevel(ctx, env, &cfg, k, remote, remoteURL, c)
			if err != nil {
				return res, fmt.Errorf("%s at %d: %w", k.name, c, err)
			}
			res.Levels = append(res.Levels, *lr)
			sp, al := lr.CPUPerChunk()
			env.logf("%-7s c=%-4d runs=%d chunks=%d lost=%d lostTerminals=%d errors=%d p50=%v p99=%v ttfc50=%v chunks/s=%.0f cpu/chunk=%v (%v with children) wall=%v",
				k.name, c, lr.Runs, lr.Chunks, lr.Lost, lr.LostTerminals, lr.Errors, lr.Latency.P50, lr.Latency.P99, lr.FirstChunk.P50, lr.ChunksPerSec, sp, al, lr.Wall.Round(time.Millisecond))
			if lr.FirstError != "" {
				env.logf("  first error: %s", lr.FirstError)
			}
		}
	}
	if err := runFanOuts(ctx, env, &cfg, kinds, remote, remoteURL, res); err != nil {
		return res, err
	}
	if cfg.Long > 0 {
		for _, k := range kinds {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			lr, err := runLong(ctx, env, &cfg, k, remote, remoteURL)
			if err != nil {
				return res, fmt.Errorf("%s long: %w", k.name, err)
			}
			res.Long = append(res.Long, *lr)
			env.logf("%-7s long: %d/%d chunks in %v = %.0f chunks/s, cpu %v (+%v children), terminal=%v %s",
				k.name, lr.Chunks, lr.Expected, lr.Wall.Round(time.Millisecond), lr.ChunksPerSec, lr.CPU.Self, lr.CPU.Children, lr.Terminal, lr.Error)
		}
	}
	if cfg.Fixed.Runs > 0 {
		systems := fixedSystems(cfg.Systems)
		fixed := make([]*FixedResult, len(systems))
		rounds := max(1, cfg.Fixed.Rounds)
		for round := range rounds {
			for i, name := range systems {
				if err := ctx.Err(); err != nil {
					return res, err
				}
				k, _ := kindOf(name)
				if fixed[i] == nil {
					fixed[i] = &FixedResult{System: name, Config: cfg.Fixed}
				}
				fr := fixed[i]
				if err := runFixedRound(ctx, env, &cfg, k, remoteURL, fr); err != nil {
					return res, fmt.Errorf("%s fixed cost: %w", name, err)
				}
				env.logf("%-7s fixed cost, round %d/%d: %s; errors=%d %s",
					name, round+1, rounds, fr.round(fr.Rounds[len(fr.Rounds)-1]).figures(), fr.Errors, fr.FirstError)
			}
		}
		for _, fr := range fixed {
			res.Fixed = append(res.Fixed, *fr)
			env.logf("%-7s fixed cost, median of %d: %s; errors=%d", fr.System, len(fr.Rounds), fr.figures(), fr.Errors)
		}
	}
	if cfg.ProfileOut != "" && slices.Contains(cfg.Systems, "project") {
		if err := profileProject(ctx, env, &cfg, remoteURL); err != nil {
			return res, fmt.Errorf("profile: %w", err)
		}
	} else if cfg.ProfileOut != "" {
		env.logf("no profile: it is taken of the system project, which -systems leaves out")
	}
	res.Duration = time.Since(res.Started)
	return res, nil
}

// alsoCPU sums the CPU (user and system) of the processes stopped with p
// (project-nats: the follower replica and the nats-server).
func alsoCPU(p *proc) time.Duration {
	var d time.Duration
	for a := p.also; a != nil; a = a.also {
		c, _ := ReadCPU(a.pid())
		d += c.Self
	}
	return d
}

// sampler records the peak RSS of pid (and of pid with its children, and
// the anonymous part of that).
type sampler struct {
	peak, peakAll, peakAnon int64
	stop                    chan struct{}
	done                    chan struct{}
}

func sampleRSS(pid int, children bool, every time.Duration) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			self, all, anon := memAll(pid, children)
			s.peak, s.peakAll, s.peakAnon = max(s.peak, self), max(s.peakAll, all), max(s.peakAnon, anon)
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) finish() (peak, peakAll, peakAnon int64) {
	close(s.stop)
	<-s.done
	return s.peak, s.peakAll, s.peakAnon
}

// memAll returns pid's VmRSS, and with children that plus its children's,
// and the RssAnon of the same set.
func memAll(pid int, children bool) (self, all, anon int64) {
	self, anon = ReadMem(pid)
	all = self
	if children {
		for _, c := range Children(pid) {
			r, a := ReadMem(c)
			all, anon = all+r, anon+a
		}
	}
	return self, all, anon
}

func runLevel(ctx context.Context, env *Env, cfg *Config, k *systemKind, remote *proc, remoteURL string, c int) (*LevelResult, error) {
	sys, err := env.startSystem(k, remoteURL, sysSpec{stream: cfg.Stream, nice: cfg.ParentNice})
	if err != nil {
		return nil, err
	}
	defer sys.proc.stop()
	for i := range max(0, cfg.Warmup) {
		if st := runOnce(ctx, sys.url, k, cfg.Stream, -1-i, runOpts{}); st.Err != nil || !st.Terminal {
			return nil, fmt.Errorf("warm-up delegation failed: terminal=%v err=%v", st.Terminal, st.Err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	pid := sys.proc.pid()
	withChildren := k == kindProject || k == kindProjectNATS || k == kindProjectNice
	lr := &LevelResult{System: k.name, Concurrency: c, Runs: cfg.runs(c), Stream: cfg.Stream}
	lr.IdleRSS, lr.IdleRSSAll, lr.IdleAnonAll = memAll(pid, withChildren)
	every := cfg.SampleEvery
	if every == 0 {
		every = 100 * time.Millisecond
		if withChildren && c >= 500 {
			every = 500 * time.Millisecond
		}
	}
	cpu0, err := ReadCPU(pid)
	if err != nil {
		return nil, err
	}
	also0 := alsoCPU(sys.proc)
	r0, _ := ReadCPU(remote.pid())
	me0, _ := ReadCPU(os.Getpid())
	busy0 := ReadMachineBusy()
	smp := sampleRSS(pid, withChildren, every)
	lctx, cancel := context.WithTimeout(ctx, cfg.LevelTimeout)
	start := time.Now()
	stats := load(lctx, sys.url, k, cfg.Stream, c, lr.Runs, nil, runOpts{follower: sys.followerURL})
	lr.Wall = time.Since(start)
	cancel()
	lr.PeakRSS, lr.PeakRSSAll, lr.PeakAnonAll = smp.finish()
	// Let serve reap the last parents so that their CPU is in cutime.
	time.Sleep(300 * time.Millisecond)
	cpu1, err := ReadCPU(pid)
	if err != nil {
		return nil, err
	}
	r1, _ := ReadCPU(remote.pid())
	me1, _ := ReadCPU(os.Getpid())
	busy1 := ReadMachineBusy()
	lr.CPU = cpu1.Sub(cpu0)
	// project-nats: the nats-server's and the follower replica's CPU count
	// with the children.
	lr.CPU.Children += alsoCPU(sys.proc) - also0
	lr.RemoteCPU = r1.Sub(r0).Self
	lr.ClientCPU = me1.Sub(me0).Self
	lr.OtherCPU = max(0, busy1-busy0-lr.CPU.Self-lr.CPU.Children-lr.RemoteCPU-lr.ClientCPU)
	var lat, steady, first, flat, fsteady []int64
	var stages [numMarks + 1][]int64
	for _, st := range stats {
		if f := st.Follower; f != nil {
			flat = append(flat, f.Lat...)
			fsteady = append(fsteady, f.Steady...)
			lr.FollowerChunks += f.Chunks
			lr.FollowerLost += f.Lost
			if f.Err != nil || !f.Terminal {
				lr.FollowerErrors++
				if lr.FollowerFirstError == "" {
					lr.FollowerFirstError = f.Diag
					if f.Err != nil {
						lr.FollowerFirstError = f.Err.Error()
					}
				}
			}
		}
		lat = append(lat, st.Lat...)
		steady = append(steady, st.Steady...)
		if st.Chunks > 0 {
			first = append(first, int64(st.FirstChunk))
			if all := !slices.Contains(st.Marks[:], 0); all && st.Marks[numMarks-1] <= st.FirstChunk {
				prev := time.Duration(0)
				for i, m := range append(st.Marks[:], st.FirstChunk) {
					stages[i] = append(stages[i], int64(m-prev))
					prev = m
				}
			}
		}
		lr.Chunks += st.Chunks
		lr.Lost += st.Lost
		lr.Duplicates += st.Duplicates
		if !st.Terminal {
			lr.LostTerminals++
		}
		if st.Err != nil {
			lr.Errors++
			if lr.FirstError == "" {
				lr.FirstError = st.Err.Error()
			}
		} else if st.Diag != "" && lr.FirstError == "" {
			lr.FirstError = st.Diag
		}
	}
	if missing := lr.Runs - len(stats); missing > 0 {
		lr.LostTerminals += missing
		lr.Lost += missing * cfg.Stream.Chunks
		if lr.FirstError == "" {
			lr.FirstError = fmt.Sprintf("%d delegations never ran (level timeout %v)", missing, cfg.LevelTimeout)
		}
	}
	lr.Latency, lr.Steady, lr.FirstChunk = percentiles(lat), percentiles(steady), percentiles(first)
	lr.Follower, lr.FollowerSteady = percentiles(flat), percentiles(fsteady)
	for i := range stages {
		lr.Stages[i] = percentiles(stages[i])
	}
	lr.ChunksPerSec = float64(lr.Chunks) / lr.Wall.Seconds()
	return lr, nil
}

func runLong(ctx context.Context, env *Env, cfg *Config, k *systemKind, remote *proc, remoteURL string) (*LongResult, error) {
	s := Stream{Chunks: cfg.Long, Interval: 0, Size: cfg.Stream.Size}
	sys, err := env.startSystem(k, remoteURL, sysSpec{stream: s, nice: cfg.ParentNice})
	if err != nil {
		return nil, err
	}
	defer sys.proc.stop()
	var all []*LongResult
	for range max(1, cfg.LongRepeat) {
		time.Sleep(300 * time.Millisecond)
		lr, err := longOnce(ctx, cfg, k, sys, remote, s)
		if err != nil {
			return nil, err
		}
		all = append(all, lr)
		if !lr.Terminal || lr.Lost > 0 {
			return lr, nil // report the failure, not a median
		}
	}
	var tp []float64
	for _, lr := range all {
		tp = append(tp, lr.ChunksPerSec)
	}
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b *LongResult) int { return cmp.Compare(a.ChunksPerSec, b.ChunksPerSec) })
	med := sorted[len(sorted)/2]
	med.Throughputs = tp
	return med, nil
}

func longOnce(ctx context.Context, cfg *Config, k *systemKind, sys *running, remote *proc, s Stream) (*LongResult, error) {
	pid := sys.proc.pid()
	cpu0, err := ReadCPU(pid)
	if err != nil {
		return nil, err
	}
	r0, _ := ReadCPU(remote.pid())
	me0, _ := ReadCPU(os.Getpid())
	busy0, t0 := ReadMachineBusy(), time.Now()
	type mark struct {
		at  time.Time
		cpu time.Duration
	}
	var marks [5]mark // at 1, N/4, N/2, 3N/4, N chunks
	q := 0
	bounds := [5]int{1, s.Chunks / 4, s.Chunks / 2, 3 * s.Chunks / 4, s.Chunks}
	lctx, cancel := context.WithTimeout(ctx, cfg.LevelTimeout)
	defer cancel()
	st := runOnce(lctx, sys.url, k, s, 0, runOpts{marks: func(n int) {
		for q < len(bounds) && n >= bounds[q] {
			marks[q] = mark{time.Now(), ReadSchedCPU(pid)}
			q++
		}
	}})
	time.Sleep(300 * time.Millisecond)
	cpu1, _ := ReadCPU(pid)
	r1, _ := ReadCPU(remote.pid())
	me1, _ := ReadCPU(os.Getpid())
	busy1 := ReadMachineBusy()
	lr := &LongResult{System: k.name, Chunks: st.Chunks, Expected: s.Chunks, Lost: st.Lost, Terminal: st.Terminal,
		FirstChunk: st.FirstChunk, Latency: percentiles(st.Lat), CPU: cpu1.Sub(cpu0), RemoteCPU: r1.Sub(r0).Self, Elapsed: time.Since(t0)}
	lr.OtherCPU = max(0, busy1-busy0-lr.CPU.Self-lr.CPU.Children-lr.RemoteCPU-me1.Sub(me0).Self)
	if st.Err != nil {
		lr.Error = st.Err.Error()
	} else if st.Diag != "" {
		lr.Error = st.Diag
	}
	if q == len(bounds) {
		lr.Wall = marks[4].at.Sub(marks[0].at)
		lr.ChunksPerSec = float64(s.Chunks-1) / lr.Wall.Seconds()
		for i := range 4 {
			n := time.Duration(max(1, bounds[i+1]-bounds[i]))
			lr.QuarterWall[i] = marks[i+1].at.Sub(marks[i].at) / n
			lr.QuarterCPU[i] = (marks[i+1].cpu - marks[i].cpu) / n
		}
	}
	return lr, nil
}

// profileLoad is the load of the profile pass: the stream, the system
// spec and how many runs at once with which options.
type profileLoad struct {
	stream Stream
	width  int // sysSpec.width
	c      int
	opts   runOpts
	desc   string
}

// parseProfileShape reads Config.ProfileShape (or ProfileLevel).
func parseProfileShape(cfg *Config) (profileLoad, error) {
	shape := cfg.ProfileShape
	if shape == "" {
		shape = fmt.Sprintf("level:%d", cmp.Or(cfg.ProfileLevel, 100))
	}
	kind, arg, _ := strings.Cut(shape, ":")
	bad := fmt.Errorf("bad profile shape %q: want level:N, fanout:RxD or fixed:D", shape)
	switch kind {
	case "level":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			return profileLoad{}, bad
		}
		return profileLoad{stream: cfg.Stream, c: n, desc: fmt.Sprintf("%d concurrent delegations", n)}, nil
	case "fanout":
		fs, err := ParseFanShapes(arg)
		if err != nil || len(fs) != 1 {
			return profileLoad{}, bad
		}
		st := fs[0].stream(cfg.FanStream)
		_, o := fanRequests(kindProject, fs[0], st, nil)
		return profileLoad{stream: st, width: fs[0].Width, c: fs[0].Runs, opts: o, desc: "fan-out " + fs[0].String()}, nil
	case "fixed":
		w, err := strconv.Atoi(arg)
		if err != nil || w < 1 {
			return profileLoad{}, bad
		}
		fc := cfg.Fixed
		s := Stream{Chunks: cmp.Or(fc.Short, 2), Interval: fc.Interval, Size: cmp.Or(fc.Size, cfg.Stream.Size)}
		_, o := fanRequests(kindProject, FanShape{Runs: 1, Width: w}, s, nil)
		c := cmp.Or(fc.Concurrency, 10)
		return profileLoad{stream: s, width: w, c: c, opts: o, desc: fmt.Sprintf("%d concurrent runs of %d delegations of %d chunks", c, w, s.Chunks)}, nil
	}
	return profileLoad{}, bad
}

// profileProject runs the project under the profile shape with a
// pprof-enabled serve and writes a CPU profile of serve taken over
// ProfileSeconds, then a heap profile.
func profileProject(ctx context.Context, env *Env, cfg *Config, remoteURL string) error {
	if cfg.ProfileBinary == "" {
		return errors.New("no pprof-enabled serve binary")
	}
	pl, err := parseProfileShape(cfg)
	if err != nil {
		return err
	}
	penv := *env
	penv.Agentadaptor = cfg.ProfileBinary
	addr := "127.0.0.1:6061"
	sys, err := penv.startSystem(kindProject, remoteURL, sysSpec{stream: pl.stream, width: pl.width, env: []string{ProfileEnv + "=" + addr}})
	if err != nil {
		return err
	}
	defer sys.proc.stop()
	if st := runOnce(ctx, sys.url, kindProject, pl.stream, -1, pl.opts); st.Err != nil || !st.Terminal {
		return fmt.Errorf("warm-up run failed: terminal=%v err=%v %s", st.Terminal, st.Err, st.Diag)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stats []RunStats
	wg.Go(func() { stats = load(ctx, sys.url, kindProject, pl.stream, pl.c, 0, stop, pl.opts) })
	time.Sleep(time.Second) // ramp up
	fetch := func(url, out string) error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("pprof: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
		}
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, resp.Body); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	perr := fetch(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, cfg.ProfileSeconds), cfg.ProfileOut)
	if perr == nil {
		// The heap as it stands under the same load (live objects after
		// the last GC): what each active delegation holds.
		perr = fetch(fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", addr), HeapProfilePath(cfg.ProfileOut))
	}
	if perr == nil {
		// Goroutines by stack (their stacks are memory the heap profile
		// does not show) and the runtime's memory statistics, as text.
		perr = fetch(fmt.Sprintf("http://%s/debug/pprof/goroutine?debug=1", addr), strings.TrimSuffix(cfg.ProfileOut, "-cpu.pprof")+"-goroutines.txt")
	}
	if perr == nil {
		perr = fetch(fmt.Sprintf("http://%s/debug/pprof/heap?debug=1", addr), strings.TrimSuffix(cfg.ProfileOut, "-cpu.pprof")+"-memstats.txt")
	}
	close(stop)
	wg.Wait()
	lost := 0
	for _, st := range stats {
		if !st.Terminal {
			lost++
		}
	}
	env.logf("profile: %d runs (%s) during the profile, %d without terminal", len(stats), pl.desc, lost)
	return perr
}

// HeapProfilePath is where the profile pass writes serve's heap profile,
// beside the CPU profile cpuOut.
func HeapProfilePath(cpuOut string) string {
	return strings.TrimSuffix(cpuOut, "-cpu.pprof") + "-heap.pprof"
}

// ProfileEnv names the variable that makes a serve built with the
// benchmark's pprof overlay (see [PprofOverlay]) serve net/http/pprof.
const ProfileEnv = "AGENTADAPTOR_BENCH_PPROF"
