package credentials

import (
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
)

func TestOrigin(t *testing.T) {
	cases := map[string]string{
		"http://Example.COM/x":       "http://example.com:80",
		"https://example.com/x?y=1":  "https://example.com:443",
		"HTTPS://EXAMPLE.com/x":      "https://example.com:443",
		"http://127.0.0.1:8080/card": "http://127.0.0.1:8080",
		"ftp://example.com":          "",
		"ftp://x":                    "",
		"/relative":                  "",
		"http://[::1]:9/x":           "http://[::1]:9",
		"://bad":                     "",
	}
	for in, want := range cases {
		if got := Origin(in); got != want {
			t.Errorf("Origin(%q) = %q, want %q", in, got, want)
		}
	}
	if OriginOf(nil) != "" {
		t.Error("OriginOf(nil)")
	}
}

type recordRT struct{ got []string }

func (r *recordRT) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got = append(r.got, req.Header.Get("Authorization"))
	return &http.Response{StatusCode: 204, Body: http.NoBody, Request: req}, nil
}

func TestTransportBindsTheCredentialToTheOrigin(t *testing.T) {
	urls := []string{
		"http://127.0.0.1:8080/agui", "HTTP://127.0.0.1:8080/other", // same origin
		"http://127.0.0.1:8081/agui", "https://127.0.0.1:8080/agui", "http://localhost:8080/agui", // other origins
	}
	cases := []struct {
		name   string
		strip  bool
		header string // Authorization the caller set
		want   []string
	}{
		{"strip foreign auth", true, "Bearer from-elsewhere",
			[]string{"Bearer s3cret", "Bearer s3cret", "", "", ""}},
		{"strip own token only: other auth kept", false, "Basic from-elsewhere",
			[]string{"Bearer s3cret", "Bearer s3cret", "Basic from-elsewhere", "Basic from-elsewhere", "Basic from-elsewhere"}},
		{"strip own token only: token removed", false, "Bearer s3cret",
			[]string{"Bearer s3cret", "Bearer s3cret", "", "", ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := &recordRT{}
			tr := &Transport{Base: base, Origin: Origin(urls[0]), Cred: FromToken("test", "s3cret"), StripForeignAuth: tc.strip}
			for _, u := range urls {
				req, _ := http.NewRequest(http.MethodPost, u, nil)
				req.Header.Set("Authorization", tc.header)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if req.Header.Get("Authorization") != tc.header {
					t.Fatal("RoundTrip modified the caller's request")
				}
			}
			for i := range tc.want {
				if base.got[i] != tc.want[i] {
					t.Errorf("request %d (%s): Authorization %q, want %q", i, urls[i], base.got[i], tc.want[i])
				}
			}
		})
	}
}

func TestTransportWithoutCredentialOrOrigin(t *testing.T) {
	for _, tr := range []*Transport{
		{Origin: Origin("http://a.test/"), Cred: nil},
		{Origin: "", Cred: FromToken("test", "s3cret")},
	} {
		base := &recordRT{}
		tr.Base = base
		req, _ := http.NewRequest(http.MethodGet, "http://a.test/x", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if base.got[0] != "" {
			t.Fatalf("credential sent: %q", base.got[0])
		}
	}
}

func TestCheckRedirect(t *testing.T) {
	req := func(u string) *http.Request {
		r, _ := http.NewRequest(http.MethodGet, u, nil)
		return r
	}
	first := req("http://a.test/start")
	if err := checkRedirect(first, nil, "fix it"); err != nil {
		t.Fatalf("initial request: %v", err)
	}
	if err := checkRedirect(req("HTTP://A.test:80/next"), []*http.Request{first}, "fix it"); err != nil {
		t.Fatalf("same-origin redirect refused: %v", err)
	}
	var re *RedirectError
	err := checkRedirect(req("http://b.test/next"), []*http.Request{first, req("http://a.test/2")}, "fix it")
	if !errors.As(err, &re) || err.Error() != "refused redirect from http://a.test:80 to another origin http://b.test:80; fix it" {
		t.Fatalf("cross-origin redirect: %v", err)
	}
	via := make([]*http.Request, maxRedirects)
	for i := range via {
		via[i] = first
	}
	if err := checkRedirect(req("http://a.test/again"), via, "fix it"); !errors.As(err, &re) || err.Error() != "stopped after 10 redirects" {
		t.Fatalf("redirect loop: %v", err)
	}
}

func TestNewHTTPClient(t *testing.T) {
	tr := Transport{Origin: "http://a.test:80", Cred: FromToken("t", "s3cret"), StripForeignAuth: true}

	c, owned := NewHTTPClient(nil, tr, "fix it")
	at, ok := c.Transport.(*Transport)
	if owned == nil || !ok || at.Base != owned || at.Origin != tr.Origin || !at.StripForeignAuth || c.Timeout != 0 || c.CheckRedirect == nil || c.Jar != nil {
		t.Fatalf("nil base: %+v owned=%v", c, owned)
	}
	owned.CloseIdleConnections()

	jar, _ := cookiejar.New(nil)
	base := &recordRT{}
	c, owned = NewHTTPClient(&http.Client{Transport: base, Jar: jar, Timeout: 1, CheckRedirect: func(*http.Request, []*http.Request) error {
		return errors.New("base policy must not be used")
	}}, tr, "fix it")
	if owned != nil || c.Transport.(*Transport).Base != base || c.Jar != jar || c.Timeout != 0 {
		t.Fatalf("base client: %+v owned=%v", c, owned)
	}
	resp, err := c.Do(&http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "http", Host: "a.test", Path: "/"}, Header: http.Header{}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(base.got) != 1 || !strings.HasSuffix(base.got[0], "s3cret") {
		t.Fatalf("base transport saw %q", base.got)
	}

	c, owned = NewHTTPClient(&http.Client{Jar: jar}, tr, "fix it")
	if owned == nil || c.Jar != jar {
		t.Fatal("base without a transport: want an owned transport and the base jar")
	}
	owned.CloseIdleConnections()
}
