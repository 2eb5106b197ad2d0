package httpguard

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"html/template"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The browser's session routes (docs/design.md#secrets). A session begins
// with a one-time login link (GET LoginPath?code=...) or with the sign-in
// page's form, which exchanges one of the configured tokens for the session
// cookie (POST LoginPath); it ends at SessionTTL or at POST LogoutPath.
// Only the SHA-256 of a session's cookie value is kept.

// maxSignInBody bounds the sign-in form (a token is far shorter).
const maxSignInBody = 4 << 10

// session returns the principal and expiry of r's session cookie; an
// expired session is forgotten.
func (g *Guard) session(r *http.Request) (string, time.Time, bool) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return "", time.Time{}, false
	}
	h := sha256.Sum256([]byte(c.Value))
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.sessions[h]
	if !ok {
		return "", time.Time{}, false
	}
	if !g.cfg.Now().Before(s.expires) {
		delete(g.sessions, h)
		return "", time.Time{}, false
	}
	return s.principal, s.expires, true
}

// serveSessionRoute serves the session routes and reports whether r was
// one of them. principal is who Check admitted r as.
func (g *Guard) serveSessionRoute(w http.ResponseWriter, r *http.Request, principal string) bool {
	switch r.URL.Path {
	case g.cfg.SessionPath:
		g.sessionInfo(w, r, principal)
	case g.cfg.LoginPath:
		if !g.hasTokens() {
			return false
		}
		g.login(w, r)
	case g.cfg.LogoutPath:
		if !g.hasTokens() {
			return false
		}
		g.logout(w, r)
	default:
		return false
	}
	return true
}

// sessionInfo answers GET SessionPath: whether the server requires
// authentication, who the request is, and, for a cookie session, when it
// ends (the web UI shows "Sign out" from it).
func (g *Guard) sessionInfo(w http.ResponseWriter, r *http.Request, principal string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use GET")
		return
	}
	body := map[string]any{"auth_required": g.AuthRequired()}
	if g.AuthRequired() {
		body["principal"] = principal
		body["session"] = false
		if p, expires, ok := g.session(r); ok && p == principal {
			body["session"], body["expires_at"] = true, expires.UTC().Format(time.RFC3339)
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(body)
}

// login serves LoginPath: GET with a code consumes a one-time link, GET
// without one shows the sign-in page, POST exchanges a token (the sign-in
// form, or JSON {"token": ...}) for a session.
func (g *Guard) login(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		code := r.URL.Query().Get("code")
		if code == "" {
			g.signInPage(w, http.StatusOK, "")
			return
		}
		g.mu.Lock()
		p, ok := g.codes[code]
		delete(g.codes, code)
		g.mu.Unlock()
		if !ok || g.cfg.Now().After(p.expires) {
			g.signInPage(w, http.StatusUnauthorized, "This sign-in link was already used or has expired. Sign in with your token instead.")
			return
		}
		g.startSession(w, r, p.principal)
	case http.MethodPost:
		tok, ok := signInToken(r)
		if !ok {
			g.signInPage(w, http.StatusBadRequest, "Enter your token.")
			return
		}
		principal, ok := g.principalOf(tok)
		if !ok {
			g.signInPage(w, http.StatusUnauthorized, "That token is not valid for this host.")
			return
		}
		g.startSession(w, r, principal)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "open the sign-in page with GET, sign in with POST")
	}
}

// principalOf returns the principal whose token is tok (constant time per
// token).
func (g *Guard) principalOf(tok string) (string, bool) {
	h := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	for th, name := range g.tokens {
		if subtle.ConstantTimeCompare(th[:], h[:]) == 1 {
			return name, true
		}
	}
	return "", false
}

// signInToken reads the token of a sign-in POST: the form's "token" field
// or JSON {"token": "..."}, bounded.
func signInToken(r *http.Request) (string, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxSignInBody+1))
	if err != nil || len(body) > maxSignInBody {
		return "", false
	}
	var tok string
	if isJSON(r.Header.Get("Content-Type")) {
		var v struct {
			Token string `json:"token"`
		}
		if json.Unmarshal(body, &v) != nil {
			return "", false
		}
		tok = v.Token
	} else {
		q, err := url.ParseQuery(string(body))
		if err != nil {
			return "", false
		}
		tok = q.Get("token")
	}
	return tok, strings.TrimSpace(tok) != ""
}

// startSession starts a session for principal, sets its cookie and sends
// the browser to the app.
func (g *Guard) startSession(w http.ResponseWriter, r *http.Request, principal string) {
	secret := randomHex(32)
	now := g.cfg.Now()
	g.mu.Lock()
	var oldest [32]byte
	own := 0
	for h, s := range g.sessions {
		switch {
		case !now.Before(s.expires):
			delete(g.sessions, h)
		case s.principal == principal:
			if own == 0 || s.expires.Before(g.sessions[oldest].expires) {
				oldest = h
			}
			own++
		}
	}
	if own >= maxSessionsPerPrincipal {
		delete(g.sessions, oldest)
	}
	full := len(g.sessions) >= maxSessions
	if !full {
		g.sessions[sha256.Sum256([]byte(secret))] = session{principal: principal, expires: now.Add(g.cfg.SessionTTL)}
	}
	g.mu.Unlock()
	if full {
		g.signInPage(w, http.StatusServiceUnavailable, "Too many open sessions on this host; try again later.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: secret, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || forwardedHTTPS(r), MaxAge: int(g.cfg.SessionTTL / time.Second)})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout serves POST LogoutPath: it revokes the session of the request's
// cookie (if any) and clears the cookie. It passed the cross-origin checks
// of every state-changing request.
func (g *Guard) logout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "sign out with POST")
		return
	}
	if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		h := sha256.Sum256([]byte(c.Value))
		g.mu.Lock()
		delete(g.sessions, h)
		g.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || forwardedHTTPS(r), MaxAge: -1})
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// signInForm reports whether r is the sign-in page's form post: the only
// request body that need not be JSON.
func (g *Guard) signInForm(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return g.hasTokens() && r.Method == http.MethodPost && r.URL.Path == g.cfg.LoginPath && err == nil && mt == "application/x-www-form-urlencoded"
}

// navigation reports whether r is a browser opening a page (rather than
// a script or an API client asking for data).
func navigation(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if mode := r.Header.Get("Sec-Fetch-Mode"); mode != "" {
		return mode == "navigate"
	}
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// signInCSP lets the sign-in page show itself and post its form to this
// server, nothing else: no script, no frame around it.
const signInCSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

var signInTemplate = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · Agent Adaptor</title>
<style>
  body { margin: 0; min-height: 100vh; display: grid; place-items: center; font: 16px/1.5 system-ui, sans-serif; background: #f5f6f8; color: #1d2330; }
  main { width: min(92vw, 24rem); background: #fff; border: 1px solid #dde1e8; border-radius: 10px; padding: 1.5rem; box-sizing: border-box; }
  h1 { font-size: 1.25rem; margin: 0 0 .25rem; }
  p { margin: .25rem 0 1rem; color: #4a5468; }
  label { display: block; font-weight: 600; margin-bottom: .25rem; }
  input { width: 100%; box-sizing: border-box; font: inherit; padding: .5rem .6rem; border: 1px solid #b8c0cc; border-radius: 6px; }
  button { margin-top: 1rem; width: 100%; font: inherit; font-weight: 600; padding: .55rem; border: 0; border-radius: 6px; background: #2f5bd3; color: #fff; cursor: pointer; }
  .error { color: #a4221b; background: #fdecea; border-radius: 6px; padding: .5rem .6rem; }
</style>
</head>
<body>
<main>
  <h1>Agent Adaptor</h1>
  <p>This host requires a token. Enter the token the operator gave you, or open the sign-in link printed when the host started.</p>
  {{if .Message}}<p class="error" role="alert" data-testid="signin-error">{{.Message}}</p>{{end}}
  <form method="post" action="{{.Action}}" data-testid="signin-form">
    <label for="token">Token</label>
    <input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
    <button type="submit">Sign in</button>
  </form>
</main>
</body>
</html>
`))

// signInPage writes the HTML sign-in page with status and an optional
// message (fixed text, never from the request).
func (g *Guard) signInPage(w http.ResponseWriter, status int, message string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", signInCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: with no-referrer browsers send
	// "Origin: null" on the form post, which the origin check refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = signInTemplate.Execute(w, struct{ Action, Message string }{g.cfg.LoginPath, message})
}
