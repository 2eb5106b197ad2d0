package a2a

import (
	"errors"
	"io"
	"math/rand/v2"
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

// refEventBound is the event bound byte by byte, as the limiter counted
// before it skipped runs of line content: the reference its faster count
// must match.
type refEventBound struct {
	max, event        int64
	afterEOL, pending bool
}

// feed reports how many bytes of p pass before the bound is exceeded (all
// of them when it is not).
func (r *refEventBound) feed(p []byte) (int, bool) {
	for i, c := range p {
		switch c {
		case '\r':
			if r.afterEOL {
				r.event = 0
			}
			r.afterEOL, r.pending = true, true
		case '\n':
			if r.pending {
				r.pending = false
				continue
			}
			if r.afterEOL {
				r.event = 0
			}
			r.afterEOL = true
		default:
			r.afterEOL, r.pending = false, false
			if r.event++; r.event > r.max {
				return i, true
			}
		}
	}
	return len(p), false
}

// The limiter fails exactly where counting byte by byte does, on streams of
// any line endings read in pieces of any size.
func TestSSELimiterMatchesByteCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("xxxxxxx\r\n\n")
	for range 2000 {
		stream := make([]byte, rng.IntN(400))
		for i := range stream {
			stream[i] = alphabet[rng.IntN(len(alphabet))]
		}
		max := int64(1 + rng.IntN(40))
		ref := &refEventBound{max: max}
		wantErr := false
		// The reference sees the whole stream; the limiter the same bytes
		// in pieces.
		if _, over := ref.feed(stream); over {
			wantErr = true
		}
		l := &sseLimiter{rc: io.NopCloser(&pieces{b: stream, rng: rng}), maxEvent: max}
		_, err := io.ReadAll(l)
		if gotErr := errors.Is(err, ErrEventTooLarge); gotErr != wantErr {
			t.Fatalf("stream %q, bound %d: limiter failed %v, byte count %v", stream, max, gotErr, wantErr)
		}
		if !wantErr && (l.event != ref.event || l.afterEOL != ref.afterEOL || l.pendingCR != ref.pending) {
			t.Fatalf("stream %q: state %d/%v/%v, byte count %d/%v/%v", stream, l.event, l.afterEOL, l.pendingCR, ref.event, ref.afterEOL, ref.pending)
		}
	}
}

// pieces reads b in pieces of random sizes.
type pieces struct {
	b   []byte
	rng *rand.Rand
}

func (p *pieces) Read(dst []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(dst), len(p.b), 1+p.rng.IntN(16))
	copy(dst, p.b[:n])
	p.b = p.b[n:]
	return n, nil
}
