package a2a

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

// The credential handling is shared with pkg/clients/agui through
// pkg/credentials; this file re-exports it under the A2A client's names.

// ErrInvalidAuthRef is matched (errors.Is) by every [*AuthRefError] this
// package returns.
var ErrInvalidAuthRef = errors.New("a2a: invalid auth reference")

var authScope = credentials.NewScope("a2a", ErrInvalidAuthRef)

// AuthRefError reports an auth reference that could not be resolved. It
// names the reference (which is not secret: "env:NAME" or "file:/path"),
// never the credential. Its fields are Ref (the reference as configured)
// and Problem (what is wrong and what to do).
type AuthRefError = credentials.Error

// Credential is a bearer token resolved from a host auth reference. Its
// value never appears in String, GoString, fmt verbs, JSON or slog output;
// the only way to use it is through the client's HTTP transport. It is the
// same type as pkg/clients/agui's Credential.
type Credential = credentials.Credential

// ResolveAuthRef resolves a host auth reference into a [Credential]:
//
//   - "env:NAME": the value of environment variable NAME (must be non-empty);
//   - "file:/path": the contents of the file, surrounding space trimmed
//     (must be non-empty).
//
// An empty ref returns (nil, nil): no credential. Any other scheme is an
// [*AuthRefError].
func ResolveAuthRef(ref string) (*Credential, error) { return authScope.Resolve(ref) }

// NewCredential wraps a token obtained elsewhere (tests, secret managers).
// ref is a non-secret label used in messages.
func NewCredential(ref, token string) *Credential { return credentials.NewCredential(ref, token) }

// Origin returns the RFC 6454 origin "scheme://host:port" of rawURL with the
// scheme and host lowercased and the default port made explicit. It returns
// "" for URLs that are not absolute http(s) URLs.
func Origin(rawURL string) string { return credentials.Origin(rawURL) }

// callRecord carries per-call transport facts from the RoundTripper back to
// the code that classifies the call's error.
type callRecord struct{ status atomic.Int32 }

type callRecordKey struct{}

func withCallRecord(ctx context.Context) (context.Context, *callRecord) {
	rec := &callRecord{}
	return context.WithValue(ctx, callRecordKey{}, rec), rec
}

func (r *callRecord) Status() int {
	if r == nil {
		return 0
	}
	return int(r.status.Load())
}

// statusRecorder records response status codes in the request's
// [callRecord] for error classification.
type statusRecorder struct{ base http.RoundTripper }

func (t statusRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if resp != nil {
		if rec, ok := req.Context().Value(callRecordKey{}).(*callRecord); ok {
			rec.status.Store(int32(resp.StatusCode))
		}
	}
	return resp, err
}

// checkRedirect refuses redirects that leave the origin of the original
// request (so neither the credential nor the payload follows them).
func checkRedirect(req *http.Request, via []*http.Request) error {
	if err := credentials.CheckRedirect(req, via, "point the agent card at the final URL"); err != nil {
		return NewError(KindProtocol, "redirect", err)
	}
	return nil
}

// newHTTPClient builds the *http.Client used for one remote agent: the
// bearer credential goes to the trusted origin only (a token-bearing
// Authorization header bound elsewhere is stripped), and response status
// codes are recorded. The client has no overall Timeout (it would cut SSE
// streams); unary calls get a context deadline instead.
func newHTTPClient(base *http.Client, trustedOrigin string, cred *Credential) (*http.Client, *http.Transport) {
	c, owned := credentials.NewHTTPClient(base, credentials.Transport{Origin: trustedOrigin, Cred: cred}, checkRedirect)
	c.Transport = statusRecorder{c.Transport}
	return c, owned
}
