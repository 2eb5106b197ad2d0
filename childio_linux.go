package agentadaptor

import (
	"errors"
	"os"
	"os/exec"
	"time"

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

// watchChild reads the child's stdout (onOut) and stderr (onErr) and waits
// for its exit, all on the calling goroutine: the two pipes and a pidfd of
// the child are registered with an epoll instance of the run, which the
// netpoller watches as one file. When the child has exited it calls
// exited(false) (the child is then reaped by exited), and goes on reading
// until both pipes are at EOF, for at most drainBound. Reads take a buffer
// from pipeBuffers only while there is something to read.
//
// It reports false, having read nothing, when the OS cannot do this; the
// caller then uses watchChildPortable.
func (r *run) watchChild(onOut, onErr func([]byte), exited func(reaped bool)) bool {
	outFd, errFd := rawFd(r.stdout), rawFd(r.stderr)
	if outFd < 0 || errFd < 0 {
		return false
	}
	pidfd, err := unix.PidfdOpen(r.cmd.Process.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return false
	}
	defer unix.Close(pidfd)
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return false
	}
	ep := os.NewFile(uintptr(epfd), "epoll") // owns epfd; pollable, being non-blocking
	defer ep.Close()
	rc, err := ep.SyscallConn()
	if err != nil {
		return false
	}
	for _, fd := range []int{pidfd, outFd, errFd} {
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			return false
		}
	}
	open := map[int]func([]byte){outFd: onOut, errFd: onErr}
	done := false
	var evs [3]unix.EpollEvent
	for len(open) > 0 || !done {
		var n int
		var werr error
		err := rc.Read(func(uintptr) bool {
			for {
				n, werr = unix.EpollWait(epfd, evs[:], 0)
				if werr == unix.EINTR {
					continue
				}
				return werr != nil || n > 0 // else wait until one is ready
			}
		})
		if err != nil || werr != nil {
			break // the drain bound is over (or epoll failed)
		}
		for _, ev := range evs[:n] {
			fd := int(ev.Fd)
			if fd == pidfd {
				if !done {
					done = true
					_ = unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, pidfd, nil)
					exited(false)
					_ = ep.SetReadDeadline(time.Now().Add(drainBound))
				}
				continue
			}
			if fn := open[fd]; fn != nil && !readOnce(fd, fn) {
				delete(open, fd)
				_ = unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, fd, nil)
			}
		}
	}
	if !done {
		exited(waitExit(r.cmd))
	}
	return true
}

// readOnce reads what is in the pipe fd (one read: a pipe that stays
// readable is reported again) and gives it to fn. It reports false at EOF
// or on an error.
func readOnce(fd int, fn func([]byte)) bool {
	bp := pipeBuffers.Get().(*[]byte)
	defer pipeBuffers.Put(bp)
	for {
		n, err := unix.Read(fd, *bp)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return true
		case n > 0:
			fn((*bp)[:n])
			return true
		default:
			return false
		}
	}
}

// rawFd returns f's descriptor without putting it in blocking mode (as
// f.Fd would), or -1.
func rawFd(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	if rc.Control(func(u uintptr) { fd = int(u) }) != nil {
		return -1
	}
	return fd
}
