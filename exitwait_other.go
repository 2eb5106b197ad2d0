//go:build !linux

package agentadaptor

import (
	"os"
	"os/exec"
)

// waitExit reaps cmd's started process with cmd.Wait and reports true (see
// exitwait_linux.go).
func waitExit(cmd *exec.Cmd) (reaped bool) {
	_ = cmd.Wait()
	return true
}

// pipePending reports that it cannot tell what a pipe holds here: past
// the drain bound, the pipes are closed as they are.
func pipePending(*os.File) int { return -1 }
