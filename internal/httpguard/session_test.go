package httpguard_test

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/httpguard"
)

// clock is a settable clock for the guard's sessions: no test sleeps.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func sessionGuard(t *testing.T, cfg httpguard.Config) (*httpguard.Guard, http.Handler) {
	t.Helper()
	cfg.Addr = "127.0.0.1:8080"
	cfg.Tokens = map[string]string{"alice": aliceToken, "bob": "bob-token-0123456789abcdef"}
	cfg.Public = []string{"/healthz"}
	g, err := httpguard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g, g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok:"+httpguard.Principal(r.Context()))
	}))
}

// signIn opens a one-time login link and returns the "name=value" of the
// session cookie it sets.
func signIn(t *testing.T, g *httpguard.Guard, h http.Handler) string {
	t.Helper()
	u, err := url.Parse(g.LoginURL("http://127.0.0.1:8080", "alice"))
	if err != nil {
		t.Fatal(err)
	}
	w := do(h, req{method: "GET", host: u.Host, path: u.RequestURI()})
	cookies := w.Result().Cookies()
	if w.Code != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("login: %d %v", w.Code, cookies)
	}
	return cookies[0].Name + "=" + cookies[0].Value
}

func asCookie(cookie string) map[string]string { return map[string]string{"Cookie": cookie} }

func TestSessionIsRefusedAfterItsTTL(t *testing.T) {
	for _, tt := range []struct {
		name string
		ttl  time.Duration
		want time.Duration // the TTL in force
	}{
		{"configured", 90 * time.Minute, 90 * time.Minute},
		{"default", 0, httpguard.DefaultSessionTTL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
			g, h := sessionGuard(t, httpguard.Config{SessionTTL: tt.ttl, Now: c.Now})
			u, _ := url.Parse(g.LoginURL("http://127.0.0.1:8080", "alice"))
			w := do(h, req{method: "GET", host: u.Host, path: u.RequestURI()})
			ck := w.Result().Cookies()
			if len(ck) != 1 || ck[0].MaxAge != int(tt.want/time.Second) {
				t.Fatalf("cookie %+v, want Max-Age %v", ck, tt.want)
			}
			cookie := ck[0].Name + "=" + ck[0].Value
			c.advance(tt.want - time.Second)
			if w := do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/agui", header: asCookie(cookie)}); w.Body.String() != "ok:alice" {
				t.Fatalf("a session within its TTL: %d %s", w.Code, w.Body)
			}
			c.advance(time.Second)
			if w := do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/agui", header: asCookie(cookie)}); w.Code != http.StatusUnauthorized {
				t.Fatalf("a session at its TTL: %d %s, want 401", w.Code, w.Body)
			}
			c.advance(-time.Hour) // a clock going back does not revive it: it is forgotten
			if w := do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/agui", header: asCookie(cookie)}); w.Code != http.StatusUnauthorized {
				t.Fatalf("an expired session revived: %d", w.Code)
			}
		})
	}
}

func TestLogoutRevokesTheCookiesSessionOnly(t *testing.T) {
	g, h := sessionGuard(t, httpguard.Config{})
	first, second := signIn(t, g, h), signIn(t, g, h)
	sameOrigin := map[string]string{"Origin": "http://127.0.0.1:8080", "Sec-Fetch-Site": "same-origin", "Cookie": first}

	// Refused before anything is revoked: another site's request, and GET.
	for _, tt := range []struct {
		name   string
		method string
		header map[string]string
		want   int
	}{
		{"cross-site POST", "POST", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", "Cookie": first}, 403},
		{"cross-site POST without Origin", "POST", map[string]string{"Sec-Fetch-Site": "cross-site", "Cookie": first}, 403},
		{"GET", "GET", asCookie(first), 405},
	} {
		if w := do(h, req{method: tt.method, host: "127.0.0.1:8080", path: "/logout", header: tt.header}); w.Code != tt.want {
			t.Fatalf("%s /logout: %d, want %d", tt.name, w.Code, tt.want)
		}
		if w := do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/agui", header: asCookie(first)}); w.Body.String() != "ok:alice" {
			t.Fatalf("after a refused %s /logout the session is gone: %d", tt.name, w.Code)
		}
	}

	w := do(h, req{method: "POST", host: "127.0.0.1:8080", path: "/logout", header: sameOrigin})
	if w.Code != http.StatusNoContent {
		t.Fatalf("logout: %d %s", w.Code, w.Body)
	}
	if ck := w.Result().Cookies(); len(ck) != 1 || ck[0].Name != httpguard.CookieName || ck[0].MaxAge >= 0 || ck[0].Value != "" {
		t.Fatalf("logout does not clear the cookie: %+v", ck)
	}
	if w := do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/agui", header: asCookie(first)}); w.Code != http.StatusUnauthorized {
		t.Fatalf("a revoked session still works: %d %s", w.Code, w.Body)
	}
	if w := do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/agui", header: asCookie(second)}); w.Body.String() != "ok:alice" {
		t.Fatalf("logout revoked another session of the same principal: %d", w.Code)
	}
	// Logging out again (an expired or revoked cookie) still clears it.
	if w := do(h, req{method: "POST", host: "127.0.0.1:8080", path: "/logout", header: sameOrigin}); w.Code != http.StatusNoContent {
		t.Fatalf("second logout: %d", w.Code)
	}
}

func TestSessionRouteSaysWhoTheRequestIs(t *testing.T) {
	c := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	g, h := sessionGuard(t, httpguard.Config{SessionTTL: time.Hour, Now: c.Now})
	cookie := signIn(t, g, h)
	decode := func(w interface{ Result() *http.Response }) map[string]any {
		var m map[string]any
		if err := json.NewDecoder(w.Result().Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	got := decode(do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/session", header: asCookie(cookie)}))
	if got["auth_required"] != true || got["principal"] != "alice" || got["session"] != true || got["expires_at"] != "2026-01-02T04:04:05Z" {
		t.Fatalf("cookie session: %v", got)
	}
	got = decode(do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/session", header: map[string]string{"Authorization": "Bearer " + aliceToken}}))
	if got["principal"] != "alice" || got["session"] != false {
		t.Fatalf("bearer: %v", got)
	}
	if w := do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/session"}); w.Code != http.StatusUnauthorized {
		t.Fatalf("anonymous: %d", w.Code)
	}
	open := guard(t, httpguard.Config{Addr: "127.0.0.1:8080"})
	w := do(open, req{method: "GET", host: "127.0.0.1:8080", path: "/session"})
	if w.Body.String() != `{"auth_required":false}`+"\n" {
		t.Fatalf("without tokens: %d %s", w.Code, w.Body)
	}
}

func TestSignInPageExchangesATokenForASession(t *testing.T) {
	_, h := sessionGuard(t, httpguard.Config{})
	form := func(token string, header map[string]string) *http.Response {
		hd := map[string]string{"Origin": "http://127.0.0.1:8080", "Sec-Fetch-Site": "same-origin"}
		maps.Copy(hd, header)
		return do(h, req{method: "POST", host: "127.0.0.1:8080", path: "/login", ct: "application/x-www-form-urlencoded",
			body: url.Values{"token": {token}}.Encode(), header: hd}).Result()
	}
	body := func(r *http.Response) string { b, _ := io.ReadAll(r.Body); return string(b) }

	// A browser opening the app without a session gets the page, not JSON.
	w := do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/", header: map[string]string{"Accept": "text/html,application/xhtml+xml", "Sec-Fetch-Mode": "navigate"}})
	page := w.Body.String()
	if w.Code != http.StatusUnauthorized || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") ||
		!strings.Contains(page, `<form method="post" action="/login"`) || !strings.Contains(page, `name="token"`) || strings.Contains(page, `"error"`) {
		t.Fatalf("navigation without a session: %d %s %s", w.Code, w.Header(), page)
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "script-src") {
		t.Fatalf("sign-in page CSP %q", csp)
	}
	// A script or API client still gets JSON.
	if w := do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/agui/runs/r/events", header: map[string]string{"Accept": "text/event-stream"}}); !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("API 401: %s", w.Header())
	}

	r := form("wrong-token-0123456789abcdef", nil)
	if r.StatusCode != http.StatusUnauthorized || len(r.Cookies()) != 0 || !strings.Contains(body(r), "not valid") {
		t.Fatalf("a wrong token: %d %v", r.StatusCode, r.Cookies())
	}
	r = form(aliceToken, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
	if r.StatusCode != http.StatusForbidden || len(r.Cookies()) != 0 {
		t.Fatalf("a cross-site sign-in (login CSRF): %d %v", r.StatusCode, r.Cookies())
	}
	r = form(aliceToken, map[string]string{"Origin": "", "Sec-Fetch-Site": "same-site"})
	if r.StatusCode != http.StatusForbidden || len(r.Cookies()) != 0 {
		t.Fatalf("a same-site (sibling subdomain) sign-in: %d %v", r.StatusCode, r.Cookies())
	}
	if w := do(h, req{method: "POST", host: "127.0.0.1:8080", path: "/agui", ct: "application/x-www-form-urlencoded", body: "token=" + aliceToken,
		header: map[string]string{"Authorization": "Bearer " + aliceToken}}); w.Code != http.StatusUnsupportedMediaType {
		t.Fatalf("a form post elsewhere than the sign-in path: %d", w.Code)
	}
	r = form(aliceToken, nil)
	ck := r.Cookies()
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/" || len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("sign-in: %d %v %+v", r.StatusCode, r.Header, ck)
	}
	if strings.Contains(body(r), aliceToken) {
		t.Fatal("the token is echoed")
	}
	if w := do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/", header: asCookie(ck[0].Name + "=" + ck[0].Value)}); w.Body.String() != "ok:alice" {
		t.Fatalf("the signed-in session: %d %s", w.Code, w.Body)
	}
	// JSON, for scripts, works as well; an oversized body does not.
	if w := do(h, req{method: "POST", host: "127.0.0.1:8080", path: "/login", ct: "application/json", body: `{"token":"bob-token-0123456789abcdef"}`}); w.Code != http.StatusSeeOther {
		t.Fatalf("JSON sign-in: %d", w.Code)
	}
	if r := form(aliceToken+strings.Repeat("x", 8<<10), nil); r.StatusCode != http.StatusBadRequest || len(r.Cookies()) != 0 {
		t.Fatalf("an oversized sign-in: %d", r.StatusCode)
	}
}

func TestUsedLoginLinkLeadsToTheSignInPage(t *testing.T) {
	c := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	g, h := sessionGuard(t, httpguard.Config{Now: c.Now})
	used, _ := url.Parse(g.LoginURL("http://127.0.0.1:8080", "alice"))
	do(h, req{method: "GET", host: used.Host, path: used.RequestURI()})
	expired, _ := url.Parse(g.LoginURL("http://127.0.0.1:8080", "alice"))
	c.advance(16 * time.Minute)
	for name, u := range map[string]*url.URL{"used": used, "expired": expired} {
		w := do(h, req{method: "GET", host: u.Host, path: u.RequestURI()})
		if w.Code != http.StatusUnauthorized || len(w.Result().Cookies()) != 0 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") ||
			!strings.Contains(w.Body.String(), "already used or has expired") || !strings.Contains(w.Body.String(), `name="token"`) ||
			strings.Contains(w.Body.String(), "restart") {
			t.Errorf("%s link: %d %s", name, w.Code, w.Body)
		}
		if w.Header().Get("Referrer-Policy") != "same-origin" {
			t.Errorf("%s link: the page may leak its URL: %v", name, w.Header())
		}
	}
}

func TestSessionsOfOnePrincipalAreBounded(t *testing.T) {
	g, h := sessionGuard(t, httpguard.Config{})
	first := signIn(t, g, h)
	for range 64 {
		signIn(t, g, h)
	}
	if w := do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/agui", header: asCookie(first)}); w.Code != http.StatusUnauthorized {
		t.Fatalf("a principal's oldest session outlived 64 newer ones: %d", w.Code)
	}
}
