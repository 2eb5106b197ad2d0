package agentadaptor

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
)

// startNiced starts cmd from an OS thread of its own whose nice value has
// been lowered to nice. On Linux the nice value belongs to each thread and a
// new process inherits its forking thread's, so the child runs at nice from
// its first instruction, and every thread and process it ever creates
// inherits it: there is no window in which it, or something it forks, runs
// at the host's priority. (Lowering the group afterwards with
// setpriority(PRIO_PGRP) misses a process whose fork is under way at that
// moment: it copies the old value and joins the group just after.)
//
// The thread stays locked to its goroutine, so when that goroutine returns
// the runtime ends the thread instead of running other goroutines on it at
// the lower priority; the host's other threads are never touched.
func startNiced(cmd *exec.Cmd, nice int) error {
	errc := make(chan error, 1)
	go forkNiced(cmd, nice, errc)
	return <-errc
}

// forkNiced is startNiced's goroutine; it sends Start's error to errc.
func forkNiced(cmd *exec.Cmd, nice int, errc chan<- error) {
	runtime.LockOSThread() // never unlocked on this path: the thread ends with the goroutine
	if syscall.Gettid() == syscall.Getpid() {
		// The main thread, which the runtime parks instead of ending: it
		// would keep the lower value, which ps and top show as the whole
		// host's. Hold it (a locked thread runs no other goroutine) while
		// another thread does the work.
		inner := make(chan error, 1)
		go forkNiced(cmd, nice, inner)
		errc <- <-inner
		runtime.UnlockOSThread()
		return
	}
	if err := setThreadNice(nice); err != nil {
		errc <- fmt.Errorf("setting nice value %d: %w", nice, err)
		return
	}
	errc <- cmd.Start()
}

// setThreadNice sets the nice value of the calling OS thread only
// (PRIO_PROCESS with a thread id reaches that thread on Linux). EACCES is
// not an error: the kernel refuses only to lower a nice value without
// privilege, so a thread that inherited a higher value than asked keeps it,
// and the child runs at that even lower priority.
func setThreadNice(nice int) error {
	err := syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), nice)
	if err == nil || errors.Is(err, syscall.EACCES) {
		return nil
	}
	return err
}
