package main

import (
	"os"
	"runtime/debug"
)

// serveGCPercent is the garbage collector's target of serve when the
// environment sets no GOGC: the heap may grow by half its live size
// between collections instead of by all of it. A relay's heap is mostly
// frames on their way through, so the collector's headroom, not live
// state, is most of what each active delegation costs in memory. Measured
// in the fan-out benchmark (docs/benchmarks.md, 10 × 10 and 10 × 100
// streams): RSS per active delegation 303–316 → 231–241 KiB and
// 250 → 200 KiB, serve's CPU per chunk within the run-to-run noise.
const serveGCPercent = 50

// tuneServeGC sets serveGCPercent unless GOGC is set, which wins.
func tuneServeGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(serveGCPercent)
	}
}
