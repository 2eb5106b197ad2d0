package agentadaptor

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// startInGroup starts cmd as the leader of a new process group, so that the
// whole tree it spawns can be signalled at once. With nice > 0 the group
// runs at that lower CPU priority (see [WithNice] and startNiced).
func startInGroup(cmd *exec.Cmd, nice int) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if nice == 0 {
		return cmd.Start()
	}
	return startNiced(cmd, nice)
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
