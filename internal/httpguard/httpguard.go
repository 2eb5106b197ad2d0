// Package httpguard admits requests to the HTTP servers the host runs
// (`agentadaptor serve`, `agentadaptor a2a serve`): anything a browser can
// reach is an attack surface, because the local agent behind it can edit
// files and run commands (docs/design.md#secrets).
//
// A [Guard] checks, in order:
//
//  1. the Host header against an allowlist (loopback names, the listen
//     address's host, configured names): DNS rebinding gets 403;
//  2. the Origin header (same origin, or a trusted origin) and, for
//     state-changing methods, Go's http.CrossOriginProtection (Sec-Fetch-Site):
//     cross-site requests, text/plain form posts included, get 403;
//  3. authentication when tokens or an authenticator are configured:
//     "Authorization: Bearer" with a configured token, the session cookie
//     set by a one-time login link or the sign-in page, else
//     Config.Authenticate; 401 with WWW-Authenticate otherwise (public
//     paths such as /healthz excepted), as an HTML sign-in page when a
//     browser navigates and tokens are configured; the principal is put in
//     the request's context ([Principal]);
//  4. that a request body is JSON (415 otherwise; the sign-in form's
//     urlencoded POST to the login path excepted).
//
// With tokens, [Guard.Handler] also serves the browser's session routes
// (session.go): the login path (GET: a one-time link or the sign-in page;
// POST: a token exchanged for the session cookie), POST on the logout path
// (revokes the cookie's session) and GET on the session path (who the
// request is). Sessions end after Config.SessionTTL.
//
// It owns admission and sessions only: it must not know routes beyond the
// public and session paths, must not log or echo tokens, and reads no body
// but the sign-in form's (bounded).
//
//	g, err := httpguard.New(httpguard.Config{Addr: "127.0.0.1:8080",
//		Tokens: map[string]string{"alice": secret}, Public: []string{"/healthz"}})
//	if err != nil {
//		return err
//	}
//	srv := &http.Server{Handler: g.Handler(mux), ReadTimeout: 30 * time.Second}
//	fmt.Println("sign in:", g.LoginURL("http://127.0.0.1:8080", "alice"))
package httpguard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config configures a Guard.
type Config struct {
	// Addr is the listen address; its host is an accepted Host name (an
	// unspecified address such as 0.0.0.0 adds nothing: name the hosts in
	// AllowedHosts).
	Addr string
	// AllowedHosts are Host names (without port) accepted besides the
	// loopback names and Addr's host, e.g. the name a reverse proxy uses.
	AllowedHosts []string
	// TrustedOrigins are browser origins ("https://app.example") allowed to
	// call cross-origin (CORS; the routes answer the preflights).
	TrustedOrigins []string
	// Tokens maps principal names to their bearer tokens (the secrets, as
	// resolved from auth references). Empty: no authentication, every
	// request is the anonymous principal "".
	Tokens map[string]string
	// Authenticate, when set, identifies a request that carries neither a
	// configured token nor a session cookie: it returns the principal (not
	// empty), or an error, which the guard answers with 401 and never shows.
	// With it, every request but the public paths is authenticated, even
	// without Tokens.
	Authenticate func(r *http.Request) (principal string, err error)
	// Public are paths served without authentication (exact match), e.g.
	// "/healthz" and an agent card.
	Public []string
	// LoginPath is where one-time login links point and where the sign-in
	// page posts its token (default "/login").
	LoginPath string
	// LogoutPath revokes the session of the request's cookie on POST
	// (default "/logout").
	LogoutPath string
	// SessionPath answers GET with who the request is, as JSON (default
	// "/session"; served with and without tokens).
	SessionPath string
	// SessionTTL bounds a login session (default 12h): past it the cookie
	// is refused, however the session began.
	SessionTTL time.Duration
	// Now is the clock of login codes and sessions (default time.Now).
	Now func() time.Time
	// Realm names the WWW-Authenticate realm (default "agentadaptor").
	Realm string
}

// CookieName is the session cookie set by a login link.
const CookieName = "agentadaptor_session"

// Guard admits requests; see the package documentation. Safe for
// concurrent use.
type Guard struct {
	cfg     Config
	hosts   map[string]bool
	origins map[string]bool
	tokens  map[[32]byte]string // sha256(token) -> principal
	csrf    *http.CrossOriginProtection

	mu       sync.Mutex
	codes    map[string]pending // one-time login codes
	sessions map[[32]byte]session
}

type pending struct {
	principal string
	expires   time.Time
}

type session struct {
	principal string
	expires   time.Time
}

// DefaultSessionTTL is Config.SessionTTL when it is left 0.
const DefaultSessionTTL = 12 * time.Hour

// Bounds of the login state kept in memory.
const (
	codeTTL     = 15 * time.Minute
	maxCodes    = 1024
	maxSessions = 4096
	// maxSessionsPerPrincipal: a principal signing in again and again
	// replaces its own oldest session, never crowds out the others'.
	maxSessionsPerPrincipal = 64
)

// New validates cfg and returns its Guard.
func New(cfg Config) (*Guard, error) {
	if cfg.LoginPath == "" {
		cfg.LoginPath = "/login"
	}
	if cfg.LogoutPath == "" {
		cfg.LogoutPath = "/logout"
	}
	if cfg.SessionPath == "" {
		cfg.SessionPath = "/session"
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Realm == "" {
		cfg.Realm = "agentadaptor"
	}
	g := &Guard{cfg: cfg, hosts: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true},
		origins: map[string]bool{}, tokens: map[[32]byte]string{}, csrf: http.NewCrossOriginProtection(),
		codes: map[string]pending{}, sessions: map[[32]byte]session{}}
	if cfg.Addr != "" {
		host, _, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("httpguard: addr %q: %w", cfg.Addr, err)
		}
		if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
			g.hosts[strings.ToLower(host)] = true
		}
	}
	for _, h := range cfg.AllowedHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" || strings.ContainsAny(h, "/:@ ") && net.ParseIP(h) == nil {
			return nil, fmt.Errorf("httpguard: allowed host %q must be a host name or IP address without port or scheme", h)
		}
		g.hosts[strings.Trim(h, "[]")] = true
	}
	for _, o := range cfg.TrustedOrigins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("httpguard: trusted origin %q must be scheme://host[:port]", o)
		}
		origin := u.Scheme + "://" + strings.ToLower(u.Host)
		g.origins[origin] = true
		if err := g.csrf.AddTrustedOrigin(origin); err != nil {
			return nil, fmt.Errorf("httpguard: trusted origin %q: %w", o, err)
		}
	}
	for name, tok := range cfg.Tokens {
		if name == "" || len(tok) < 16 {
			return nil, fmt.Errorf("httpguard: the token of principal %q must be at least 16 characters", name)
		}
		h := sha256.Sum256([]byte(tok))
		if other, dup := g.tokens[h]; dup {
			return nil, fmt.Errorf("httpguard: principals %q and %q have the same token", other, name)
		}
		g.tokens[h] = name
	}
	return g, nil
}

// AuthRequired reports whether requests are authenticated: tokens or an
// Authenticate function are configured.
func (g *Guard) AuthRequired() bool { return len(g.tokens) > 0 || g.cfg.Authenticate != nil }

// hasTokens reports whether the browser session routes are served (tokens
// are configured: a session begins with one).
func (g *Guard) hasTokens() bool { return len(g.tokens) > 0 }

type principalKey struct{}

// Principal returns the principal a Guard admitted the request of ctx as
// ("" when no tokens are configured).
func Principal(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// WithPrincipal returns ctx carrying principal (for tests and for code
// that serves a request on a principal's behalf).
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

// Errors of Check, for callers that admit requests themselves.
var (
	ErrHost         = errors.New("host not allowed")
	ErrOrigin       = errors.New("cross-origin request refused")
	ErrUnauthorized = errors.New("authentication required")
	ErrContentType  = errors.New("request body must be application/json")
)

// Handler wraps next with the admission checks and serves the login path.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal, err := g.Check(r)
		switch {
		case errors.Is(err, ErrHost):
			writeError(w, http.StatusForbidden, "host_not_allowed", "this server does not answer to this Host name (DNS rebinding protection); add it to auth.allowed_hosts if it is yours")
			return
		case errors.Is(err, ErrOrigin):
			writeError(w, http.StatusForbidden, "cross_origin_request", "cross-origin requests to this server are refused; add the origin to allowed_origins if it is yours")
			return
		case errors.Is(err, ErrUnauthorized):
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer realm=%q", g.cfg.Realm))
			if navigation(r) && g.hasTokens() {
				g.signInPage(w, http.StatusUnauthorized, "")
				return
			}
			msg := "authentication required"
			if g.hasTokens() {
				msg += ": send Authorization: Bearer <token>, or sign in at " + g.cfg.LoginPath
			}
			writeError(w, http.StatusUnauthorized, "unauthorized", msg)
			return
		case errors.Is(err, ErrContentType) && g.signInForm(r):
			// The sign-in page's form: every other check passed.
		case errors.Is(err, ErrContentType):
			writeError(w, http.StatusUnsupportedMediaType, "unsupported_content_type", "request bodies must be Content-Type: application/json")
			return
		}
		if g.serveSessionRoute(w, r, principal) {
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), principal)))
	})
}

// Check applies the admission checks to r and returns the principal. Its
// errors match ErrHost, ErrOrigin, ErrUnauthorized and ErrContentType.
func (g *Guard) Check(r *http.Request) (string, error) {
	if !g.hostAllowed(r.Host) {
		return "", ErrHost
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.sameOrigin(origin, r) && !g.origins[strings.ToLower(origin)] {
		return "", ErrOrigin
	}
	if err := g.csrf.Check(r); err != nil {
		return "", fmt.Errorf("%w: %w", ErrOrigin, err)
	}
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		return "", nil // a CORS preflight of a trusted origin: the route answers it
	}
	principal := ""
	sessionRoute := g.hasTokens() && (r.URL.Path == g.cfg.LoginPath || r.URL.Path == g.cfg.LogoutPath)
	if g.AuthRequired() && !slices.Contains(g.cfg.Public, r.URL.Path) && !sessionRoute {
		p, ok := g.authenticate(r)
		if !ok {
			return "", ErrUnauthorized
		}
		principal = p
	}
	if hasBody(r) && !isJSON(r.Header.Get("Content-Type")) {
		return "", ErrContentType
	}
	return principal, nil
}

// hostAllowed checks the Host header (port ignored).
func (g *Guard) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if g.hosts[host] {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether origin names the server the request reached
// (scheme and host:port); the Host header was checked already.
func (g *Guard) sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return strings.EqualFold(u.Host, r.Host) && (u.Scheme == scheme || forwardedHTTPS(r) && u.Scheme == "https")
}

// forwardedHTTPS reports a TLS-terminating reverse proxy in front of the
// server (X-Forwarded-Proto: https).
func forwardedHTTPS(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// authenticate identifies r: a configured bearer token, else a session
// cookie, else Config.Authenticate (which also sees a bearer token that is
// none of the configured ones: a token of its own scheme).
func (g *Guard) authenticate(r *http.Request) (string, bool) {
	if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		if p, ok := g.principalOf(tok); ok {
			return p, true
		}
	} else if p, _, ok := g.session(r); ok {
		return p, true
	}
	if g.cfg.Authenticate == nil {
		return "", false
	}
	p, err := g.cfg.Authenticate(r)
	return p, err == nil && p != ""
}

// LoginURL returns a one-time link (valid 15 minutes) that signs a browser
// in as principal: opening it sets the session cookie and redirects to /.
// base is the server's URL ("http://127.0.0.1:8080"). It returns "" when
// principal has no token.
func (g *Guard) LoginURL(base, principal string) string {
	known := false
	for _, name := range g.tokens {
		known = known || name == principal
	}
	if !known {
		return ""
	}
	code := randomHex(24)
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.cfg.Now()
	for c, p := range g.codes {
		if now.After(p.expires) {
			delete(g.codes, c)
		}
	}
	if len(g.codes) >= maxCodes {
		return ""
	}
	g.codes[code] = pending{principal: principal, expires: now.Add(codeTTL)}
	return strings.TrimRight(base, "/") + g.cfg.LoginPath + "?code=" + code
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// hasBody reports whether r carries a request body.
func hasBody(r *http.Request) bool {
	return r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody)
}

func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
