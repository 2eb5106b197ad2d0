package host_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/httpguard"
)

// The config's auth.session_ttl is the session cookie's lifetime, and
// POST /logout (same-origin only) ends the session at once.
func TestHostSessionTTLAndLogout(t *testing.T) {
	t.Setenv("ALICE_TOKEN", "alice-token-0123456789abcdef")
	cfg, err := hostconfig.Parse("host.yaml", []byte("auth:\n  session_ttl: 2h\n  tokens: [{name: alice, token_ref: env:ALICE_TOKEN}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	h, srv := newHost(t, cfg)
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := browser.Get(h.LoginURLs(srv.URL)["alice"])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ck := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(ck) != 1 || ck[0].MaxAge != int((2*time.Hour)/time.Second) {
		t.Fatalf("login: %d %+v", resp.StatusCode, ck)
	}
	if code, _, body := request(t, browser, "GET", srv.URL+"/session", "", nil); code != 200 || !strings.Contains(body, `"principal":"alice"`) || !strings.Contains(body, `"session":true`) {
		t.Fatalf("/session: %d %s", code, body)
	}
	if code, _, _ := request(t, browser, "POST", srv.URL+"/logout", "", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
		t.Fatalf("a cross-site logout: %d", code)
	}
	if code, _, _ := request(t, browser, "GET", srv.URL+"/agui/runs/x/delegations", "", nil); code == http.StatusUnauthorized {
		t.Fatal("a refused logout ended the session")
	}
	if code, _, _ := request(t, browser, "POST", srv.URL+"/logout", "", map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}); code != http.StatusNoContent {
		t.Fatalf("logout: %d", code)
	}
	u, _ := url.Parse(srv.URL)
	for _, c := range jar.Cookies(u) {
		if c.Name == httpguard.CookieName {
			t.Fatal("logout left the cookie in the browser")
		}
	}
	// The revoked cookie, replayed, is refused too.
	code, _, _ := request(t, nil, "GET", srv.URL+"/agui/runs/x/delegations", "", map[string]string{"Cookie": ck[0].Name + "=" + ck[0].Value})
	if code != http.StatusUnauthorized {
		t.Fatalf("the revoked session: %d", code)
	}
	// A browser opening the app now gets the sign-in page.
	code, hdr, body := request(t, nil, "GET", srv.URL+"/", "", map[string]string{"Accept": "text/html", "Sec-Fetch-Mode": "navigate"})
	if code != http.StatusUnauthorized || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(body, `name="token"`) {
		t.Fatalf("the app without a session: %d %s", code, body)
	}
}
