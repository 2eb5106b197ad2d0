//go:build !unix

package subagentstream

import "syscall"

// writeNow takes nothing on this platform: the response's own goroutine
// writes everything.
func writeNow(syscall.RawConn, []byte) (int, error) { return 0, nil }
