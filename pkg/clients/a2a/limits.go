package a2a

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

// Default bounds on what the client reads from an agent
// (docs/design.md#secrets: every byte read from a remote is bounded).
const (
	// DefaultMaxEventBytes bounds one SSE event (its lines until the blank
	// line that ends it) and so one line.
	DefaultMaxEventBytes = 4 << 20
	// DefaultMaxResponseBytes bounds a JSON response (send, get, cancel).
	DefaultMaxResponseBytes = 16 << 20
	// DefaultMaxStreamBytes bounds one SSE response as a whole.
	DefaultMaxStreamBytes = 256 << 20
)

// Causes wrapped by the [*clienterr.Error] (kind clienterr.KindProtocol) of a call whose
// response broke a bound; match them with errors.Is.
var (
	// ErrEventTooLarge: an SSE event (or line) exceeded MaxEventBytes.
	ErrEventTooLarge = errors.New("SSE event exceeds the event size limit")
	// ErrResponseTooLarge: a JSON response exceeded MaxResponseBytes, an
	// SSE response MaxStreamBytes, or the calls sharing a [ReadBudget]
	// read more than it allows.
	ErrResponseTooLarge = errors.New("response exceeds the size limit")
)

// readLimits are a client's bounds (Options).
type readLimits struct {
	event, response, stream int64
}

func limitsFrom(o Options) readLimits {
	l := readLimits{event: o.MaxEventBytes, response: o.MaxResponseBytes, stream: o.MaxStreamBytes}
	if l.event <= 0 {
		l.event = DefaultMaxEventBytes
	}
	if l.response <= 0 {
		l.response = DefaultMaxResponseBytes
	}
	if l.stream <= 0 {
		l.stream = DefaultMaxStreamBytes
	}
	return l
}

// ReadBudget bounds the bytes several calls read together (all the calls
// of one delegation, say): attach it to their contexts with
// [WithReadBudget]. Safe for concurrent use.
type ReadBudget struct {
	max  int64
	used atomic.Int64
}

// NewReadBudget returns a budget of max bytes.
func NewReadBudget(max int64) *ReadBudget { return &ReadBudget{max: max} }

// Used returns the bytes charged so far.
func (b *ReadBudget) Used() int64 { return b.used.Load() }

type budgetKey struct{}

// WithReadBudget returns ctx whose calls charge every response byte they
// read to b; beyond its max they fail with ErrResponseTooLarge.
func WithReadBudget(ctx context.Context, b *ReadBudget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// boundedBodies wraps every response body in a reader that enforces the
// limits: SSE responses per event and per stream, other responses as a
// whole; and the request context's ReadBudget, if any.
type boundedBodies struct {
	base http.RoundTripper
	lim  readLimits
}

func (t boundedBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp == nil || resp.Body == nil {
		return resp, err
	}
	budget, _ := req.Context().Value(budgetKey{}).(*ReadBudget)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		resp.Body = &sseLimiter{rc: resp.Body, maxEvent: t.lim.event, maxTotal: t.lim.stream, budget: budget}
	} else {
		resp.Body = &sseLimiter{rc: resp.Body, maxTotal: t.lim.response, budget: budget}
	}
	return resp, nil
}

// sseLimiter counts what is read through it: the whole body against
// maxTotal and the budget, and (when maxEvent > 0) the bytes since the last
// blank line, which ends an SSE event.
type sseLimiter struct {
	rc       io.ReadCloser
	maxEvent int64
	maxTotal int64
	budget   *ReadBudget

	total     int64
	event     int64 // bytes of the current event, line ends excluded
	afterEOL  bool  // the last byte ended a line
	pendingCR bool  // the last byte was '\r' (a '\n' may complete it)
	err       error
}

func (l *sseLimiter) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.rc.Read(p)
	l.total += int64(n)
	if l.maxTotal > 0 && l.total > l.maxTotal {
		l.err = fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, l.maxTotal)
		return 0, l.err
	}
	if l.budget != nil && l.budget.used.Add(int64(n)) > l.budget.max {
		l.err = fmt.Errorf("%w: the calls of this budget read more than %d bytes", ErrResponseTooLarge, l.budget.max)
		return 0, l.err
	}
	if l.maxEvent > 0 {
		// Runs of line content are counted whole (IndexByte finds the
		// line ends), the line ends one by one.
		for b := p[:n]; len(b) > 0; {
			i, run := lineEnd(b), len(b)
			if i >= 0 {
				run = i
			}
			if run > 0 {
				l.afterEOL, l.pendingCR = false, false
				if l.event += int64(run); l.event > l.maxEvent {
					l.err = fmt.Errorf("%w: an event or line of more than %d bytes", ErrEventTooLarge, l.maxEvent)
					return 0, l.err
				}
			}
			if i < 0 {
				break
			}
			switch b[i] {
			case '\r':
				if l.afterEOL {
					l.event = 0 // a blank line ends the event
				}
				l.afterEOL, l.pendingCR = true, true
			case '\n':
				if l.pendingCR { // the LF of a CRLF
					l.pendingCR = false
				} else {
					if l.afterEOL {
						l.event = 0
					}
					l.afterEOL = true
				}
			}
			b = b[i+1:]
		}
	}
	return n, err
}

// lineEnd returns the index of b's first '\r' or '\n', or -1.
func lineEnd(b []byte) int {
	lf := bytes.IndexByte(b, '\n')
	head := b
	if lf >= 0 {
		head = b[:lf]
	}
	if cr := bytes.IndexByte(head, '\r'); cr >= 0 {
		return cr
	}
	return lf
}

func (l *sseLimiter) Close() error { return l.rc.Close() }

// interfacesOnTrustedOrigins returns the card's interfaces the client may
// use: those on the card's own origin or one of extra, and never a plain
// http interface of an https card. A card without a source URL (built by
// the caller) is trusted as is.
func interfacesOnTrustedOrigins(card *Card, extra []string) ([]*sdk.AgentInterface, error) {
	home := card.Origin()
	if home == "" {
		return card.Agent.SupportedInterfaces, nil
	}
	allowed := map[string]bool{strings.ToLower(home): true}
	for _, o := range extra {
		allowed[strings.ToLower(credentials.Origin(o))] = true // "https://api.example" is https://api.example:443
	}
	secure := strings.HasPrefix(home, "https://")
	var out []*sdk.AgentInterface
	var refused []string
	for _, in := range card.Agent.SupportedInterfaces {
		if in == nil {
			continue
		}
		o := strings.ToLower(credentials.Origin(in.URL))
		if !allowed[o] || (secure && strings.HasPrefix(o, "http://")) {
			refused = append(refused, o)
			continue
		}
		out = append(out, in)
	}
	if len(out) == 0 {
		return nil, &CardError{Field: "supportedInterfaces", Problem: fmt.Sprintf("every interface points away from the card's origin %s (%s); the host sends tasks only there unless the agent's entry allows more origins, and never downgrades https to http",
			home, strings.Join(refused, ", "))}
	}
	return out, nil
}
