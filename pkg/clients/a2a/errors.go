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

// protocol prefixes this client's error messages.
const protocol = "a2a"

// hints is the advice this client's errors end with, per kind.
var hints = map[clienterr.Kind]string{
	clienterr.KindUnavailable:  "the remote agent could not be reached or failed; retry later or check the agent card URL",
	clienterr.KindRejected:     "the remote agent refused the request; do not retry it unchanged",
	clienterr.KindUnauthorized: "check the credential (auth_ref or auth) configured for this agent",
	clienterr.KindNotFound:     "the remote agent does not know this task (wrong id or tenant, or it was evicted)",
	clienterr.KindProtocol:     "the remote agent sent data this client cannot interpret; report it to the agent's owner",
	clienterr.KindTimeout:      "the call exceeded its deadline; raise the timeout or retry",
	clienterr.KindCanceled:     "the call was cancelled by the caller",
	clienterr.KindInterrupted:  "the stream ended before a terminal state; recover with RecoverTask (resubscribe or poll)",
}

// NewError returns an [*clienterr.Error] of this client (message prefix "a2a: ",
// this client's hints) for op failing with kind because of err (which may
// be nil). Use it to report a failure in the client's terms, e.g. a stream
// that a caller found to end without a terminal state.
func NewError(kind clienterr.Kind, op string, err error) *clienterr.Error {
	return &clienterr.Error{Protocol: protocol, Hints: hints, Kind: kind, Op: op, Err: err}
}

// CardError names what is wrong with an Agent Card. It is wrapped in an
// [*clienterr.Error] of kind clienterr.KindProtocol.
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
// *clienterr.Error. status is the HTTP status recorded for the call (0 if none);
// ctx is the caller's context; midStream says whether the failure happened
// after a stream had delivered at least one event.
func classify(ctx context.Context, op string, err error, status int, midStream bool, secret string) *clienterr.Error {
	if err == nil {
		return nil
	}
	var existing *clienterr.Error
	if errors.As(err, &existing) {
		if existing.Op == "" {
			existing.Op = op
		}
		return existing
	}
	if re, ok := errors.AsType[*credentials.RedirectError](err); ok {
		// The origin-bound HTTP client refused a redirect (another origin,
		// or too many): the card or the agent points somewhere else.
		return NewError(clienterr.KindProtocol, "redirect", re)
	}
	err = credentials.RedactErr(err, secret, sdkSentinels...)
	mk := func(k clienterr.Kind) *clienterr.Error {
		e := NewError(k, op, err)
		e.Status = status
		return e
	}

	// The caller's context wins: its cancellation explains whatever the
	// transport reported afterwards.
	if ctx != nil && ctx.Err() != nil {
		e := mk(clienterr.KindCanceled)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			e.Kind = clienterr.KindTimeout
		}
		if !errors.Is(err, ctx.Err()) {
			e.Err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return e
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return mk(clienterr.KindTimeout)
	case errors.Is(err, context.Canceled):
		return mk(clienterr.KindCanceled)
	case errors.Is(err, sdk.ErrTaskNotFound):
		return mk(clienterr.KindNotFound)
	case errors.Is(err, sdk.ErrUnauthenticated), errors.Is(err, sdk.ErrUnauthorized),
		errors.Is(err, credentials.ErrCredentialsRefused): // an OAuth2 token endpoint refused the client
		return mk(clienterr.KindUnauthorized)
	}
	for _, s := range rejectedSentinels {
		if errors.Is(err, s) {
			return mk(clienterr.KindRejected)
		}
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return mk(clienterr.KindUnauthorized)
	case status == http.StatusNotFound:
		// A bare 404 (no A2A error body) means the endpoint does not exist.
		return mk(clienterr.KindUnavailable)
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500:
		return mk(clienterr.KindUnavailable)
	case status >= 400:
		return mk(clienterr.KindRejected)
	}
	if errors.Is(err, sdk.ErrParseError) || errors.Is(err, sdk.ErrInvalidAgentResponse) {
		return mk(clienterr.KindProtocol)
	}
	if isNetworkError(err) {
		if midStream {
			return mk(clienterr.KindInterrupted)
		}
		return mk(clienterr.KindUnavailable)
	}
	if errors.Is(err, sdk.ErrInternalError) || errors.Is(err, sdk.ErrServerError) {
		return mk(clienterr.KindUnavailable)
	}
	// A successful HTTP exchange whose payload failed to decode or validate.
	return mk(clienterr.KindProtocol)
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
