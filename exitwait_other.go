//go:build !linux

package agentadaptor

import "os/exec"

// waitExit reaps cmd's started process with cmd.Wait and reports true (see
// exitwait_linux.go).
func waitExit(cmd *exec.Cmd) (reaped bool) {
	_ = cmd.Wait()
	return true
}
