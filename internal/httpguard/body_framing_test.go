package httpguard_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/internal/httpguard"
)

// A request body must be JSON however it is framed: a body sent with
// Transfer-Encoding: chunked (no Content-Length, as a client streaming its
// body sends it) is refused with 415 unless it is JSON, exactly like a body
// with a Content-Length (docs/design.md#secrets, "Admission of every
// request").
func TestBodyMustBeJSONHoweverItIsFramed(t *testing.T) {
	srv := httptest.NewServer(guard(t, httpguard.Config{Addr: "127.0.0.1:8080"}))
	defer srv.Close()
	for _, tt := range []struct {
		name, ct string
		chunked  bool
		want     int
	}{
		{"text/plain with a Content-Length", "text/plain", false, http.StatusUnsupportedMediaType},
		{"chunked text/plain", "text/plain", true, http.StatusUnsupportedMediaType},
		{"chunked form", "application/x-www-form-urlencoded", true, http.StatusUnsupportedMediaType},
		{"chunked without a Content-Type", "", true, http.StatusUnsupportedMediaType},
		{"chunked JSON", "application/json", true, http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A reader of unknown length makes the client send the body chunked.
			var body io.Reader = strings.NewReader(`{"a":1}`)
			if tt.chunked {
				body = io.MultiReader(body)
			}
			r, err := http.NewRequest("POST", srv.URL+"/agui", body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.ct != "" {
				r.Header.Set("Content-Type", tt.ct)
			}
			resp, err := srv.Client().Do(r)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, b)
			}
		})
	}
}
