package a2a

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
	"github.com/seed0634/agentadaptor/pkg/credentials"
)

// Kind classifies an [*Error] by what the caller can do about it. It is
// [clienterr.Kind], shared with pkg/clients/agui.
type Kind = clienterr.Kind

// The kinds, as this client uses them.
const (
	// KindUnavailable: the agent could not be reached, answered 5xx, or its
	// card could not be fetched. Retryable.
	KindUnavailable = clienterr.KindUnavailable
	// KindRejected: the agent refused the request (invalid params,
	// unsupported operation, task not cancelable, other 4xx). Not retryable
	// unchanged.
	KindRejected = clienterr.KindRejected
	// KindUnauthorized: the agent answered 401/403 or an A2A
	// unauthenticated/permission-denied error. Check the credential.
	KindUnauthorized = clienterr.KindUnauthorized
	// KindNotFound: the agent does not know the task (or it has no active
	// execution to subscribe to).
	KindNotFound = clienterr.KindNotFound
	// KindProtocol: the agent sent something this client cannot interpret:
	// malformed card or payload, unexpected event, refused redirect.
	KindProtocol = clienterr.KindProtocol
	// KindTimeout: the caller's deadline or the configured request timeout
	// expired. errors.Is(err, context.DeadlineExceeded) also holds.
	KindTimeout = clienterr.KindTimeout
	// KindCanceled: the caller's context was cancelled.
	// errors.Is(err, context.Canceled) also holds.
	KindCanceled = clienterr.KindCanceled
	// KindInterrupted: a stream was cut (network error or clean close)
	// before the task reached a terminal or interrupted state. Recover with
	// [RecoverTask].
	KindInterrupted = clienterr.KindInterrupted
)

// protocol prefixes this client's error messages.
const protocol = "a2a"

// hints is the advice this client's errors end with, per kind.
var hints = map[Kind]string{
	KindUnavailable:  "the remote agent could not be reached or failed; retry later or check the agent card URL",
	KindRejected:     "the remote agent refused the request; do not retry it unchanged",
	KindUnauthorized: "check the credential (auth_ref or auth) configured for this agent",
	KindNotFound:     "the remote agent does not know this task (wrong id or tenant, or it was evicted)",
	KindProtocol:     "the remote agent sent data this client cannot interpret; report it to the agent's owner",
	KindTimeout:      "the call exceeded its deadline; raise the timeout or retry",
	KindCanceled:     "the call was cancelled by the caller",
	KindInterrupted:  "the stream ended before a terminal state; recover with RecoverTask (resubscribe or poll)",
}

// Sentinel values for errors.Is: errors.Is(err, ErrNotFound) is true when err
// is (or wraps) an [*Error] of the matching [Kind]. They are clienterr's
// sentinels, shared with pkg/clients/agui.
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

// Error is the single error type returned by this package (except for
// [*AuthRefError] from credential resolution). It is [clienterr.Error]:
// use errors.Is with the sentinels (ErrNotFound, ...) or errors.As to read
// the fields (Kind; Op, the operation that failed: "fetch card", "parse
// card", "connect", "send", "stream", "subscribe", "get task", "cancel
// task", "recover", ...; Status, the HTTP status or 0; Err, the cause: an
// a2a-go error, a network error, a [*CardError], ...).
//
// Its message starts "a2a: " and ends with a hint. It never contains
// credentials: remote-provided text that echoes the configured token is
// redacted.
type Error = clienterr.Error

// NewError returns an [*Error] of this client (message prefix "a2a: ",
// this client's hints) for op failing with kind because of err (which may
// be nil). Use it to report a failure in the client's terms, e.g. a stream
// that a caller found to end without a terminal state.
func NewError(kind Kind, op string, err error) *Error {
	return &Error{Protocol: protocol, Hints: hints, Kind: kind, Op: op, Err: err}
}

// KindOf returns the Kind of err if it is or wraps an [*Error], else 0.
func KindOf(err error) Kind { return clienterr.KindOf(err) }

// CardError names what is wrong with an Agent Card. It is wrapped in an
// [*Error] of kind KindProtocol.
type CardError struct {
	// Field is the JSON field at fault ("name", "supportedInterfaces", ...)
	// or "" when the document itself is unusable.
	Field string
	// Problem says what is wrong.
	Problem string
}

// Error says which field of the card is wrong and how, e.g. `invalid agent
// card: field "name": missing`.
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
	err = credentials.RedactErr(err, secret, sdkSentinels...)
	mk := func(k Kind) *Error {
		e := NewError(k, op, err)
		e.Status = status
		return e
	}

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
	case errors.Is(err, sdk.ErrUnauthenticated), errors.Is(err, sdk.ErrUnauthorized),
		errors.Is(err, credentials.ErrCredentialsRefused): // an OAuth2 token endpoint refused the client
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
