package httpguard_test

import (
	"net/http"
	"testing"

	"github.com/seed0634/agentadaptor/internal/httpguard"
)

// An origin is scheme, host and port: a page served by another local
// server (another port of the same host) is cross-origin and may not read
// a run's stream or call the API, while the same scheme, host and port
// may (docs/design.md#secrets).
func TestSameOriginIncludesThePort(t *testing.T) {
	h := guard(t, httpguard.Config{Addr: "127.0.0.1:8080", TrustedOrigins: []string{"http://127.0.0.1:3000"}})
	for _, tt := range []struct {
		name, method, origin, site string
		want                       int
	}{
		{"same origin GET", "GET", "http://127.0.0.1:8080", "", http.StatusOK},
		{"another port GET", "GET", "http://127.0.0.1:9999", "", http.StatusForbidden},
		{"another port, same site", "GET", "http://127.0.0.1:9999", "same-site", http.StatusForbidden},
		{"no port GET", "GET", "http://127.0.0.1", "", http.StatusForbidden},
		{"another scheme GET", "GET", "https://127.0.0.1:8080", "", http.StatusForbidden},
		{"another loopback name GET", "GET", "http://localhost:8080", "", http.StatusForbidden},
		{"another port POST from an old browser", "POST", "http://127.0.0.1:9999", "", http.StatusForbidden},
		{"trusted origin", "GET", "http://127.0.0.1:3000", "", http.StatusOK},
		{"the trusted origin's host on another port", "GET", "http://127.0.0.1:3001", "", http.StatusForbidden},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{"Origin": tt.origin}
			if tt.site != "" {
				hdr["Sec-Fetch-Site"] = tt.site
			}
			q := req{method: tt.method, host: "127.0.0.1:8080", path: "/agui/runs/r/events", header: hdr}
			if tt.method == "POST" {
				q.path, q.ct, q.body = "/agui", "application/json", "{}"
			}
			if w := do(h, q); w.Code != tt.want {
				t.Fatalf("Origin %s: %d %s, want %d", tt.origin, w.Code, w.Body, tt.want)
			}
		})
	}
}
