//go:build unix

package subagentstream

import "syscall"

// writeNow writes what the socket of raw takes of p at once, never waiting
// for it to take more (the descriptor of a Go network connection is
// non-blocking); nil raw takes nothing.
func writeNow(raw syscall.RawConn, p []byte) (int, error) {
	if raw == nil {
		return 0, nil
	}
	n := 0
	var werr error
	err := raw.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, e := syscall.Write(int(fd), p[n:])
			if e == syscall.EINTR {
				continue
			}
			if m > 0 {
				n += m
			}
			if e != nil {
				if e != syscall.EAGAIN {
					werr = e
				}
				break
			}
			if m == 0 {
				break
			}
		}
		return true // done: never wait for the socket here
	})
	if err == nil {
		err = werr
	}
	return n, err
}
