//go:build !linux

package agentadaptor

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
)

// startNiced starts cmd and then lowers its process group's CPU priority
// with setpriority(PRIO_PGRP), where the nice value belongs to each process
// (the BSDs, macOS): the child's first instructions run at the host's
// priority, and a process forked at that very moment may keep it. If the
// priority cannot be set, the child is killed and reaped and the error
// returned. A group that is already gone is not an error, and neither is
// EACCES (a process that inherited a higher value keeps it).
func startNiced(cmd *exec.Cmd, nice int) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	err := syscall.Setpriority(syscall.PRIO_PGRP, pid, nice)
	if err == nil || errors.Is(err, syscall.ESRCH) || errors.Is(err, syscall.EACCES) {
		return nil
	}
	_ = signalGroup(pid, syscall.SIGKILL)
	_ = cmd.Wait()
	return fmt.Errorf("setting nice value %d on its process group: %w", nice, err)
}
