package clienterr

import (
	"errors"
	"fmt"
	"strings"
)

// Kind classifies an [*Error] by what the caller can do about it. The zero
// Kind means "not a client error" (see [KindOf]).
type Kind int

const (
	// KindUnavailable: the remote could not be reached, answered 5xx (or
	// 408, 429), or failed on its side. Retryable.
	KindUnavailable Kind = iota + 1
	// KindRejected: the remote refused the request, or the request was
	// unusable before it was sent. Not retryable unchanged.
	KindRejected
	// KindUnauthorized: the remote refused the credential (401, 403 or the
	// protocol's equivalent). Check the credential.
	KindUnauthorized
	// KindNotFound: the remote does not know what the call addressed (a
	// task, an endpoint).
	KindNotFound
	// KindProtocol: the remote sent something the client cannot interpret,
	// or redirected to another origin.
	KindProtocol
	// KindTimeout: a deadline expired (the caller's or a configured one).
	// A client also wraps context.DeadlineExceeded in the Error.
	KindTimeout
	// KindCanceled: the caller cancelled the call. A client also wraps
	// context.Canceled in the Error.
	KindCanceled
	// KindInterrupted: a stream ended before its terminal event. Retryable
	// where the protocol can resume or re-run.
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

// String returns a short lowercase name of the kind ("not found"), or
// "kind(N)" for a value that is not one of the constants.
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Retryable reports whether a call that failed with this kind may succeed
// if retried unchanged later: unavailable, timeout and interrupted.
func (k Kind) Retryable() bool {
	switch k {
	case KindUnavailable, KindTimeout, KindInterrupted:
		return true
	}
	return false
}

// defaultHints is the advice used when an Error has no Hints entry for its
// kind (e.g. an Error built by a caller without Hints).
var defaultHints = map[Kind]string{
	KindUnavailable:  "the remote agent could not be reached or failed; retry later or check its URL",
	KindRejected:     "the remote agent refused the request; do not retry it unchanged",
	KindUnauthorized: "check the auth_ref credential configured for this agent",
	KindNotFound:     "the remote agent does not know what the call addressed",
	KindProtocol:     "the remote sent data this client cannot interpret; report it to the agent's owner",
	KindTimeout:      "the call exceeded its deadline; raise the timeout or retry",
	KindCanceled:     "the call was cancelled by the caller",
	KindInterrupted:  "the stream ended before a terminal state",
}

type kindSentinel struct{ kind Kind }

func (s *kindSentinel) Error() string { return s.kind.String() }

// Sentinels for errors.Is: errors.Is(err, ErrNotFound) is true when err is
// (or wraps) an [*Error] of kind KindNotFound, whichever client made it.
// They are never returned themselves.
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

// Error is a failed call of a remote-agent client. Match it with errors.Is
// and the sentinels (ErrNotFound, ...), or errors.As to read the fields.
//
// Its message is
//
//	<Protocol>: <Op>: <kind> (HTTP <Status>): <Err>: remote said "<Body>" — <hint>
//
// where each part is left out when its field is empty (or Status is 0).
// The clients never put a credential in any field: remote text that echoes
// it is redacted before it gets here.
type Error struct {
	// Kind says what the caller can do; see the Kind constants.
	Kind Kind
	// Op is the operation that failed, in the client's words ("send",
	// "stream", "run", "fetch card", ...).
	Op string
	// Status is the HTTP status code of the response the failure came
	// with, 0 if none arrived.
	Status int
	// Body is a bounded, redacted, single-line excerpt of the response
	// body of a non-2xx or otherwise unusable response; "" otherwise.
	Body string
	// Err is the underlying cause. It may be nil.
	Err error
	// Protocol names the client ("a2a", "agui") and prefixes the message.
	// "" leaves the prefix out.
	Protocol string
	// Hints maps each kind to advice appended to the message. A client
	// shares one map across its errors: treat it as read-only. A kind
	// missing from it (or a nil map) gets a protocol-neutral default.
	Hints map[Kind]string
}

// Error describes the failure and what to do about it.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Protocol != "" {
		b.WriteString(e.Protocol)
		b.WriteString(": ")
	}
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(e.Kind.String())
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Body != "" {
		fmt.Fprintf(&b, ": remote said %q", e.Body)
	}
	if h := e.hint(); h != "" {
		b.WriteString(" — ")
		b.WriteString(h)
	}
	return b.String()
}

func (e *Error) hint() string {
	if h, ok := e.Hints[e.Kind]; ok {
		return h
	}
	return defaultHints[e.Kind]
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's Kind.
func (e *Error) Is(target error) bool {
	s, ok := target.(*kindSentinel)
	return ok && s.kind == e.Kind
}

// Retryable reports whether retrying the same call later may succeed
// (unavailable, timeout, interrupted); see [Kind.Retryable].
func (e *Error) Retryable() bool { return e.Kind.Retryable() }

// KindOf returns the Kind of err if it is or wraps an [*Error], else 0.
func KindOf(err error) Kind {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Kind
	}
	return 0
}
