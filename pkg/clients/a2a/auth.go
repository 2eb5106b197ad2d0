package a2a

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
)

// ErrInvalidAuthRef is matched (errors.Is) by every [*AuthRefError].
var ErrInvalidAuthRef = errors.New("a2a: invalid auth reference")

// AuthRefError reports an auth reference that could not be resolved. It
// names the reference (which is not secret: "env:NAME" or "file:/path"),
// never the credential.
type AuthRefError struct {
	// Ref is the auth reference as configured.
	Ref string
	// Problem says what is wrong and what to do.
	Problem string
}

func (e *AuthRefError) Error() string {
	return fmt.Sprintf("a2a: auth reference %q: %s", e.Ref, e.Problem)
}

// Is makes errors.Is(err, ErrInvalidAuthRef) true.
func (e *AuthRefError) Is(target error) bool { return target == ErrInvalidAuthRef }

// Credential is a bearer token resolved from a host auth reference. Its
// value never appears in String, GoString, fmt verbs, JSON or slog output;
// the only way to use it is through the client's HTTP transport.
type Credential struct {
	ref   string
	token string
}

// ResolveAuthRef resolves a host auth reference into a [Credential]:
//
//   - "env:NAME": the value of environment variable NAME (must be non-empty);
//   - "file:/path": the contents of the file, surrounding space trimmed
//     (must be non-empty).
//
// An empty ref returns (nil, nil): no credential. Any other scheme is an
// [*AuthRefError].
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
		v, ok := os.LookupEnv(rest)
		if !ok {
			return nil, &AuthRefError{Ref: ref, Problem: fmt.Sprintf("environment variable %s is not set; export it before starting the host", rest)}
		}
		token = strings.TrimSpace(v)
		if token == "" {
			return nil, &AuthRefError{Ref: ref, Problem: fmt.Sprintf("environment variable %s is empty", rest)}
		}
	case "file":
		b, err := os.ReadFile(rest)
		if err != nil {
			// Name the path and the OS reason, never the content.
			var pe *os.PathError
			reason := "cannot be read"
			if errors.As(err, &pe) {
				reason = "cannot be read: " + pe.Err.Error()
			}
			return nil, &AuthRefError{Ref: ref, Problem: "file " + reason}
		}
		token = strings.TrimSpace(string(b))
		if token == "" {
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
	return fmt.Sprintf("Credential(%s, redacted)", c.ref)
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

// Origin returns the RFC 6454 origin "scheme://host:port" of rawURL with the
// scheme and host lowercased and the default port made explicit. It returns
// "" for URLs that are not absolute http(s) URLs.
func Origin(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return originOf(u)
}

func originOf(u *url.URL) string {
	if u == nil {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Host == "" {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

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

// hostTransport adds the bearer credential to requests for the trusted
// origin only, and records response status codes for error classification.
type hostTransport struct {
	base   http.RoundTripper
	origin string // trusted origin; "" means never send the credential
	cred   *Credential
}

func (t *hostTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	secret := t.cred.secret()
	sameOrigin := t.origin != "" && originOf(req.URL) == t.origin
	switch {
	case secret != "" && sameOrigin:
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+secret)
	case secret != "" && strings.Contains(req.Header.Get("Authorization"), secret):
		// Defense in depth: never let our token leave for another origin.
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
	}
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
	if len(via) == 0 {
		return nil
	}
	if len(via) >= 10 {
		return &Error{Kind: KindProtocol, Op: "redirect", Err: errors.New("stopped after 10 redirects")}
	}
	from, to := originOf(via[0].URL), originOf(req.URL)
	if from != to {
		return &Error{Kind: KindProtocol, Op: "redirect",
			Err: fmt.Errorf("refused redirect from %s to another origin %s; point the agent card at the final URL", from, to)}
	}
	return nil
}

// newHTTPClient builds the *http.Client used for one remote agent. The
// client has no overall Timeout (it would cut SSE streams); unary calls get
// a context deadline instead.
func newHTTPClient(base *http.Client, trustedOrigin string, cred *Credential) (*http.Client, *http.Transport) {
	var rt http.RoundTripper
	var owned *http.Transport
	if base != nil && base.Transport != nil {
		rt = base.Transport
	} else {
		owned = http.DefaultTransport.(*http.Transport).Clone()
		rt = owned
	}
	c := &http.Client{
		Transport:     &hostTransport{base: rt, origin: trustedOrigin, cred: cred},
		CheckRedirect: checkRedirect,
	}
	if base != nil {
		c.Jar = base.Jar
	}
	return c, owned
}
