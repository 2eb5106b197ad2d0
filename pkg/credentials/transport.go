package credentials

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Origin returns the RFC 6454 origin "scheme://host:port" of rawURL with the
// scheme and host lowercased and the default port made explicit. It returns
// "" for URLs that are not absolute http(s) URLs.
func Origin(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return OriginOf(u)
}

// OriginOf is [Origin] for a parsed URL; nil gives "".
func OriginOf(u *url.URL) string {
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

// Transport writes the credential (as its [Scheme] says) into requests for
// the trusted origin only, and keeps it off requests to any other origin.
// It never modifies the caller's request (it clones before changing
// headers). An OAuth2 credential's token request failing fails the request
// with a [*TokenError].
type Transport struct {
	// Base sends the requests.
	Base http.RoundTripper
	// Origin is the trusted origin (see [Origin]); "" means the credential
	// is never sent.
	Origin string
	// Cred is the credential; nil means none is sent.
	Cred *Credential
	// StripForeignAuth removes every Authorization header from requests to
	// other origins. When false, only a header that carries Cred's token is
	// removed (other auth the base client adds is left alone).
	StripForeignAuth bool
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	secret := Secret(t.Cred)
	same := t.Origin != "" && OriginOf(req.URL) == t.Origin
	auth := req.Header.Get("Authorization")
	switch {
	case same && secret != "":
		req = req.Clone(req.Context())
		if err := t.Cred.apply(req); err != nil {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, err
		}
	case !same && auth != "" && t.StripForeignAuth:
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
		if h, found := t.Cred.carries(req.Header); found {
			req.Header.Del(h)
		}
	default:
		// Defense in depth: never let the secret leave for another origin.
		if h, found := t.Cred.carries(req.Header); found {
			req = req.Clone(req.Context())
			req.Header.Del(h)
		}
	}
	return t.Base.RoundTrip(req)
}

// NewHTTPClient builds the *http.Client a client uses for one remote
// endpoint: requests go through t (whose Base, when nil, becomes base's
// Transport, or a clone of http.DefaultTransport when base has none), and
// base's cookie jar is kept. It follows at most 10 redirects, and only
// within the origin of the first request, so that neither the credential
// nor the payload goes to another origin; a refused redirect fails the
// request with a [*RedirectError] whose text ends with redirectFix (what
// the user should do instead, e.g. "configure the final endpoint URL").
// base's Timeout and CheckRedirect are not used: the client has no overall
// Timeout (it would cut SSE streams).
//
// owned is the transport it cloned (nil when it used base's); the caller
// releases it with CloseIdleConnections.
func NewHTTPClient(base *http.Client, t Transport, redirectFix string) (c *http.Client, owned *http.Transport) {
	if t.Base == nil {
		if base != nil && base.Transport != nil {
			t.Base = base.Transport
		} else {
			owned = http.DefaultTransport.(*http.Transport).Clone()
			// A client talks to one remote, often over many concurrent
			// streams (delegations): keep as many idle connections for it
			// as in all (100), not net/http's 2 per host, so that the next
			// delegation reuses a connection (and its TLS session) instead
			// of dialling a new one.
			owned.MaxIdleConnsPerHost = owned.MaxIdleConns
			// Each connection keeps its write buffer for its life, often
			// that of a long stream (a delegation), while the requests it
			// writes are small: 1 KiB instead of net/http's 4 KiB.
			owned.WriteBufferSize = 1 << 10
			t.Base = owned
		}
	}
	c = &http.Client{Transport: &t, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		return checkRedirect(req, via, redirectFix)
	}}
	if base != nil {
		c.Jar = base.Jar
	}
	return c, owned
}

// maxRedirects is how many redirects an origin-bound client follows.
const maxRedirects = 10

// RedirectError is a redirect that a client of [NewHTTPClient] refused:
// one to another origin, or one too many. A request that it fails returns
// it wrapped in a *url.Error.
type RedirectError struct{ msg string }

// Error says which redirect was refused and what to do instead.
func (e *RedirectError) Error() string { return e.msg }

// checkRedirect is the redirect policy of an origin-bound client: at most
// maxRedirects redirects, only within the origin of the first request.
func checkRedirect(req *http.Request, via []*http.Request, fix string) error {
	if len(via) == 0 {
		return nil
	}
	if len(via) >= maxRedirects {
		return &RedirectError{fmt.Sprintf("stopped after %d redirects", maxRedirects)}
	}
	if from, to := OriginOf(via[0].URL), OriginOf(req.URL); from != to {
		return &RedirectError{fmt.Sprintf("refused redirect from %s to another origin %s; %s", from, to, fix)}
	}
	return nil
}
