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

// protocol prefixes this client's error messages.
const protocol = "agui"

// hints is the advice this client's errors end with, per kind.
var hints = map[clienterr.Kind]string{
	clienterr.KindUnavailable:  "the remote AG-UI agent could not be reached or failed; retry later or check the endpoint URL",
	clienterr.KindRejected:     "the remote AG-UI agent refused the request; do not retry it unchanged",
	clienterr.KindUnauthorized: "check the auth_ref credential configured for this agent",
	clienterr.KindNotFound:     "there is no AG-UI endpoint at this URL; check endpoint_url",
	clienterr.KindProtocol:     "the remote sent data this client cannot interpret; report it to the agent's owner",
	clienterr.KindTimeout:      "the remote was silent for too long or the deadline passed; raise the timeout or retry",
	clienterr.KindCanceled:     "the run was cancelled by the caller",
	clienterr.KindInterrupted:  "the stream ended before RUN_FINISHED or RUN_ERROR; the remote run's outcome is unknown",
}

// Causes wrapped (Err) by an [*clienterr.Error] of kind clienterr.KindProtocol; match them with
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

// NewError returns an [*clienterr.Error] of this client (message prefix "agui: ",
// this client's hints) for op failing with kind because of err (which may
// be nil). Use it to report a failure in the client's terms, e.g. a run
// that a caller found to end without a usable terminal event.
func NewError(kind clienterr.Kind, op string, err error) *clienterr.Error {
	return &clienterr.Error{Protocol: protocol, Hints: hints, Kind: kind, Op: op, Err: err}
}

// statusError is [NewError] for a failure that came with an HTTP response
// of the given status.
func statusError(kind clienterr.Kind, op string, status int, err error) *clienterr.Error {
	e := NewError(kind, op, err)
	e.Status = status
	return e
}

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
