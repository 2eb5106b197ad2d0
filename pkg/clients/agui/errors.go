package agui

import (
	"context"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
	"github.com/seed0634/agentadaptor/pkg/credentials"
)

// Kind classifies an [*Error] by what the caller can do about it. It is
// [clienterr.Kind], shared with pkg/clients/a2a.
type Kind = clienterr.Kind

// The kinds, as this client uses them.
const (
	// KindUnavailable: the remote could not be reached or answered 5xx,
	// 408 or 429. Retryable.
	KindUnavailable = clienterr.KindUnavailable
	// KindRejected: the remote refused the request (a 4xx other than 401,
	// 403, 404, 408 and 429), or the input was unusable. Not retryable
	// unchanged.
	KindRejected = clienterr.KindRejected
	// KindUnauthorized: the remote answered 401 or 403. Check the credential.
	KindUnauthorized = clienterr.KindUnauthorized
	// KindNotFound: the remote answered 404: there is no AG-UI endpoint at
	// that URL.
	KindNotFound = clienterr.KindNotFound
	// KindProtocol: the remote sent something this client cannot interpret:
	// a response that is not text/event-stream, a malformed or oversized
	// frame, a frame without an event type, or a refused redirect.
	KindProtocol = clienterr.KindProtocol
	// KindTimeout: the caller's deadline, ConnectTimeout or IdleTimeout
	// expired. errors.Is(err, context.DeadlineExceeded) also holds.
	KindTimeout = clienterr.KindTimeout
	// KindCanceled: the caller cancelled its context or closed the stream.
	// errors.Is(err, context.Canceled) also holds.
	KindCanceled = clienterr.KindCanceled
	// KindInterrupted: the stream ended (EOF or a broken connection) before
	// RUN_FINISHED or RUN_ERROR. AG-UI has no resumption: the run's outcome
	// is unknown.
	KindInterrupted = clienterr.KindInterrupted
)

// protocol prefixes this client's error messages.
const protocol = "agui"

// hints is the advice this client's errors end with, per kind.
var hints = map[Kind]string{
	KindUnavailable:  "the remote AG-UI agent could not be reached or failed; retry later or check the endpoint URL",
	KindRejected:     "the remote AG-UI agent refused the request; do not retry it unchanged",
	KindUnauthorized: "check the auth_ref credential configured for this agent",
	KindNotFound:     "there is no AG-UI endpoint at this URL; check endpoint_url",
	KindProtocol:     "the remote sent data this client cannot interpret; report it to the agent's owner",
	KindTimeout:      "the remote was silent for too long or the deadline passed; raise the timeout or retry",
	KindCanceled:     "the run was cancelled by the caller",
	KindInterrupted:  "the stream ended before RUN_FINISHED or RUN_ERROR; the remote run's outcome is unknown",
}

// Sentinel values for errors.Is: errors.Is(err, ErrNotFound) is true when err
// is (or wraps) an [*Error] of the matching [Kind]. They are clienterr's
// sentinels, shared with pkg/clients/a2a.
var (
	ErrUnavailable  = clienterr.ErrUnavailable
	ErrRejected     = clienterr.ErrRejected
	ErrUnauthorized = clienterr.ErrUnauthorized
	ErrNotFound     = clienterr.ErrNotFound
	ErrProtocol     = clienterr.ErrProtocol
	ErrTimeout      = clienterr.ErrTimeout
	ErrCanceled     = clienterr.ErrCanceled
	ErrInterrupted  = clienterr.ErrInterrupted
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
// It is [clienterr.Error]: use errors.Is with the sentinels (ErrNotFound,
// ...) or errors.As to read the fields (Kind; Op, "run" for the request up
// to the response headers or "stream" for reading events; Status, the HTTP
// status or 0; Body, a bounded, redacted, single-line excerpt of a non-2xx
// or non-SSE response body; Err, the cause).
//
// Its message starts "agui: " and ends with a hint. It never contains the
// credential: remote text that echoes it is redacted.
type Error = clienterr.Error

// NewError returns an [*Error] of this client (message prefix "agui: ",
// this client's hints) for op failing with kind because of err (which may
// be nil). Use it to report a failure in the client's terms, e.g. a run
// that a caller found to end without a usable terminal event.
func NewError(kind Kind, op string, err error) *Error {
	return &Error{Protocol: protocol, Hints: hints, Kind: kind, Op: op, Err: err}
}

// statusError is [NewError] for a failure that came with an HTTP response
// of the given status.
func statusError(kind Kind, op string, status int, err error) *Error {
	e := NewError(kind, op, err)
	e.Status = status
	return e
}

// KindOf returns the Kind of err if it is or wraps an [*Error], else 0.
func KindOf(err error) Kind { return clienterr.KindOf(err) }

// redactErr returns err unchanged unless its text contains secret; a
// redacted error keeps the context sentinels and this package's protocol
// causes reachable for errors.Is.
func redactErr(err error, secret string) error {
	return credentials.RedactErr(err, secret, context.Canceled, context.DeadlineExceeded, ErrFrameTooLarge, ErrStreamTooLarge, ErrMalformedEvent)
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
	s = credentials.Redact(s, secret)
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
