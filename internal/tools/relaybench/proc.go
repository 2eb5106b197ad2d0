package relaybench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// clkTck is USER_HZ, the unit of /proc/PID/stat CPU times (100 on Linux).
const clkTck = 100

// CPU is a process's CPU time from /proc/PID/stat: its own (utime+stime)
// and that of its waited-for children (cutime+cstime).
type CPU struct {
	Self, Children time.Duration
}

// Sub returns c - o.
func (c CPU) Sub(o CPU) CPU { return CPU{c.Self - o.Self, c.Children - o.Children} }

// Add returns c + o.
func (c CPU) Add(o CPU) CPU { return CPU{c.Self + o.Self, c.Children + o.Children} }

// ReadCPU reads /proc/PID/stat.
func ReadCPU(pid int) (CPU, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return CPU{}, err
	}
	// The fields after the command name (which may hold spaces) start at
	// field 3, state; utime is field 14.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return CPU{}, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return CPU{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	var v [4]int64
	for k := range 4 {
		if v[k], err = strconv.ParseInt(f[11+k], 10, 64); err != nil {
			return CPU{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
	}
	tick := time.Second / clkTck
	return CPU{Self: time.Duration(v[0]+v[1]) * tick, Children: time.Duration(v[2]+v[3]) * tick}, nil
}

// ReadMem returns VmRSS and RssAnon (its anonymous part: heap and stacks,
// not the binary's pages, which the project's parent processes share) of
// /proc/PID/status in bytes; zeros when the process is gone.
func ReadMem(pid int) (rss, anon int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	return statusKB(b, "VmRSS:") * 1024, statusKB(b, "RssAnon:") * 1024
}

func statusKB(b []byte, key string) int64 {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0
	}
	line := b[i+len(key):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	f := strings.Fields(string(line))
	if len(f) == 0 {
		return 0
	}
	kb, _ := strconv.ParseInt(f[0], 10, 64)
	return kb
}

// Children returns the live child processes of pid, from
// /proc/PID/task/*/children.
func Children(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for s := range strings.FieldsSeq(string(b)) {
			if c, err := strconv.Atoi(s); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// mono is CLOCK_MONOTONIC in nanoseconds: the clock the remote stamps its
// chunks with (Node's process.hrtime.bigint()). It is read once through the
// system call and then advanced by Go's monotonic clock, which is the same
// clock, so reading it costs what time.Now does.
var monoBase, monoAt = func() (int64, time.Time) {
	var ts syscall.Timespec
	const clockMonotonic = 1
	at := time.Now()
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		panic("clock_gettime(CLOCK_MONOTONIC): " + e.Error())
	}
	return ts.Nano(), at
}()

// monoNow returns CLOCK_MONOTONIC now, in nanoseconds.
func monoNow() int64 { return monoBase + int64(time.Since(monoAt)) }

// ReadSchedCPU returns the CPU time of pid's live threads in nanoseconds
// (the first field of /proc/PID/task/*/schedstat): finer than the 10 ms
// ticks of /proc/PID/stat, but it forgets threads that have exited, so it
// is used only over short windows (the long delegation's quarters).
func ReadSchedCPU(pid int) time.Duration {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if i := bytes.IndexByte(b, ' '); i > 0 {
			v, _ := strconv.ParseInt(string(b[:i]), 10, 64)
			sum += v
		}
	}
	return time.Duration(sum)
}

// ReadMachineBusy returns the CPU time all CPUs spent busy since boot (the
// "cpu" line of /proc/stat: everything but idle and iowait).
func ReadMachineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, s := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait, guest (already in user)
			continue
		}
		v, _ := strconv.ParseInt(s, 10, 64)
		busy += v
	}
	return time.Duration(busy) * (time.Second / clkTck)
}
