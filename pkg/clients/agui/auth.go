package agui

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// ErrInvalidAuthRef is matched (errors.Is) by every [*AuthRefError].
var ErrInvalidAuthRef = errors.New("agui: invalid auth reference")

// AuthRefError reports an auth reference that could not be resolved. It
// names the reference (which is not secret: "env:NAME" or "file:/path"),
// never the credential.
type AuthRefError struct {
	// Ref is the auth reference as configured.
	Ref string
	// Problem says what is wrong and what to do.
	Problem string
}

// Error names the reference and the problem, never the credential.
func (e *AuthRefError) Error() string {
	return fmt.Sprintf("agui: auth reference %q: %s", e.Ref, e.Problem)
}

// Is makes errors.Is(err, ErrInvalidAuthRef) true.
func (e *AuthRefError) Is(target error) bool { return target == ErrInvalidAuthRef }

// Credential is a bearer token resolved from a host auth reference. Its
// value never appears in String, GoString, fmt verbs, JSON or slog output;
// it is only ever written into the Authorization header of requests to the
// endpoint's own origin.
type Credential struct {
	ref   string
	token string
}

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
func ResolveAuthRef(ref string) (*Credential, error) {
	if ref == "" {
		return nil, nil
	}
	scheme, rest, ok := strings.Cut(ref, ":")
	if !ok || rest == "" {
		return nil, &AuthRefError{Ref: ref, Problem: `expected "env:NAME" or "file:/path"`}
	}
	var token string
	switch scheme {
	case "env":
		v, set := os.LookupEnv(rest)
		if !set {
			return nil, &AuthRefError{Ref: ref, Problem: "environment variable " + rest + " is not set; export it before starting the host"}
		}
		if token = strings.TrimSpace(v); token == "" {
			return nil, &AuthRefError{Ref: ref, Problem: "environment variable " + rest + " is empty"}
		}
	case "file":
		b, err := os.ReadFile(rest)
		if err != nil {
			reason := "cannot be read"
			var pe *os.PathError
			if errors.As(err, &pe) {
				reason += ": " + pe.Err.Error() // the OS reason, never content
			}
			return nil, &AuthRefError{Ref: ref, Problem: "file " + reason}
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return nil, &AuthRefError{Ref: ref, Problem: "file is empty"}
		}
	default:
		return nil, &AuthRefError{Ref: ref, Problem: fmt.Sprintf("unknown scheme %q; use env:NAME or file:/path", scheme)}
	}
	if strings.ContainsAny(token, "\r\n") {
		return nil, &AuthRefError{Ref: ref, Problem: "credential contains a line break; store a single-line token"}
	}
	return &Credential{ref: ref, token: token}, nil
}

// NewCredential wraps a token obtained elsewhere (tests, secret managers).
// ref is a non-secret label used in messages.
func NewCredential(ref, token string) *Credential {
	return &Credential{ref: ref, token: strings.TrimSpace(token)}
}

// Ref returns the non-secret auth reference the credential came from.
func (c *Credential) Ref() string {
	if c == nil {
		return ""
	}
	return c.ref
}

// String never reveals the token.
func (c *Credential) String() string {
	if c == nil {
		return "Credential(none)"
	}
	return "Credential(" + c.ref + ", redacted)"
}

// GoString never reveals the token.
func (c *Credential) GoString() string { return c.String() }

// Format makes every fmt verb (including %#v and %+v) print String.
func (c *Credential) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// MarshalJSON never reveals the token.
func (c *Credential) MarshalJSON() ([]byte, error) { return []byte(`"[REDACTED]"`), nil }

// LogValue never reveals the token.
func (c *Credential) LogValue() slog.Value { return slog.StringValue(c.String()) }

func (c *Credential) secret() string {
	if c == nil {
		return ""
	}
	return c.token
}

// Origin returns the origin "scheme://host:port" of an absolute http(s) URL,
// scheme and host lowercased and the default port explicit; "" otherwise.
func Origin(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return originOf(u)
}

func originOf(u *url.URL) string {
	if u == nil || u.Host == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
	default:
		return ""
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// authTransport writes the bearer credential into requests for the trusted
// origin only and strips any Authorization header from requests elsewhere.
type authTransport struct {
	base   http.RoundTripper
	origin string
	cred   *Credential
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	same := t.origin != "" && originOf(req.URL) == t.origin
	secret := t.cred.secret()
	switch {
	case same && secret != "":
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+secret)
	case !same && req.Header.Get("Authorization") != "":
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
	}
	return t.base.RoundTrip(req)
}

// checkRedirect follows redirects within the endpoint's origin only, so
// neither the credential nor the run input ever goes to another origin.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return &redirectError{"stopped after 10 redirects"}
	}
	if len(via) > 0 {
		if from, to := originOf(via[0].URL), originOf(req.URL); from != to {
			return &redirectError{fmt.Sprintf("refused redirect from %s to another origin %s; configure the final endpoint URL", from, to)}
		}
	}
	return nil
}

// redirectError makes a refused redirect a KindProtocol error.
type redirectError struct{ msg string }

func (e *redirectError) Error() string { return e.msg }
