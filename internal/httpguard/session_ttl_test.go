package httpguard_test

import (
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/httpguard"
)

// signIn opens a fresh login link of g for alice and returns the session
// cookie it set.
func signIn(t *testing.T, g *httpguard.Guard, h http.Handler) *http.Cookie {
	t.Helper()
	u, err := url.Parse(g.LoginURL("http://127.0.0.1:8080", "alice"))
	if err != nil || u.Path != "/login" {
		t.Fatalf("login link %v: %v", u, err)
	}
	w := do(h, req{method: "GET", host: u.Host, path: u.RequestURI()})
	cookies := w.Result().Cookies()
	if w.Code != http.StatusSeeOther || len(cookies) != 1 || cookies[0].Name != httpguard.CookieName {
		t.Fatalf("login: %d %v", w.Code, cookies)
	}
	return cookies[0]
}

// A login session authenticates until its TTL has passed and is refused
// after it (docs/design.md#secrets): the server enforces the bound, not
// only the cookie's Max-Age, which a client is free to ignore.
func TestSessionIsRefusedAfterItsTTL(t *testing.T) {
	for _, tt := range []struct {
		name string
		ttl  time.Duration
		want int
	}{
		{"within the TTL", time.Hour, http.StatusOK},
		{"after the TTL", time.Millisecond, http.StatusUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g, err := httpguard.New(httpguard.Config{Addr: "127.0.0.1:8080", Tokens: map[string]string{"alice": aliceToken}, SessionTTL: tt.ttl})
			if err != nil {
				t.Fatal(err)
			}
			h := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, "ok:"+httpguard.Principal(r.Context()))
			}))
			c := signIn(t, g, h)
			if tt.ttl >= time.Second && c.MaxAge != int(tt.ttl/time.Second) {
				t.Errorf("cookie Max-Age %d, want the TTL %v", c.MaxAge, tt.ttl)
			}
			if tt.want == http.StatusUnauthorized {
				// The session expired at the latest TTL after the login
				// returned: sleeping twice as long makes sure it has (a
				// lower bound on elapsed time, never an assertion about
				// speed).
				time.Sleep(2 * tt.ttl)
			}
			for range 2 { // and stays refused
				w := do(h, req{method: "GET", host: "127.0.0.1:8080", path: "/agui", header: map[string]string{"Cookie": c.Name + "=" + c.Value}})
				if w.Code != tt.want {
					t.Fatalf("session cookie: %d %s, want %d", w.Code, w.Body, tt.want)
				}
				if tt.want == http.StatusOK && w.Body.String() != "ok:alice" {
					t.Fatalf("principal %q", w.Body)
				}
			}
		})
	}
}
