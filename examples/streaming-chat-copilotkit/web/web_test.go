package web

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, method, target string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFSHasTheBuiltApp(t *testing.T) {
	for _, name := range []string{"index.html", "assets/index.js", "assets/index.css"} {
		if _, err := fs.Stat(FS(), name); err != nil {
			t.Errorf("dist is missing %s (run `make ui`): %v", name, err)
		}
	}
	index, err := fs.ReadFile(FS(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`src="/assets/index.js"`, `href="/assets/index.css"`} {
		if !strings.Contains(string(index), want) {
			t.Errorf("index.html does not reference %s", want)
		}
	}
	for _, bad := range []string{"http://", "https://"} {
		if strings.Contains(string(index), bad) {
			t.Errorf("index.html loads something from elsewhere (%s): the UI must work offline", bad)
		}
	}
}

func TestHandler(t *testing.T) {
	tests := []struct {
		name, method, target string
		status               int
		ctype                string
		isIndex              bool
	}{
		{"root", "GET", "/", 200, "text/html; charset=utf-8", true},
		{"index", "GET", "/index.html", 200, "text/html; charset=utf-8", true},
		{"spa route", "GET", "/chat/some-thread", 200, "text/html; charset=utf-8", true},
		{"script", "GET", "/assets/index.js", 200, "text/javascript; charset=utf-8", false},
		{"style", "GET", "/assets/index.css", 200, "text/css; charset=utf-8", false},
		{"head", "HEAD", "/assets/index.js", 200, "text/javascript; charset=utf-8", false},
		{"missing asset", "GET", "/assets/nope.js", 404, "", false},
		{"missing file", "GET", "/favicon.ico", 404, "", false},
		{"api root", "GET", "/agui", 404, "", false},
		{"api path", "GET", "/agui/runs/r1/events", 404, "", false},
		{"health", "GET", "/healthz", 404, "", false},
		{"traversal", "GET", "/../../go.mod", 404, "", false},
		{"post", "POST", "/", 405, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := get(t, tt.method, tt.target, nil)
			b := body(t, resp)
			if resp.StatusCode != tt.status {
				t.Fatalf("%s %s: status %d, want %d", tt.method, tt.target, resp.StatusCode, tt.status)
			}
			if tt.ctype != "" && resp.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type %q, want %q", resp.Header.Get("Content-Type"), tt.ctype)
			}
			if tt.isIndex && !strings.Contains(b, `<div id="root">`) {
				t.Errorf("want index.html, got %.80q", b)
			}
			if tt.status == 200 && resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Error("missing X-Content-Type-Options: nosniff")
			}
		})
	}
}

func TestHandlerRevalidates(t *testing.T) {
	first := get(t, "GET", "/assets/index.js", nil)
	etag := first.Header.Get("ETag")
	if etag == "" || first.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q Cache-Control %q", etag, first.Header.Get("Cache-Control"))
	}
	again := get(t, "GET", "/assets/index.js", map[string]string{"If-None-Match": etag})
	if again.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match: status %d, want 304", again.StatusCode)
	}
}
