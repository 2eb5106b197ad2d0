package artifact_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
)

// TestArtifactServedOnlyUnderItsOwnRun specifies that an artifact is
// reachable only through the run that owns it: the same delegation and
// artifact ids under another run are not found (docs/design.md#audit-and-
// artifacts; docs/design.md#secrets, "Principals own their runs").
func TestArtifactServedOnlyUnderItsOwnRun(t *testing.T) {
	store := artifact.NewMemoryStore(0)
	ctx := context.Background()
	for _, a := range []artifact.Stored{
		{RunID: "run-alice", DelegationID: "del-1", ID: "report.md", Name: "report.md", MimeType: "text/markdown", Content: []byte("alice's secret")},
		{RunID: "run-carol", DelegationID: "del-2", ID: "notes.txt", Name: "notes.txt", MimeType: "text/plain", Content: []byte("carol's notes")},
	} {
		if err := store.Put(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(artifact.Handler(store))
	defer srv.Close()

	for _, tc := range []struct {
		name, path string
		status     int
		body       string
	}{
		{"owner run", "/agui/runs/run-alice/delegations/del-1/artifacts/report.md", http.StatusOK, "alice's secret"},
		{"another run", "/agui/runs/run-bob/delegations/del-1/artifacts/report.md", http.StatusNotFound, ""},
		{"another run that exists", "/agui/runs/run-carol/delegations/del-1/artifacts/report.md", http.StatusNotFound, ""},
		{"another delegation", "/agui/runs/run-alice/delegations/del-2/artifacts/notes.txt", http.StatusNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := get(t, srv.URL+tc.path)
			if status != tc.status {
				t.Fatalf("status %d, want %d (body %q)", status, tc.status, body)
			}
			if tc.status == http.StatusOK && body != tc.body {
				t.Errorf("body %q, want %q", body, tc.body)
			}
			if tc.status != http.StatusOK && (strings.Contains(body, "secret") || strings.Contains(body, "notes")) {
				t.Errorf("404 leaks content: %q", body)
			}
		})
	}

	// The store itself keys by run too: a Get for another run is ErrNotFound.
	if _, err := store.Get(ctx, "run-bob", "del-1", "report.md"); err != artifact.ErrNotFound {
		t.Errorf("Get under another run: %v, want ErrNotFound", err)
	}
}

// TestArtifactServedSandboxed specifies that remote content is served so it
// never runs as a page of the host's origin: Content-Security-Policy
// sandbox with no sources, and nosniff, whatever the media type the remote
// claimed (docs/design.md#audit-and-artifacts).
func TestArtifactServedSandboxed(t *testing.T) {
	store := artifact.NewMemoryStore(0)
	ctx := context.Background()
	for _, mt := range []string{"text/html", "image/svg+xml", "application/javascript", "text/plain", ""} {
		id := strings.NewReplacer("/", "-", "+", "-").Replace(mt)
		if id == "" {
			id = "none"
		}
		if err := store.Put(ctx, artifact.Stored{RunID: "run-1", DelegationID: "del-1", ID: id, Name: id, MimeType: mt,
			Content: []byte(`<script>fetch("/agui/runs")</script>`)}); err != nil {
			t.Fatal(err)
		}
		t.Run(id, func(t *testing.T) {
			srv := httptest.NewServer(artifact.Handler(store))
			defer srv.Close()
			status, h, _ := get(t, srv.URL+"/agui/runs/run-1/delegations/del-1/artifacts/"+id)
			if status != http.StatusOK {
				t.Fatalf("status %d", status)
			}
			csp := h.Get("Content-Security-Policy")
			directives := map[string]bool{}
			for d := range strings.SplitSeq(csp, ";") {
				directives[strings.TrimSpace(d)] = true
			}
			if !directives["sandbox"] || !directives["default-src 'none'"] {
				t.Errorf("Content-Security-Policy %q, want sandbox and default-src 'none'", csp)
			}
			if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q, want nosniff", got)
			}
		})
	}
}

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}
