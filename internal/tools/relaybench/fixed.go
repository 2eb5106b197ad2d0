package relaybench

import (
	"context"
	"fmt"
	"time"
)

// FixedConfig is the fixed-cost pass: how much CPU a run and a delegation
// cost apart from the chunks they relay. Three shapes run in a closed loop
// of Concurrency runs, Runs runs each: one delegation of Short chunks per
// run, one of Long chunks, and Width delegations of Short chunks at once.
// The slope between the first two is the cost of a chunk; what the first
// costs beyond its chunks is a run with one delegation; the third adds
// Width-1 delegations to that (see [FixedResult]).
type FixedConfig struct {
	Runs, Concurrency, Width int
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
	// ShortOne, LongOne and ShortWide are the three shapes.
	ShortOne, LongOne, ShortWide FixedShape
	Errors                       int
	FirstError                   string
}

// CPUCost is a derived CPU figure in nanoseconds: the system's own (Self)
// and its children's (Children: the project's parents). Being a difference
// of measurements, it can come out negative in noise.
type CPUCost struct{ Self, Children float64 }

func fcpu(c CPU) CPUCost { return CPUCost{float64(c.Self), float64(c.Children)} }

func (a CPUCost) sub(b CPUCost) CPUCost   { return CPUCost{a.Self - b.Self, a.Children - b.Children} }
func (a CPUCost) scale(k float64) CPUCost { return CPUCost{a.Self * k, a.Children * k} }

// PerChunk is the slope between the long and the short delegation:
// (long - short) / (Long - Short chunks), in ns.
func (r *FixedResult) PerChunk() CPUCost {
	d := float64(r.Config.Long - r.Config.Short)
	if d <= 0 {
		return CPUCost{}
	}
	return fcpu(r.LongOne.PerRun).sub(fcpu(r.ShortOne.PerRun)).scale(1 / d)
}

// PerRunAndDelegation is what a run with one delegation costs beyond its
// chunks: short - Short × per chunk.
func (r *FixedResult) PerRunAndDelegation() CPUCost {
	return fcpu(r.ShortOne.PerRun).sub(r.PerChunk().scale(float64(r.Config.Short)))
}

// PerDelegation is what each delegation adds beyond its chunks: (wide -
// Width × Short × per chunk - per run and delegation) / (Width - 1).
func (r *FixedResult) PerDelegation() CPUCost {
	w := r.Config.Width
	if w <= 1 {
		return CPUCost{}
	}
	wide := fcpu(r.ShortWide.PerRun).sub(r.PerChunk().scale(float64(w * r.Config.Short)))
	return wide.sub(r.PerRunAndDelegation()).scale(1 / float64(w-1))
}

// PerRun is a run's own fixed cost: per run and delegation - per
// delegation.
func (r *FixedResult) PerRun() CPUCost { return r.PerRunAndDelegation().sub(r.PerDelegation()) }

// runFixed runs the fixed-cost pass of one system.
func runFixed(ctx context.Context, env *Env, cfg *Config, k *systemKind, remoteURL string) (*FixedResult, error) {
	fc := cfg.Fixed
	res := &FixedResult{System: k.name, Config: fc}
	for _, sh := range []struct {
		out           *FixedShape
		width, chunks int
	}{{&res.ShortOne, 1, fc.Short}, {&res.LongOne, 1, fc.Long}, {&res.ShortWide, fc.Width, fc.Short}} {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		s := Stream{Chunks: sh.chunks, Interval: fc.Interval, Size: fc.Size}
		perRun, runs, errs, first, err := fixedShape(ctx, env, cfg, k, remoteURL, sh.width, s)
		if err != nil {
			return nil, err
		}
		*sh.out = FixedShape{Width: sh.width, Chunks: sh.chunks, PerRun: perRun, Runs: runs}
		res.Errors += errs
		if res.FirstError == "" {
			res.FirstError = first
		}
	}
	return res, nil
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
