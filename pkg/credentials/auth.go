package credentials

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Scheme is how a credential is presented to a remote agent.
type Scheme string

// The schemes a host can authenticate with (docs/design.md#secrets).
const (
	// SchemeBearer sends "Authorization: Bearer <token>".
	SchemeBearer Scheme = "bearer"
	// SchemeAPIKey sends the key in a request header ("<Header>: <key>").
	SchemeAPIKey Scheme = "api_key"
	// SchemeOAuth2 fetches an access token from a token endpoint with the
	// OAuth2 client credentials grant and sends it as a bearer token.
	SchemeOAuth2 Scheme = "oauth2"
)

// Auth is a host-configured way to authenticate to a remote agent. Every
// secret in it is an auth reference ("env:NAME" or "file:/path"), never the
// secret itself; nothing in it is secret, so it may be logged.
type Auth struct {
	// Scheme is SchemeBearer, SchemeAPIKey or SchemeOAuth2.
	Scheme Scheme
	// TokenRef refers to the bearer token (SchemeBearer) or the API key
	// (SchemeAPIKey).
	TokenRef string
	// Header is the request header carrying the API key (SchemeAPIKey);
	// "" takes it from the agent card's apiKey security scheme.
	Header string
	// TokenURL is the OAuth2 token endpoint (SchemeOAuth2): an https URL, or
	// http on a loopback host; "" takes it from the agent card's oauth2
	// clientCredentials flow.
	TokenURL string
	// ClientID is the OAuth2 client id (not a secret, RFC 6749 §2.2).
	ClientID string
	// ClientSecretRef refers to the OAuth2 client secret.
	ClientSecretRef string
	// Scopes are the OAuth2 scopes to ask for; nil takes those the agent
	// card's security requirements name for its oauth2 scheme.
	Scopes []string
}

var headerName = lazyRegexp(`^[A-Za-z0-9!#$%&'*+.^_` + "`" + `|~-]{1,64}$`)

// forbiddenHeaders are never used for an API key: they carry other meaning
// the transport or the protocol relies on.
var forbiddenHeaders = []string{"host", "content-type", "content-length", "cookie", "a2a-version", "connection", "transfer-encoding"}

// Validate checks a's shape without resolving anything: a known scheme,
// the fields that scheme needs (and no others), auth references where
// secrets go, a valid header name and token URL. The error names the field
// (auth.token_ref, auth.header, ...) and never holds a secret.
func (a Auth) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("auth.%s: %s", field, fmt.Sprintf(format, args...))
	}
	refField := func(field, ref string) error {
		if ref == "" {
			return bad(field, "is required for scheme %s", a.Scheme)
		}
		if !IsRef(ref) {
			return bad(field, `must be "env:NAME" or "file:/path" (the secret itself never goes in the configuration)`)
		}
		return nil
	}
	switch a.Scheme {
	case SchemeBearer, SchemeAPIKey:
		if err := refField("token_ref", a.TokenRef); err != nil {
			return err
		}
		if a.TokenURL != "" || a.ClientID != "" || a.ClientSecretRef != "" || len(a.Scopes) > 0 {
			return bad("scheme", "%s takes token_ref (and, for api_key, header) only", a.Scheme)
		}
		if a.Scheme == SchemeBearer && a.Header != "" {
			return bad("header", "is for scheme api_key only")
		}
		if a.Header != "" {
			if err := checkHeader(a.Header); err != nil {
				return bad("header", "%v", err)
			}
		}
	case SchemeOAuth2:
		if a.TokenRef != "" || a.Header != "" {
			return bad("scheme", "oauth2 takes client_id, client_secret_ref, token_url and scopes only")
		}
		if strings.TrimSpace(a.ClientID) == "" || len(a.ClientID) > 256 {
			return bad("client_id", "is required for scheme oauth2 (at most 256 bytes)")
		}
		if err := refField("client_secret_ref", a.ClientSecretRef); err != nil {
			return err
		}
		if a.TokenURL != "" {
			if err := CheckTokenURL(a.TokenURL); err != nil {
				return bad("token_url", "%v", err)
			}
		}
		for _, s := range a.Scopes {
			if s == "" || strings.ContainsAny(s, " \t\r\n") {
				return bad("scopes", "%q is not a scope", s)
			}
		}
	case "":
		return bad("scheme", "is required (bearer, api_key or oauth2)")
	default:
		return bad("scheme", "%q is not bearer, api_key or oauth2", a.Scheme)
	}
	return nil
}

func checkHeader(h string) error {
	if !headerName().MatchString(h) {
		return fmt.Errorf("%q is not an HTTP header name", h)
	}
	for _, f := range forbiddenHeaders {
		if strings.EqualFold(h, f) {
			return fmt.Errorf("%q cannot carry an API key", h)
		}
	}
	return nil
}

// CheckTokenURL accepts an OAuth2 token endpoint: an absolute https URL
// without credentials, or http on a loopback host (the client secret
// travels to it).
func CheckTokenURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("must be an absolute URL")
	}
	if u.User != nil {
		return errors.New("must not carry credentials")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
		return errors.New("must be https (http only on a loopback host): the client secret travels to it")
	}
	return errors.New("must be an https URL")
}

// Complete reports whether a needs nothing from the agent card: an
// api_key with its header, an oauth2 with its token URL, or a bearer token.
func (a Auth) Complete() bool {
	switch a.Scheme {
	case SchemeAPIKey:
		return a.Header != ""
	case SchemeOAuth2:
		return a.TokenURL != ""
	}
	return true
}

// Refs returns the auth references a names (to resolve their secrets for
// redaction).
func (a Auth) Refs() []string {
	var out []string
	for _, r := range []string{a.TokenRef, a.ClientSecretRef} {
		if r != "" {
			out = append(out, r)
		}
	}
	return out
}

// tokenTimeout bounds one OAuth2 token request.
const tokenTimeout = 30 * time.Second

// ResolveOptions tune [ResolveAuth].
type ResolveOptions struct {
	// HTTPClient supplies the base transport of the OAuth2 token client
	// (nil: a clone of http.DefaultTransport, released with idle
	// connections on Credential.Close).
	HTTPClient *http.Client
	// Secrets, if set, learns every secret the credential uses: the token,
	// key or client secret, and each access token fetched, so that the
	// host scrubs them from everything it shows.
	Secrets *Secrets
}

// ResolveAuth resolves a complete Auth (see [Auth.Complete]; fill Header or
// TokenURL first) into a [Credential]. Its secrets are read now; an OAuth2
// access token is fetched when the first request needs it and renewed
// before it expires (a failed token request fails that request with a
// [*TokenError]). Errors are a [*RefError] (a reference that does not
// resolve) or name the field; they never hold a secret. Call
// [Credential.Close] when done with an OAuth2 credential.
func ResolveAuth(a Auth, opts ResolveOptions) (*Credential, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if !a.Complete() {
		return nil, fmt.Errorf("auth: scheme %s needs %s (configured, or from the agent card)", a.Scheme, map[Scheme]string{SchemeAPIKey: "header", SchemeOAuth2: "token_url"}[a.Scheme])
	}
	switch a.Scheme {
	case SchemeBearer, SchemeAPIKey:
		c, err := Resolve(a.TokenRef)
		if err != nil {
			return nil, err
		}
		c.scheme, c.header = a.Scheme, a.Header
		opts.Secrets.Add(c.token)
		return c, nil
	}
	sec, err := Resolve(a.ClientSecretRef)
	if err != nil {
		return nil, err
	}
	if err := CheckTokenURL(a.TokenURL); err != nil {
		return nil, fmt.Errorf("auth.token_url: %w", err)
	}
	opts.Secrets.Add(sec.token)
	origin := Origin(a.TokenURL)
	hc, owned := NewHTTPClient(opts.HTTPClient, Transport{Origin: origin}, "configure the token endpoint's final URL")
	hc.Timeout = tokenTimeout // a token request is unary: an overall bound is right here
	cfg := &clientcredentials.Config{ClientID: a.ClientID, ClientSecret: sec.token, TokenURL: a.TokenURL, Scopes: a.Scopes}
	c := &Credential{ref: a.ClientSecretRef, token: sec.token, scheme: SchemeOAuth2, origin: origin, owned: owned}
	c.source = &observedSource{src: cfg.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, hc)), cred: c, secrets: opts.Secrets}
	return c, nil
}

// ErrCredentialsRefused is matched (errors.Is) by a [*TokenError] whose token
// endpoint refused the client credentials (an HTTP 4xx answer).
var ErrCredentialsRefused = errors.New("the OAuth2 token endpoint refused the client credentials")

// TokenError is a failed OAuth2 token request. Its text names the token
// endpoint's origin, the HTTP status and the OAuth2 error code, never the
// response body (which may echo the request).
type TokenError struct {
	// Origin is the token endpoint's origin.
	Origin string
	// Status is the HTTP status of the answer (0: no answer).
	Status int
	// Code is the OAuth2 "error" code of the answer, sanitised.
	Code string
	// Err is the transport error when there was no answer.
	Err error
}

func (e *TokenError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("oauth2 token request to %s failed: %v", e.Origin, e.Err)
	}
	s := fmt.Sprintf("oauth2 token endpoint %s answered HTTP %d", e.Origin, e.Status)
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	return s
}

// Is matches [ErrCredentialsRefused] for a 4xx answer.
func (e *TokenError) Is(target error) bool {
	return target == ErrCredentialsRefused && e.Status >= 400 && e.Status < 500
}

// Unwrap returns the transport error (nil when the endpoint answered).
func (e *TokenError) Unwrap() error { return e.Err }

var oauthCode = lazyRegexp(`^[A-Za-z0-9_.-]{1,64}$`)

// observedSource fetches access tokens, records them as secrets and turns
// failures into [*TokenError]s.
type observedSource struct {
	src     oauth2.TokenSource
	cred    *Credential
	secrets *Secrets
}

func (o *observedSource) Token() (*oauth2.Token, error) {
	tok, err := o.src.Token()
	if err != nil {
		te := &TokenError{Origin: o.cred.origin}
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil {
			te.Status = re.Response.StatusCode
			if oauthCode().MatchString(re.ErrorCode) {
				te.Code = re.ErrorCode
			}
		} else {
			te.Err = RedactErr(err, o.cred.token, context.DeadlineExceeded, context.Canceled)
		}
		return nil, te
	}
	if tok.AccessToken == "" || strings.ContainsAny(tok.AccessToken, "\r\n") {
		return nil, &TokenError{Origin: o.cred.origin, Status: http.StatusOK, Code: "unusable_access_token"}
	}
	o.secrets.Add(tok.AccessToken)
	o.cred.mu.Lock()
	o.cred.access = tok.AccessToken
	o.cred.mu.Unlock()
	return tok, nil
}

// Scheme returns how c is presented: bearer for a plain token.
func (c *Credential) Scheme() Scheme {
	if c == nil || c.scheme == "" {
		return SchemeBearer
	}
	return c.scheme
}

// Close releases the idle connections of c's own token client, if any.
func (c *Credential) Close() {
	if c != nil && c.owned != nil {
		c.owned.CloseIdleConnections()
	}
}

// apply writes c into req (a clone the caller owns).
func (c *Credential) apply(req *http.Request) error {
	switch c.Scheme() {
	case SchemeAPIKey:
		req.Header.Set(c.header, c.token)
	case SchemeOAuth2:
		tok, err := c.source.Token()
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	default:
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return nil
}

// carries reports whether h holds c's secret where c would put it (so that
// it is stripped from requests to other origins).
func (c *Credential) carries(h http.Header) (header string, found bool) {
	if c == nil {
		return "", false
	}
	secrets := []string{c.token}
	header = "Authorization"
	switch c.Scheme() {
	case SchemeAPIKey:
		header = c.header
	case SchemeOAuth2:
		c.mu.Lock()
		secrets = append(secrets, c.access)
		c.mu.Unlock()
	}
	v := h.Get(header)
	for _, s := range secrets {
		if s != "" && strings.Contains(v, s) {
			return header, true
		}
	}
	return header, false
}

// lazyRegexp compiles expr on first use: a process that never uses a
// pattern (the scripted agent re-executing this binary, a CLI command)
// does not pay for it at start.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
