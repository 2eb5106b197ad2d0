package agentadaptor

import (
	"errors"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// waitExit blocks until cmd's started process has exited. It waits on a
// pidfd through the netpoller, so no OS thread is blocked per child (as
// one is in waitid inside cmd.Wait), and leaves the child unreaped: it
// reports false, and cmd.Wait then returns at once. Where pidfds are not
// available it reaps the child with cmd.Wait and reports true.
//
// The pidfd is opened after Start, which is race-free: the child cannot be
// reaped (and its pid reused) before this run calls cmd.Wait.
func waitExit(cmd *exec.Cmd) (reaped bool) {
	if !waitPidfd(cmd.Process.Pid) {
		_ = cmd.Wait()
		return true
	}
	return false
}

// waitPidfd waits until process pid has exited, through a pidfd. It reports
// false when it could not wait that way.
func waitPidfd(pid int) bool {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		// A pidfd is readable once its process has exited.
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(pfd, 0)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				perr = err
				return true
			}
			return n > 0
		}
	})
	return err == nil && perr == nil
}

// pipePending returns how many bytes the pipe f holds, unread (-1 if it
// cannot tell).
func pipePending(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1
	}
	n := -1
	if err := rc.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil { // FIONREAD
			n = v
		}
	}); err != nil {
		return -1
	}
	return n
}
