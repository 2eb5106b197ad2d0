//go:build !linux

package agentadaptor

import "os/exec"

// waitExit reaps cmd's started process with cmd.Wait and reports true (see
// childio_linux.go).
func waitExit(cmd *exec.Cmd) (reaped bool) {
	_ = cmd.Wait()
	return true
}

// watchChild reports false: the child is watched by watchChildPortable (see
// childio_linux.go).
func (r *run) watchChild(onOut, onErr func([]byte), exited func(reaped bool)) bool {
	return false
}
