package agui

import (
	"errors"
	"net/http"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

// The credential handling is shared with pkg/clients/a2a through
// pkg/credentials (same reference rules, same Credential type); this file
// re-exports it under the AG-UI client's names.

// ErrInvalidAuthRef is matched (errors.Is) by every [*AuthRefError] this
// package returns.
var ErrInvalidAuthRef = errors.New("agui: invalid auth reference")

var authScope = credentials.NewScope("agui", ErrInvalidAuthRef)

// AuthRefError reports an auth reference that could not be resolved. It
// names the reference (which is not secret: "env:NAME" or "file:/path"),
// never the credential. Its fields are Ref (the reference as configured)
// and Problem (what is wrong and what to do).
type AuthRefError = credentials.Error

// Credential is a bearer token resolved from a host auth reference. Its
// value never appears in String, GoString, fmt verbs, JSON or slog output;
// it is only ever written into the Authorization header of requests to the
// endpoint's own origin. It is the same type as pkg/clients/a2a's
// Credential.
type Credential = credentials.Credential

// ResolveAuthRef resolves a host auth reference into a [Credential], with
// the same rules as the A2A client's (pkg/clients/a2a.ResolveAuthRef), so
// one host config works for both protocols:
//
//   - "env:NAME": the value of environment variable NAME (non-empty);
//   - "file:/path": the file's contents, surrounding space trimmed
//     (non-empty).
//
// An empty ref returns (nil, nil): no credential. Anything else, and a
// credential holding a line break, is an [*AuthRefError].
func ResolveAuthRef(ref string) (*Credential, error) { return authScope.Resolve(ref) }

// NewCredential wraps a token obtained elsewhere (tests, secret managers).
// ref is a non-secret label used in messages.
func NewCredential(ref, token string) *Credential { return credentials.NewCredential(ref, token) }

// Origin returns the origin "scheme://host:port" of an absolute http(s) URL,
// scheme and host lowercased and the default port explicit; "" otherwise.
func Origin(rawURL string) string { return credentials.Origin(rawURL) }

// newHTTPClient builds the client's *http.Client: the bearer credential
// goes to the endpoint's origin only, every Authorization header bound
// elsewhere is stripped, and redirects stay within the origin of the first
// request (a refusal is an [*credentials.RedirectError], which the run reports
// as KindProtocol).
func newHTTPClient(base *http.Client, origin string, cred *Credential) (*http.Client, *http.Transport) {
	return credentials.NewHTTPClient(base, credentials.Transport{Origin: origin, Cred: cred, StripForeignAuth: true},
		func(req *http.Request, via []*http.Request) error {
			return credentials.CheckRedirect(req, via, "configure the final endpoint URL")
		})
}
