package a2a

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// The event bound counts the bytes since the last blank line, whatever the
// line endings (LF, CRLF, CR), so many small events never add up to one.
func TestSSELimiterCountsPerEvent(t *testing.T) {
	ev := "data: " + strings.Repeat("x", 90) + "\n"
	for _, tt := range []struct {
		name, stream string
		fails        bool
	}{
		{"LF events", strings.Repeat(ev+"\n", 50), false},
		{"CRLF events", strings.Repeat(strings.ReplaceAll(ev, "\n", "\r\n")+"\r\n", 50), false},
		{"CR events", strings.Repeat(strings.ReplaceAll(ev, "\n", "\r")+"\r", 50), false},
		{"one event of many lines", strings.Repeat(ev, 50) + "\n", true},
		{"one long line", "data: " + strings.Repeat("x", 500) + "\n\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := &sseLimiter{rc: io.NopCloser(strings.NewReader(tt.stream)), maxEvent: 300}
			_, err := io.ReadAll(l)
			if tt.fails != errors.Is(err, ErrEventTooLarge) {
				t.Fatalf("err = %v, want failure %v", err, tt.fails)
			}
		})
	}
}
