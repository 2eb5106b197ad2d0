package agui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/seed0634/agentadaptor/internal/authref"
)

// Kind classifies an [*Error] by what the caller can do about it.
type Kind int

const (
	// KindUnavailable: the remote could not be reached or answered 5xx,
	// 408 or 429. Retryable.
	KindUnavailable Kind = iota + 1
	// KindRejected: the remote refused the request (a 4xx other than 401,
	// 403, 404, 408 and 429), or the input was unusable. Not retryable
	// unchanged.
	KindRejected
	// KindUnauthorized: the remote answered 401 or 403. Check the credential.
	KindUnauthorized
	// KindNotFound: the remote answered 404: there is no AG-UI endpoint at
	// that URL.
	KindNotFound
	// KindProtocol: the remote sent something this client cannot interpret:
	// a response that is not text/event-stream, a malformed or oversized
	// frame, a frame without an event type, or a refused redirect.
	KindProtocol
	// KindTimeout: the caller's deadline, ConnectTimeout or IdleTimeout
	// expired. errors.Is(err, context.DeadlineExceeded) also holds.
	KindTimeout
	// KindCanceled: the caller cancelled its context or closed the stream.
	// errors.Is(err, context.Canceled) also holds.
	KindCanceled
	// KindInterrupted: the stream ended (EOF or a broken connection) before
	// RUN_FINISHED or RUN_ERROR. AG-UI has no resumption: the run's outcome
	// is unknown.
	KindInterrupted
)

var kindNames = map[Kind]string{
	KindUnavailable:  "unavailable",
	KindRejected:     "rejected",
	KindUnauthorized: "unauthorized",
	KindNotFound:     "not found",
	KindProtocol:     "protocol error",
	KindTimeout:      "timeout",
	KindCanceled:     "canceled",
	KindInterrupted:  "stream interrupted",
}

var kindHints = map[Kind]string{
	KindUnavailable:  "the remote AG-UI agent could not be reached or failed; retry later or check the endpoint URL",
	KindRejected:     "the remote AG-UI agent refused the request; do not retry it unchanged",
	KindUnauthorized: "check the auth_ref credential configured for this agent",
	KindNotFound:     "there is no AG-UI endpoint at this URL; check endpoint_url",
	KindProtocol:     "the remote sent data this client cannot interpret; report it to the agent's owner",
	KindTimeout:      "the remote was silent for too long or the deadline passed; raise the timeout or retry",
	KindCanceled:     "the run was cancelled by the caller",
	KindInterrupted:  "the stream ended before RUN_FINISHED or RUN_ERROR; the remote run's outcome is unknown",
}

// String returns a short lowercase name of the kind.
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

type kindSentinel struct{ kind Kind }

func (s *kindSentinel) Error() string { return "agui: " + s.kind.String() }

// Sentinel values for errors.Is: errors.Is(err, ErrNotFound) is true when err
// is (or wraps) an [*Error] of the matching [Kind].
var (
	ErrUnavailable  error = &kindSentinel{KindUnavailable}
	ErrRejected     error = &kindSentinel{KindRejected}
	ErrUnauthorized error = &kindSentinel{KindUnauthorized}
	ErrNotFound     error = &kindSentinel{KindNotFound}
	ErrProtocol     error = &kindSentinel{KindProtocol}
	ErrTimeout      error = &kindSentinel{KindTimeout}
	ErrCanceled     error = &kindSentinel{KindCanceled}
	ErrInterrupted  error = &kindSentinel{KindInterrupted}
)

// Causes wrapped (Err) by an [*Error] of kind KindProtocol; match them with
// errors.Is.
var (
	// ErrFrameTooLarge: one SSE frame (or line) exceeded Options.MaxFrameBytes.
	ErrFrameTooLarge = errors.New("SSE frame exceeds the frame size limit")
	// ErrStreamTooLarge: the stream exceeded Options.MaxStreamBytes.
	ErrStreamTooLarge = errors.New("SSE stream exceeds the stream size limit")
	// ErrMalformedEvent: a frame's data is not a JSON AG-UI event (invalid
	// JSON, not an object, no "type", or fields of the wrong JSON type).
	ErrMalformedEvent = errors.New("malformed AG-UI event")
)

// Error is the error type returned by this package (except for
// [*AuthRefError] from credential resolution and option errors from [New]).
// Use errors.Is with the sentinels (ErrNotFound, ...) or errors.As to read
// the fields.
//
// Error strings never contain the credential: remote text that echoes it is
// redacted.
type Error struct {
	// Kind says what the caller can do; see the Kind constants.
	Kind Kind
	// Op is the operation that failed: "run" (the request, up to the
	// response headers) or "stream" (reading events).
	Op string
	// Status is the HTTP status code of the response, 0 if none arrived.
	Status int
	// Body is a bounded, redacted, single-line excerpt of the response body
	// of a non-2xx or non-SSE response; "" otherwise.
	Body string
	// Err is the underlying cause. It may be nil.
	Err error
}

// Error describes the failure and what to do about it.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("agui: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(e.Kind.String())
	if e.Status != 0 && (e.Status < 200 || e.Status > 299) {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Body != "" {
		fmt.Fprintf(&b, ": remote said %q", e.Body)
	}
	if h, ok := kindHints[e.Kind]; ok {
		b.WriteString(" — ")
		b.WriteString(h)
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's Kind.
func (e *Error) Is(target error) bool {
	s, ok := target.(*kindSentinel)
	return ok && s.kind == e.Kind
}

// Retryable reports whether retrying the same run later may succeed
// (unavailable, timeout, interrupted).
func (e *Error) Retryable() bool {
	switch e.Kind {
	case KindUnavailable, KindTimeout, KindInterrupted:
		return true
	}
	return false
}

// KindOf returns the Kind of err if it is or wraps an [*Error], else 0.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// redactErr returns err unchanged unless its text contains secret; a
// redacted error keeps the context sentinels and this package's protocol
// causes reachable for errors.Is.
func redactErr(err error, secret string) error {
	return authref.RedactErr(err, secret, context.Canceled, context.DeadlineExceeded, ErrFrameTooLarge, ErrStreamTooLarge, ErrMalformedEvent)
}

// maxExcerpt bounds Error.Body.
const maxExcerpt = 512

// excerpt turns a response body prefix into a short single-line text with
// the secret redacted and control characters replaced. truncated says that b
// is a prefix of a longer body: its tail, which could hold the start of the
// secret, is dropped first.
func excerpt(b []byte, truncated bool, secret string) string {
	if truncated && secret != "" {
		b = b[:max(0, len(b)-len(secret))]
	}
	s := string(b)
	s = authref.Redact(s, secret)
	s = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxExcerpt {
		cut := maxExcerpt
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
