package agentadaptor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// startInGroup starts cmd as the leader of a new process group, so that the
// whole tree it spawns can be signalled at once. With nice > 0 it then
// lowers the group's CPU priority (see [WithNice]); if that fails, the child
// is killed and reaped, and the error returned.
func startInGroup(cmd *exec.Cmd, nice int) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return err
	}
	if nice == 0 {
		return nil
	}
	pid := cmd.Process.Pid
	if err := setGroupNice(pid, nice); err != nil {
		_ = signalGroup(pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return fmt.Errorf("setting nice value %d on its process group: %w", nice, err)
	}
	return nil
}

// setGroupNice sets the nice value of every process in the group pgid. On
// Linux, where the nice value belongs to each thread, PRIO_PGRP reaches
// every thread of every process in the group (PRIO_PROCESS would reach one
// thread only). A group that is already gone is not an error, and neither
// is EACCES: the kernel refuses only to lower a nice value without
// privilege, so a process that inherited a higher one than asked keeps it
// (every other member of the group is set all the same).
func setGroupNice(pgid, nice int) error {
	err := syscall.Setpriority(syscall.PRIO_PGRP, pgid, nice)
	if err == nil || errors.Is(err, syscall.ESRCH) || errors.Is(err, syscall.EACCES) {
		return nil
	}
	return err
}

// signalGroup sends sig to the process group led by pid. A group that is
// already gone is not an error.
func signalGroup(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return nil
	}
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// exitStatus converts the result of cmd.Wait into an ExitStatus.
func exitStatus(state *os.ProcessState) ExitStatus {
	if state == nil {
		return ExitStatus{Code: -1}
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ExitStatus{Code: -1, Signaled: true}
	}
	return ExitStatus{Code: state.ExitCode()}
}
