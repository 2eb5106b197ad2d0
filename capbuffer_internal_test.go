package agentadaptor

import (
	"strings"
	"testing"
)

// A captured stream keeps its first limit bytes (RawStreams); stderr also
// keeps its end, where a failing process writes why, for ExitStatus.Stderr
// and the exit message built from its last line.
func TestCapBufferKeepsTheStartAndTheEndOfStderr(t *testing.T) {
	for _, tc := range []struct {
		name      string
		writes    []string
		limit     int
		tailCap   int
		wantBuf   string
		wantTail  string // withTail()
		truncated bool
	}{
		{"under the limit", []string{"abc", "de"}, 8, 4, "abcde", "abcde", false},
		{"at the limit", []string{"abcd", "efgh"}, 8, 4, "abcdefgh", "abcdefgh", false},
		{"past it in small writes", []string{"abcdefgh", "ij", "kl", "mnopqr"}, 8, 4, "abcdefgh", "abcdefgh\n[…]\nopqr", true},
		{"past it in one write", []string{"abcdefghijklmnop"}, 8, 4, "abcdefgh", "abcdefgh\n[…]\nmnop", true},
		{"a short tail", []string{"abcdefgh", "ij"}, 8, 4, "abcdefgh", "abcdefgh\n[…]\nij", true},
		{"no tail kept (stdout)", []string{"abcdefghij"}, 8, 0, "abcdefgh", "abcdefgh", true},
		{"a zero limit", []string{"abc", "defgh"}, 0, 4, "", "\n[…]\nefgh", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := capBuffer{limit: tc.limit, tailCap: tc.tailCap}
			for _, w := range tc.writes {
				c.Write([]byte(w))
			}
			if string(c.buf) != tc.wantBuf || c.truncated != tc.truncated {
				t.Errorf("buf %q truncated %v, want %q %v", c.buf, c.truncated, tc.wantBuf, tc.truncated)
			}
			if got := string(c.withTail()); got != tc.wantTail {
				t.Errorf("withTail() = %q, want %q", got, tc.wantTail)
			}
			if string(c.buf) != tc.wantBuf {
				t.Errorf("withTail changed buf to %q", c.buf)
			}
		})
	}
	// The reason a process gives last reaches the exit message, however
	// much it wrote before.
	c := capBuffer{limit: 64, tailCap: stderrTail}
	for range 1000 {
		c.Write([]byte("warning: something noisy happened\n"))
	}
	c.Write([]byte("fatal: invalid API key\n"))
	if msg := exitMessage(ExitStatus{Code: 1, Stderr: c.withTail()}); !strings.HasSuffix(msg, ": fatal: invalid API key") {
		t.Errorf("exit message %q does not end with the process's last line", msg)
	}
}
