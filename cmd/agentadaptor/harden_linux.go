package main

import "golang.org/x/sys/unix"

// hideProcess makes this process non-dumpable (prctl PR_SET_DUMPABLE 0):
// its /proc/PID/environ and memory become readable by root only, no
// longer by every process of the same user. The agent CLIs that serve and
// a2a serve start run as that user and run commands; without this, one of
// them could read the host's secrets from the host's own environment
// (/proc/$PPID/environ) however clean its own is. The children themselves
// are dumpable again from their exec on; it also turns core dumps off.
func hideProcess() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
