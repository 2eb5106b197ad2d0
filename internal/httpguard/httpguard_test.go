package httpguard_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/internal/httpguard"
)

const aliceToken = "alice-token-0123456789abcdef"

func guard(t *testing.T, cfg httpguard.Config) http.Handler {
	t.Helper()
	g, err := httpguard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok:"+httpguard.Principal(r.Context()))
	}))
}

type req struct {
	method, host, path, ct, body string
	header                       map[string]string
}

func do(h http.Handler, q req) *httptest.ResponseRecorder {
	var body io.Reader
	if q.body != "" {
		body = strings.NewReader(q.body)
	}
	r := httptest.NewRequest(q.method, "http://"+q.host+q.path, body)
	r.Host = q.host
	if q.ct != "" {
		r.Header.Set("Content-Type", q.ct)
	}
	for k, v := range q.header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestGuardRefusesWhatABrowserPageCouldDo(t *testing.T) {
	h := guard(t, httpguard.Config{Addr: "127.0.0.1:8080", AllowedHosts: []string{"agents.internal"}, TrustedOrigins: []string{"https://app.example"}})
	tests := []struct {
		name string
		q    req
		want int
	}{
		{"loopback name", req{method: "GET", host: "localhost:8080", path: "/"}, 200},
		{"loopback IP", req{method: "GET", host: "127.0.0.1:8080", path: "/"}, 200},
		{"other loopback IP", req{method: "GET", host: "127.0.0.2:8080", path: "/"}, 200},
		{"IPv6 loopback", req{method: "GET", host: "[::1]:8080", path: "/"}, 200},
		{"configured host", req{method: "GET", host: "agents.internal", path: "/"}, 200},
		{"DNS rebinding: an attacker's name for 127.0.0.1", req{method: "POST", host: "evil.example:8080", path: "/agui", ct: "application/json", body: "{}",
			header: map[string]string{"Origin": "http://evil.example:8080"}}, 403},
		{"DNS rebinding GET", req{method: "GET", host: "evil.example:8080", path: "/agui/runs/r/events"}, 403},
		{"same-origin POST", req{method: "POST", host: "127.0.0.1:8080", path: "/agui", ct: "application/json", body: "{}",
			header: map[string]string{"Origin": "http://127.0.0.1:8080", "Sec-Fetch-Site": "same-origin"}}, 200},
		{"trusted origin", req{method: "POST", host: "127.0.0.1:8080", path: "/agui", ct: "application/json", body: "{}",
			header: map[string]string{"Origin": "https://app.example", "Sec-Fetch-Site": "cross-site"}}, 200},
		{"cross-site text/plain form post", req{method: "POST", host: "127.0.0.1:8080", path: "/agui", ct: "text/plain", body: "{}",
			header: map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}}, 403},
		{"cross-site post without Origin", req{method: "POST", host: "127.0.0.1:8080", path: "/agui/runs/r/cancel",
			header: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403},
		{"cross-origin GET of a stream", req{method: "GET", host: "127.0.0.1:8080", path: "/agui/runs/r/events",
			header: map[string]string{"Origin": "https://evil.example"}}, 403},
		{"non-JSON body from a non-browser client", req{method: "POST", host: "127.0.0.1:8080", path: "/agui", ct: "text/plain", body: "{}"}, 415},
		{"form-encoded input", req{method: "POST", host: "127.0.0.1:8080", path: "/agui/runs/r/delegations/d/input", ct: "application/x-www-form-urlencoded", body: "text=x"}, 415},
		{"bodiless POST", req{method: "POST", host: "127.0.0.1:8080", path: "/agui/runs/r/cancel"}, 200},
		{"JSON with charset", req{method: "POST", host: "127.0.0.1:8080", path: "/agui", ct: "application/json; charset=utf-8", body: "{}"}, 200},
		{"preflight of a trusted origin", req{method: "OPTIONS", host: "127.0.0.1:8080", path: "/agui",
			header: map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if w := do(h, tt.q); w.Code != tt.want {
				t.Errorf("status %d, want %d: %s", w.Code, tt.want, w.Body)
			}
		})
	}
}

func TestGuardAuthenticatesWithBearerTokens(t *testing.T) {
	h := guard(t, httpguard.Config{Addr: "127.0.0.1:8080", Tokens: map[string]string{"alice": aliceToken, "bob": "bob-token-0123456789abcdef"},
		Public: []string{"/healthz"}})
	for _, tt := range []struct {
		name, auth string
		path       string
		want       int
		body       string
	}{
		{"no token", "", "/agui", 401, ""},
		{"public path", "", "/healthz", 200, "ok:"},
		{"alice", "Bearer " + aliceToken, "/agui", 200, "ok:alice"},
		{"lowercase scheme", "bearer " + aliceToken, "/agui", 200, "ok:alice"},
		{"a prefix of a token", "Bearer " + aliceToken[:16], "/agui", 401, ""},
		{"a token extended", "Bearer " + aliceToken + "x", "/agui", 401, ""},
		{"same first 16 bytes", "Bearer " + aliceToken[:16] + "zzzzzzzzzzzz", "/agui", 401, ""},
		{"basic auth", "Basic " + aliceToken, "/agui", 401, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := do(h, req{method: "GET", host: "127.0.0.1:8080", path: tt.path, header: map[string]string{"Authorization": tt.auth}})
			if w.Code != tt.want || (tt.body != "" && w.Body.String() != tt.body) {
				t.Fatalf("status %d body %q, want %d %q", w.Code, w.Body, tt.want, tt.body)
			}
			if w.Code == 401 && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer realm=") {
				t.Errorf("401 without WWW-Authenticate: %v", w.Header())
			}
			if strings.Contains(w.Body.String(), aliceToken) {
				t.Error("the token is echoed")
			}
		})
	}
}

func TestGuardLoginLinkSetsAStrictSessionCookieOnce(t *testing.T) {
	g, err := httpguard.New(httpguard.Config{Addr: "127.0.0.1:8080", Tokens: map[string]string{"alice": aliceToken}})
	if err != nil {
		t.Fatal(err)
	}
	h := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok:"+httpguard.Principal(r.Context()))
	}))
	link := g.LoginURL("http://127.0.0.1:8080", "alice")
	if g.LoginURL("http://127.0.0.1:8080", "mallory") != "" {
		t.Fatal("a login link for an unknown principal")
	}
	u, err := url.Parse(link)
	if err != nil || u.Path != "/login" {
		t.Fatalf("link %q", link)
	}
	w := do(h, req{method: "GET", host: u.Host, path: u.RequestURI()})
	if w.Code != http.StatusSeeOther {
		t.Fatalf("login: %d %s", w.Code, w.Body)
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Name != httpguard.CookieName {
		t.Fatalf("cookie %+v", cookies)
	}
	w = do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/agui", header: map[string]string{"Cookie": cookies[0].Name + "=" + cookies[0].Value}})
	if w.Body.String() != "ok:alice" {
		t.Fatalf("the session does not authenticate: %d %s", w.Code, w.Body)
	}
	if w := do(h, req{method: "GET", host: u.Host, path: u.RequestURI()}); w.Code != http.StatusUnauthorized {
		t.Fatalf("a login link works twice: %d", w.Code)
	}
	if w := do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/agui", header: map[string]string{"Cookie": httpguard.CookieName + "=forged"}}); w.Code != 401 {
		t.Fatalf("a forged cookie: %d", w.Code)
	}
}

func TestGuardConfigErrors(t *testing.T) {
	for _, cfg := range []httpguard.Config{
		{Addr: "nonsense"},
		{AllowedHosts: []string{"http://x.example"}},
		{TrustedOrigins: []string{"app.example"}},
		{Tokens: map[string]string{"alice": "short"}},
		{Tokens: map[string]string{"alice": aliceToken, "bob": aliceToken}},
	} {
		if _, err := httpguard.New(cfg); err == nil {
			t.Errorf("accepted %+v", cfg)
		}
	}
}

// Config.Authenticate identifies the requests without a configured token or
// session: its principal reaches the handler, its error is a 401 (JSON,
// no sign-in page without tokens), a bearer token that is none of the
// configured ones goes to it (a token of its own scheme), and the session
// routes exist only with tokens.
func TestGuardAuthenticate(t *testing.T) {
	own := func(r *http.Request) (string, error) {
		switch {
		case r.Header.Get("X-User") != "":
			return r.Header.Get("X-User"), nil
		case r.Header.Get("Authorization") == "Bearer jwt-for-dave":
			return "dave", nil
		}
		return "", io.EOF
	}
	for _, tt := range []struct {
		name   string
		tokens map[string]string
		q      req
		code   int
		body   string
	}{
		{"its principal", nil, req{method: "GET", host: "127.0.0.1", path: "/x", header: map[string]string{"X-User": "bob"}}, 200, "ok:bob"},
		{"its own bearer scheme", nil, req{method: "GET", host: "127.0.0.1", path: "/x", header: map[string]string{"Authorization": "Bearer jwt-for-dave"}}, 200, "ok:dave"},
		{"refused", nil, req{method: "GET", host: "127.0.0.1", path: "/x"}, 401, `"unauthorized"`},
		{"a browser without tokens gets no sign-in page", nil, req{method: "GET", host: "127.0.0.1", path: "/", header: map[string]string{"Sec-Fetch-Mode": "navigate"}}, 401, `"unauthorized"`},
		{"no session routes without tokens", nil, req{method: "GET", host: "127.0.0.1", path: "/login", header: map[string]string{"X-User": "bob"}}, 200, "ok:bob"},
		{"public paths stay public", nil, req{method: "GET", host: "127.0.0.1", path: "/healthz"}, 200, "ok:"},
		{"a configured token first", map[string]string{"alice": aliceToken}, req{method: "GET", host: "127.0.0.1", path: "/x", header: map[string]string{"Authorization": "Bearer " + aliceToken, "X-User": "mallory"}}, 200, "ok:alice"},
		{"beside tokens", map[string]string{"alice": aliceToken}, req{method: "GET", host: "127.0.0.1", path: "/x", header: map[string]string{"X-User": "bob"}}, 200, "ok:bob"},
		{"the Host check first", nil, req{method: "GET", host: "evil.example", path: "/x", header: map[string]string{"X-User": "bob"}}, 403, "host_not_allowed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := guard(t, httpguard.Config{Addr: "127.0.0.1:8080", Tokens: tt.tokens, Public: []string{"/healthz"}, Authenticate: own})
			w := do(h, tt.q)
			if w.Code != tt.code || !strings.Contains(w.Body.String(), tt.body) {
				t.Fatalf("%d %s, want %d with %s", w.Code, w.Body.String(), tt.code, tt.body)
			}
		})
	}
}
