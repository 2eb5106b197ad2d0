package agui

import (
	"net/http"
	"testing"
)

type recordRT struct{ got []string }

func (r *recordRT) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got = append(r.got, req.Header.Get("Authorization"))
	return &http.Response{StatusCode: 204, Body: http.NoBody, Request: req}, nil
}

func TestAuthTransportBindsTheCredentialToTheOrigin(t *testing.T) {
	base := &recordRT{}
	tr := &authTransport{base: base, origin: Origin("http://127.0.0.1:8080/agui"), cred: NewCredential("test", "s3cret")}
	for _, u := range []string{
		"http://127.0.0.1:8080/agui", "HTTP://127.0.0.1:8080/other", // same origin
		"http://127.0.0.1:8081/agui", "https://127.0.0.1:8080/agui", "http://localhost:8080/agui", // other origins
	} {
		req, _ := http.NewRequest(http.MethodPost, u, nil)
		req.Header.Set("Authorization", "Bearer from-elsewhere")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if req.Header.Get("Authorization") != "Bearer from-elsewhere" {
			t.Fatal("RoundTrip modified the caller's request")
		}
	}
	want := []string{"Bearer s3cret", "Bearer s3cret", "", "", ""}
	for i := range want {
		if base.got[i] != want[i] {
			t.Errorf("request %d: Authorization %q, want %q", i, base.got[i], want[i])
		}
	}
	if Origin("http://example.com") != "http://example.com:80" || Origin("https://EXAMPLE.com/x") != "https://example.com:443" ||
		Origin("ftp://x") != "" || Origin("/rel") != "" {
		t.Error("Origin")
	}
}
