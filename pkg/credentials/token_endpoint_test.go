package credentials

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The OAuth2 token endpoint receives the client secret: it must be https,
// plain http only on a loopback host — not on any other IP, private or
// public (docs/design.md#secrets, "Auth schemes").
func TestTokenURLIsHTTPSOrLoopback(t *testing.T) {
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"https://auth.example/token", true},
		{"https://203.0.113.7/token", true},
		{"http://localhost:8080/token", true},
		{"http://127.0.0.1/token", true},
		{"http://127.0.0.2:9/token", true},
		{"http://[::1]:9/token", true},
		{"http://auth.example/token", false},
		{"http://203.0.113.7/token", false},
		{"http://10.0.0.1/token", false},
		{"http://192.168.1.10:8080/token", false},
		{"http://[2001:db8::1]/token", false},
		{"http://0.0.0.0/token", false},
		{"ftp://127.0.0.1/token", false},
	} {
		err := CheckTokenURL(tt.url)
		if (err == nil) != tt.ok {
			t.Errorf("CheckTokenURL(%q) = %v, want accepted %v", tt.url, err, tt.ok)
		}
		a := Auth{Scheme: SchemeOAuth2, ClientID: "c", ClientSecretRef: "env:S", TokenURL: tt.url}
		if err := a.Validate(); (err == nil) != tt.ok || (err != nil && !strings.HasPrefix(err.Error(), "auth.token_url:")) {
			t.Errorf("Validate with token_url %q = %v, want accepted %v", tt.url, err, tt.ok)
		}
	}
}

// A token endpoint that refuses the client with any 4xx — OAuth2 answers
// invalid_client with 400 or 401, invalid_grant and unauthorized_client
// with 400 — is "refused the host's credentials" (ErrCredentialsRefused);
// a server error is not (docs/design.md#secrets, "Auth schemes";
// docs/design.md#failure-codes).
func TestTokenEndpointRefusalIsEvery4xx(t *testing.T) {
	t.Setenv("AUTHREF_REFUSED_SECRET", "refused-secret-789")
	for _, tt := range []struct {
		status  int
		code    string
		refused bool
	}{
		{http.StatusBadRequest, "invalid_client", true},
		{http.StatusBadRequest, "unauthorized_client", true},
		{http.StatusUnauthorized, "invalid_client", true},
		{http.StatusForbidden, "access_denied", true},
		{http.StatusInternalServerError, "server_error", false},
		{http.StatusServiceUnavailable, "temporarily_unavailable", false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tt.status)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": tt.code})
		}))
		c, err := ResolveAuth(Auth{Scheme: SchemeOAuth2, ClientID: "host-client", ClientSecretRef: "env:AUTHREF_REFUSED_SECRET", TokenURL: srv.URL + "/token"}, ResolveOptions{})
		if err != nil {
			srv.Close()
			t.Fatal(err)
		}
		tr := &Transport{Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 204, Body: http.NoBody, Request: r}, nil
		}), Origin: Origin("http://agent.test/"), Cred: c}
		req, _ := http.NewRequest(http.MethodPost, "http://agent.test/a", nil)
		resp, err := tr.RoundTrip(req)
		if resp != nil {
			_ = resp.Body.Close()
		}
		c.Close()
		srv.Close()
		var te *TokenError
		if !errors.As(err, &te) || te.Status != tt.status || te.Code != tt.code {
			t.Errorf("HTTP %d %s: err = %v, want a *TokenError with that status and code", tt.status, tt.code, err)
			continue
		}
		if got := errors.Is(err, ErrCredentialsRefused); got != tt.refused {
			t.Errorf("HTTP %d %s: errors.Is(ErrCredentialsRefused) = %v, want %v", tt.status, tt.code, got, tt.refused)
		}
	}
}
