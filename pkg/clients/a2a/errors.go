package a2a

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/seed0634/agentadaptor/internal/authref"
)

// Kind classifies an [*Error] by what the caller can do about it.
type Kind int

const (
	// KindUnavailable: the agent could not be reached, answered 5xx, or its
	// card could not be fetched. Retryable.
	KindUnavailable Kind = iota + 1
	// KindRejected: the agent refused the request (invalid params,
	// unsupported operation, task not cancelable, other 4xx). Not retryable
	// unchanged.
	KindRejected
	// KindUnauthorized: the agent answered 401/403 or an A2A
	// unauthenticated/permission-denied error. Check the credential.
	KindUnauthorized
	// KindNotFound: the agent does not know the task (or it has no active
	// execution to subscribe to).
	KindNotFound
	// KindProtocol: the agent sent something this client cannot interpret:
	// malformed card or payload, unexpected event, refused redirect.
	KindProtocol
	// KindTimeout: the caller's deadline or the configured request timeout
	// expired. errors.Is(err, context.DeadlineExceeded) also holds.
	KindTimeout
	// KindCanceled: the caller's context was cancelled.
	// errors.Is(err, context.Canceled) also holds.
	KindCanceled
	// KindInterrupted: a stream was cut (network error or clean close)
	// before the task reached a terminal or interrupted state. Recover with
	// [RecoverTask].
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
	KindUnavailable:  "the remote agent could not be reached or failed; retry later or check the agent card URL",
	KindRejected:     "the remote agent refused the request; do not retry it unchanged",
	KindUnauthorized: "check the auth_ref credential configured for this agent",
	KindNotFound:     "the remote agent does not know this task (wrong id or tenant, or it was evicted)",
	KindProtocol:     "the remote agent sent data this client cannot interpret; report it to the agent's owner",
	KindTimeout:      "the call exceeded its deadline; raise the timeout or retry",
	KindCanceled:     "the call was cancelled by the caller",
	KindInterrupted:  "the stream ended before a terminal state; recover with RecoverTask (resubscribe or poll)",
}

// String returns a short lowercase name of the kind.
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

type kindSentinel struct{ kind Kind }

func (s *kindSentinel) Error() string { return "a2a: " + s.kind.String() }

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

// Error is the single error type returned by this package (except for
// [*AuthRefError] from credential resolution). Use errors.Is with the
// sentinels (ErrNotFound, ...) or errors.As to read the fields.
//
// Error strings never contain credentials: remote-provided text that echoes
// the configured token is redacted.
type Error struct {
	// Kind says what the caller can do; see the Kind constants.
	Kind Kind
	// Op is the operation that failed: "fetch card", "parse card", "connect",
	// "send", "stream", "subscribe", "get task", "cancel task", "recover".
	Op string
	// Status is the HTTP status code of the failing response, 0 if unknown.
	Status int
	// Err is the underlying cause (an a2a-go error, a network error, a
	// [*CardError], ...). It may be nil.
	Err error
}

// Error describes the failure and what to do about it.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("a2a: ")
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

// Retryable reports whether retrying the same call later may succeed
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

// CardError names what is wrong with an Agent Card. It is wrapped in an
// [*Error] of kind KindProtocol.
type CardError struct {
	// Field is the JSON field at fault ("name", "supportedInterfaces", ...)
	// or "" when the document itself is unusable.
	Field string
	// Problem says what is wrong.
	Problem string
}

func (e *CardError) Error() string {
	if e.Field == "" {
		return "invalid agent card: " + e.Problem
	}
	return fmt.Sprintf("invalid agent card: field %q: %s", e.Field, e.Problem)
}

// sdkSentinels stay reachable (errors.Is) through a redacted error, so that
// redaction does not change its classification.
var sdkSentinels = []error{
	sdk.ErrTaskNotFound, sdk.ErrUnauthenticated, sdk.ErrUnauthorized, sdk.ErrInvalidParams,
	sdk.ErrInvalidRequest, sdk.ErrUnsupportedOperation, sdk.ErrTaskNotCancelable,
	sdk.ErrMethodNotFound, sdk.ErrParseError, sdk.ErrInvalidAgentResponse,
	sdk.ErrInternalError, sdk.ErrServerError, context.Canceled, context.DeadlineExceeded,
}

var rejectedSentinels = []error{
	sdk.ErrInvalidParams, sdk.ErrInvalidRequest, sdk.ErrUnsupportedOperation,
	sdk.ErrTaskNotCancelable, sdk.ErrPushNotificationNotSupported, sdk.ErrUnsupportedContentType,
	sdk.ErrExtensionSupportRequired, sdk.ErrVersionNotSupported, sdk.ErrMethodNotFound,
	sdk.ErrExtendedCardNotConfigured,
}

// classify maps any error from a2a-go, net/http or this package onto an
// *Error. status is the HTTP status recorded for the call (0 if none);
// ctx is the caller's context; midStream says whether the failure happened
// after a stream had delivered at least one event.
func classify(ctx context.Context, op string, err error, status int, midStream bool, secret string) *Error {
	if err == nil {
		return nil
	}
	var existing *Error
	if errors.As(err, &existing) {
		if existing.Op == "" {
			existing.Op = op
		}
		return existing
	}
	err = authref.RedactErr(err, secret, sdkSentinels...)
	mk := func(k Kind) *Error { return &Error{Kind: k, Op: op, Status: status, Err: err} }

	// The caller's context wins: its cancellation explains whatever the
	// transport reported afterwards.
	if ctx != nil && ctx.Err() != nil {
		e := mk(KindCanceled)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			e.Kind = KindTimeout
		}
		if !errors.Is(err, ctx.Err()) {
			e.Err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return e
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return mk(KindTimeout)
	case errors.Is(err, context.Canceled):
		return mk(KindCanceled)
	case errors.Is(err, sdk.ErrTaskNotFound):
		return mk(KindNotFound)
	case errors.Is(err, sdk.ErrUnauthenticated), errors.Is(err, sdk.ErrUnauthorized):
		return mk(KindUnauthorized)
	}
	for _, s := range rejectedSentinels {
		if errors.Is(err, s) {
			return mk(KindRejected)
		}
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return mk(KindUnauthorized)
	case status == http.StatusNotFound:
		// A bare 404 (no A2A error body) means the endpoint does not exist.
		return mk(KindUnavailable)
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500:
		return mk(KindUnavailable)
	case status >= 400:
		return mk(KindRejected)
	}
	if errors.Is(err, sdk.ErrParseError) || errors.Is(err, sdk.ErrInvalidAgentResponse) {
		return mk(KindProtocol)
	}
	if isNetworkError(err) {
		if midStream {
			return mk(KindInterrupted)
		}
		return mk(KindUnavailable)
	}
	if errors.Is(err, sdk.ErrInternalError) || errors.Is(err, sdk.ErrServerError) {
		return mk(KindUnavailable)
	}
	// A successful HTTP exchange whose payload failed to decode or validate.
	return mk(KindProtocol)
}

func isNetworkError(err error) bool {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var ue *url.Error
	return errors.As(err, &ue)
}
