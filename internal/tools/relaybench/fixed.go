package relaybench

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// FixedConfig is the fixed-cost pass: how much CPU a run and a delegation
// cost apart from the chunks they relay. Three shapes run in a closed loop
// of Concurrency runs, Runs runs each: one delegation of Short chunks per
// run, one of Long chunks, and Width delegations of Short chunks at once.
// The slope between the first two is the cost of a chunk; what the first
// costs beyond its chunks is a run with one delegation; the third adds
// Width-1 delegations to that (see [FixedResult]). The pass is made
// Rounds times, the systems taking turns, and each figure is the median of
// its rounds' (a round's three shapes are measured minutes apart at most,
// so a machine whose speed drifts skews one round, not the slopes of all).
type FixedConfig struct {
	Runs, Concurrency, Width int
	Rounds                   int
	Short, Long              int
	// Interval paces the chunks (the same as the levels': 20ms).
	Interval time.Duration
	Size     int
}

// FixedShape is one shape of the fixed-cost pass: CPU per run.
type FixedShape struct {
	Width, Chunks int
	// PerRun is the system's CPU (Self) and its reaped children's (the
	// project's parents) per run.
	PerRun CPU
	Runs   int
}

// FixedResult is one system's fixed-cost pass.
type FixedResult struct {
	System string
	Config FixedConfig
	// Rounds are the three shapes of each round, in order.
	Rounds []FixedRound
	// ShortOne, LongOne and ShortWide are the shapes' medians over the
	// rounds (Self and Children apart); the derived figures are the
	// medians of each round's, not derived from these.
	ShortOne, LongOne, ShortWide FixedShape
	Errors                       int
	FirstError                   string
}

// FixedRound is one round of the fixed-cost pass: its three shapes.
type FixedRound struct {
	ShortOne, LongOne, ShortWide FixedShape
}

// CPUCost is a derived CPU figure in nanoseconds: the system's own (Self)
// and its children's (Children: the project's parents). Being a difference
// of measurements, it can come out negative in noise.
type CPUCost struct{ Self, Children float64 }

func fcpu(c CPU) CPUCost { return CPUCost{float64(c.Self), float64(c.Children)} }

func (a CPUCost) sub(b CPUCost) CPUCost   { return CPUCost{a.Self - b.Self, a.Children - b.Children} }
func (a CPUCost) scale(k float64) CPUCost { return CPUCost{a.Self * k, a.Children * k} }

// PerChunk is the slope between the long and the short delegation:
// (long - short) / (Long - Short chunks), in ns; the median of the rounds'.
func (r *FixedResult) PerChunk() CPUCost { return r.median((*FixedResult).perChunk) }

// PerRunAndDelegation is what a run with one delegation costs beyond its
// chunks: short - Short × per chunk; the median of the rounds'.
func (r *FixedResult) PerRunAndDelegation() CPUCost {
	return r.median((*FixedResult).perRunAndDelegation)
}

// PerDelegation is what each delegation adds beyond its chunks: (wide -
// Width × Short × per chunk - per run and delegation) / (Width - 1); the
// median of the rounds'.
func (r *FixedResult) PerDelegation() CPUCost { return r.median((*FixedResult).perDelegation) }

// PerRun is a run's own fixed cost: per run and delegation - per
// delegation; the median of the rounds'.
func (r *FixedResult) PerRun() CPUCost { return r.median((*FixedResult).perRun) }

// RoundPerRun is PerRun of each round, in order.
func (r *FixedResult) RoundPerRun() []CPUCost {
	out := make([]CPUCost, len(r.Rounds))
	for i, rd := range r.Rounds {
		out[i] = r.round(rd).perRun()
	}
	return out
}

// figures are r's derived figures for the driver's log.
func (r *FixedResult) figures() string {
	pc, prd, pd, pr := r.PerChunk(), r.PerRunAndDelegation(), r.PerDelegation(), r.PerRun()
	return fmt.Sprintf("per chunk %.0fµs, per run with one delegation %.2fms, per delegation %.2fms, per run %.2fms (parents: %.2fms, %.2fms, %.2fms)",
		pc.Self/1e3, prd.Self/1e6, pd.Self/1e6, pr.Self/1e6, prd.Children/1e6, pd.Children/1e6, pr.Children/1e6)
}

// round is r with only rd's shapes.
func (r *FixedResult) round(rd FixedRound) *FixedResult {
	return &FixedResult{System: r.System, Config: r.Config, ShortOne: rd.ShortOne, LongOne: rd.LongOne, ShortWide: rd.ShortWide}
}

// median is f of each round, its Self and Children medians apart (the
// lower middle of an even count); f of r's own shapes when r has no
// rounds.
func (r *FixedResult) median(f func(*FixedResult) CPUCost) CPUCost {
	if len(r.Rounds) == 0 {
		return f(r)
	}
	costs := make([]CPUCost, len(r.Rounds))
	for i, rd := range r.Rounds {
		costs[i] = f(r.round(rd))
	}
	return medianCost(costs)
}

// medianCost is the median of costs, Self and Children apart (the lower
// middle of an even count).
func medianCost(costs []CPUCost) CPUCost {
	self, children := make([]float64, len(costs)), make([]float64, len(costs))
	for i, c := range costs {
		self[i], children[i] = c.Self, c.Children
	}
	slices.Sort(self)
	slices.Sort(children)
	mid := (len(costs) - 1) / 2
	return CPUCost{self[mid], children[mid]}
}

func (r *FixedResult) perChunk() CPUCost {
	d := float64(r.Config.Long - r.Config.Short)
	if d <= 0 {
		return CPUCost{}
	}
	return fcpu(r.LongOne.PerRun).sub(fcpu(r.ShortOne.PerRun)).scale(1 / d)
}

func (r *FixedResult) perRunAndDelegation() CPUCost {
	return fcpu(r.ShortOne.PerRun).sub(r.perChunk().scale(float64(r.Config.Short)))
}

func (r *FixedResult) perDelegation() CPUCost {
	w := r.Config.Width
	if w <= 1 {
		return CPUCost{}
	}
	wide := fcpu(r.ShortWide.PerRun).sub(r.perChunk().scale(float64(w * r.Config.Short)))
	return wide.sub(r.perRunAndDelegation()).scale(1 / float64(w-1))
}

func (r *FixedResult) perRun() CPUCost { return r.perRunAndDelegation().sub(r.perDelegation()) }

// addRound appends one round's shapes to r and sets its shapes to the
// medians so far.
func (r *FixedResult) addRound(rd FixedRound) {
	r.Rounds = append(r.Rounds, rd)
	med := func(get func(FixedRound) FixedShape) FixedShape {
		out := get(r.Rounds[0])
		out.Runs = 0
		costs := make([]CPUCost, len(r.Rounds))
		for i, x := range r.Rounds {
			costs[i] = fcpu(get(x).PerRun)
			out.Runs += get(x).Runs
		}
		c := medianCost(costs)
		out.PerRun = CPU{Self: time.Duration(c.Self), Children: time.Duration(c.Children)}
		return out
	}
	r.ShortOne = med(func(x FixedRound) FixedShape { return x.ShortOne })
	r.LongOne = med(func(x FixedRound) FixedShape { return x.LongOne })
	r.ShortWide = med(func(x FixedRound) FixedShape { return x.ShortWide })
}

// runFixedRound runs one round of the fixed-cost pass of one system into
// res.
func runFixedRound(ctx context.Context, env *Env, cfg *Config, k *systemKind, remoteURL string, res *FixedResult) error {
	fc := cfg.Fixed
	var rd FixedRound
	for _, sh := range []struct {
		out           *FixedShape
		width, chunks int
	}{{&rd.ShortOne, 1, fc.Short}, {&rd.LongOne, 1, fc.Long}, {&rd.ShortWide, fc.Width, fc.Short}} {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := Stream{Chunks: sh.chunks, Interval: fc.Interval, Size: fc.Size}
		perRun, runs, errs, first, err := fixedShape(ctx, env, cfg, k, remoteURL, sh.width, s)
		if err != nil {
			return err
		}
		*sh.out = FixedShape{Width: sh.width, Chunks: sh.chunks, PerRun: perRun, Runs: runs}
		res.Errors += errs
		if res.FirstError == "" {
			res.FirstError = first
		}
	}
	res.addRound(rd)
	return nil
}

// fixedShape measures one shape on a fresh instance: the CPU per run of
// fc.Runs runs at fc.Concurrency, after a warm-up of the same shape.
func fixedShape(ctx context.Context, env *Env, cfg *Config, k *systemKind, remoteURL string, width int, s Stream) (perRun CPU, runs, errs int, first string, err error) {
	fc := cfg.Fixed
	sys, err := env.startSystem(k, remoteURL, sysSpec{width: width, nice: cfg.ParentNice})
	if err != nil {
		return CPU{}, 0, 0, "", err
	}
	defer sys.proc.stop()
	_, o := fanRequests(k, FanShape{Runs: 1, Width: width}, s, nil)
	warm := min(fc.Runs, max(3, fc.Concurrency))
	for _, st := range load(ctx, sys.url, k, s, fc.Concurrency, warm, nil, o) {
		if st.Err != nil || !st.Terminal {
			return CPU{}, 0, 0, "", fmt.Errorf("warm-up run of %d×%d chunks failed: terminal=%v err=%v %s", width, s.Chunks, st.Terminal, st.Err, st.Diag)
		}
	}
	time.Sleep(300 * time.Millisecond)
	pid := sys.proc.pid()
	cpu0, err := ReadCPU(pid)
	if err != nil {
		return CPU{}, 0, 0, "", err
	}
	lctx, cancel := context.WithTimeout(ctx, cfg.LevelTimeout)
	stats := load(lctx, sys.url, k, s, fc.Concurrency, fc.Runs, nil, o)
	cancel()
	time.Sleep(300 * time.Millisecond) // serve reaps the last parents
	cpu1, err := ReadCPU(pid)
	if err != nil {
		return CPU{}, 0, 0, "", err
	}
	for _, st := range stats {
		if st.Err != nil || !st.Terminal || st.Lost > 0 {
			errs++
			if first == "" {
				first = fmt.Sprintf("%d×%d chunks: terminal=%v lost=%d err=%v %s", width, s.Chunks, st.Terminal, st.Lost, st.Err, st.Diag)
			}
		}
	}
	d := cpu1.Sub(cpu0)
	n := time.Duration(max(1, len(stats)))
	return CPU{Self: d.Self / n, Children: d.Children / n}, len(stats), errs, first, nil
}
