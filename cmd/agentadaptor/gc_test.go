package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// serve collects garbage at serveGCPercent unless GOGC says otherwise.
func TestServeGCPercent(t *testing.T) {
	restore := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(restore) })
	gogc, had := os.LookupEnv("GOGC")
	t.Cleanup(func() {
		if had {
			os.Setenv("GOGC", gogc)
		} else {
			os.Unsetenv("GOGC")
		}
	})

	os.Unsetenv("GOGC")
	tuneServeGC()
	if got := debug.SetGCPercent(100); got != serveGCPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, serveGCPercent)
	}
	os.Setenv("GOGC", "100")
	tuneServeGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100: GC percent %d, want the environment's 100", got)
	}
}
