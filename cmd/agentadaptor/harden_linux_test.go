package main

import (
	"testing"

	"golang.org/x/sys/unix"
)

// serve makes itself non-dumpable, so that the agent CLIs it starts (same
// user) cannot read its environment from /proc/PID/environ.
func TestServeHidesItsEnvironment(t *testing.T) {
	_, stop := startServe(t, writeConfig(t, "parent: {adapter: scripted, scenario: SCENARIO}\n"))
	defer stop()
	d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil || d != 0 {
		t.Fatalf("dumpable %d (%v): the host's /proc/PID/environ is readable by its children's user", d, err)
	}
}
