package credentials

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestAuthValidate(t *testing.T) {
	ok := []Auth{
		{Scheme: SchemeBearer, TokenRef: "env:X"},
		{Scheme: SchemeAPIKey, TokenRef: "file:/k"},
		{Scheme: SchemeAPIKey, TokenRef: "env:X", Header: "X-API-Key"},
		{Scheme: SchemeOAuth2, ClientID: "c", ClientSecretRef: "env:S"},
		{Scheme: SchemeOAuth2, ClientID: "c", ClientSecretRef: "env:S", TokenURL: "https://auth.example/token", Scopes: []string{"a2a.read"}},
		{Scheme: SchemeOAuth2, ClientID: "c", ClientSecretRef: "env:S", TokenURL: "http://127.0.0.1:9/token"},
	}
	for _, a := range ok {
		if err := a.Validate(); err != nil {
			t.Errorf("%+v: %v", a, err)
		}
	}
	bad := []struct {
		a     Auth
		field string
	}{
		{Auth{}, "auth.scheme"},
		{Auth{Scheme: "basic", TokenRef: "env:X"}, "auth.scheme"},
		{Auth{Scheme: SchemeBearer}, "auth.token_ref"},
		{Auth{Scheme: SchemeBearer, TokenRef: "sk-live-123"}, "auth.token_ref"},
		{Auth{Scheme: SchemeBearer, TokenRef: "env:X", Header: "X-Key"}, "auth.header"},
		{Auth{Scheme: SchemeBearer, TokenRef: "env:X", ClientID: "c"}, "auth.scheme"},
		{Auth{Scheme: SchemeAPIKey, TokenRef: "env:X", Header: "Bad Header"}, "auth.header"},
		{Auth{Scheme: SchemeAPIKey, TokenRef: "env:X", Header: "Host"}, "auth.header"},
		{Auth{Scheme: SchemeOAuth2, ClientSecretRef: "env:S"}, "auth.client_id"},
		{Auth{Scheme: SchemeOAuth2, ClientID: "c"}, "auth.client_secret_ref"},
		{Auth{Scheme: SchemeOAuth2, ClientID: "c", ClientSecretRef: "s3cret"}, "auth.client_secret_ref"},
		{Auth{Scheme: SchemeOAuth2, ClientID: "c", ClientSecretRef: "env:S", TokenURL: "http://auth.example/token"}, "auth.token_url"},
		{Auth{Scheme: SchemeOAuth2, ClientID: "c", ClientSecretRef: "env:S", TokenURL: "https://u:p@auth.example/token"}, "auth.token_url"},
		{Auth{Scheme: SchemeOAuth2, ClientID: "c", ClientSecretRef: "env:S", TokenRef: "env:X"}, "auth.scheme"},
		{Auth{Scheme: SchemeOAuth2, ClientID: "c", ClientSecretRef: "env:S", Scopes: []string{"a b"}}, "auth.scopes"},
	}
	for _, tc := range bad {
		err := tc.a.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.field+":") {
			t.Errorf("%+v: %v, want %s", tc.a, err, tc.field)
		}
	}
}

// An API key goes into its header, to the trusted origin only.
func TestAPIKeyTransport(t *testing.T) {
	t.Setenv("AUTHREF_API_KEY", "key-0123456789")
	secrets := &Secrets{}
	c, err := ResolveAuth(Auth{Scheme: SchemeAPIKey, TokenRef: "env:AUTHREF_API_KEY", Header: "X-API-Key"}, ResolveOptions{Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	if c.Scheme() != SchemeAPIKey || !secrets.Contains("key-0123456789") || strings.Contains(fmt.Sprintf("%v %+v %#v", c, c, c), "key-0123456789") {
		t.Fatalf("credential %v", c)
	}
	var got []http.Header
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = append(got, r.Header.Clone())
		return &http.Response{StatusCode: 204, Body: http.NoBody, Request: r}, nil
	})
	tr := &Transport{Base: base, Origin: Origin("http://a.test/"), Cred: c}
	for _, u := range []string{"http://a.test/x", "http://b.test/x"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("X-API-Key", "key-0123456789") // as if copied by a redirect
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got[0].Get("X-API-Key") != "key-0123456789" || got[0].Get("Authorization") != "" {
		t.Errorf("trusted origin headers %v", got[0])
	}
	if got[1].Get("X-API-Key") != "" {
		t.Errorf("the key left for another origin: %v", got[1])
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// tokenServer is an OAuth2 token endpoint accepting one client.
func tokenServer(t *testing.T, clientID, secret string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, sec, ok := r.BasicAuth()
		if !ok {
			_ = r.ParseForm()
			id, sec = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if id != clientID || sec != secret || r.PostForm.Get("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusUnauthorized)
			// A careless endpoint echoing the request.
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "bad secret " + sec})
			return
		}
		n.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("access-token-%d-%s", n.Load(), r.PostForm.Get("scope")), "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestOAuth2ClientCredentials(t *testing.T) {
	srv, fetched := tokenServer(t, "host-client", "client-secret-123")
	t.Setenv("AUTHREF_CLIENT_SECRET", "client-secret-123")
	secrets := &Secrets{}
	a := Auth{Scheme: SchemeOAuth2, ClientID: "host-client", ClientSecretRef: "env:AUTHREF_CLIENT_SECRET", TokenURL: srv.URL + "/token", Scopes: []string{"a2a"}}
	c, err := ResolveAuth(a, ResolveOptions{Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var auths []string
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		auths = append(auths, r.Header.Get("Authorization"))
		return &http.Response{StatusCode: 204, Body: http.NoBody, Request: r}, nil
	})
	tr := &Transport{Base: base, Origin: Origin("http://agent.test/"), Cred: c}
	for _, u := range []string{"http://agent.test/a", "http://agent.test/b", "http://other.test/c"} {
		req, _ := http.NewRequest(http.MethodPost, u, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if auths[0] != "Bearer access-token-1-a2a" || auths[1] != auths[0] || auths[2] != "" {
		t.Errorf("Authorization headers %q", auths)
	}
	if fetched.Load() != 1 {
		t.Errorf("%d token requests, want 1 (the token is reused until it expires)", fetched.Load())
	}
	if !secrets.Contains("access-token-1-a2a") || !secrets.Contains("client-secret-123") {
		t.Error("the access token and the client secret must be known secrets")
	}

	// Refused credentials: a typed error, no secret in its text.
	t.Setenv("AUTHREF_WRONG_SECRET", "wrong-secret-456")
	a.ClientSecretRef = "env:AUTHREF_WRONG_SECRET"
	c2, err := ResolveAuth(a, ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	tr.Cred = c2
	req, _ := http.NewRequest(http.MethodPost, "http://agent.test/a", strings.NewReader("body"))
	_, err = tr.RoundTrip(req)
	var te *TokenError
	if !errors.As(err, &te) || !errors.Is(err, ErrCredentialsRefused) || te.Status != 401 || te.Code != "invalid_client" {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "wrong-secret-456") {
		t.Errorf("the secret leaked: %v", err)
	}
	// An unreachable endpoint is not a refusal.
	srv.Close()
	c3, _ := ResolveAuth(Auth{Scheme: SchemeOAuth2, ClientID: "x", ClientSecretRef: "env:AUTHREF_CLIENT_SECRET", TokenURL: srv.URL}, ResolveOptions{})
	defer c3.Close()
	tr.Cred = c3
	req, _ = http.NewRequest(http.MethodPost, "http://agent.test/a", nil)
	if _, err = tr.RoundTrip(req); !errors.As(err, &te) || errors.Is(err, ErrCredentialsRefused) || te.Status != 0 {
		t.Fatalf("unreachable endpoint: %v", err)
	}
}

func TestResolveAuthNeedsCompleteness(t *testing.T) {
	t.Setenv("AUTHREF_API_KEY", "key-0123456789")
	if _, err := ResolveAuth(Auth{Scheme: SchemeAPIKey, TokenRef: "env:AUTHREF_API_KEY"}, ResolveOptions{}); err == nil {
		t.Error("an api_key without a header resolved")
	}
	if _, err := ResolveAuth(Auth{Scheme: SchemeBearer, TokenRef: "env:AUTHREF_UNSET_XYZ"}, ResolveOptions{}); err == nil {
		t.Error("an unset reference resolved")
	}
}
