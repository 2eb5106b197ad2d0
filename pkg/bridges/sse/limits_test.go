package sse_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/seed0634/agentadaptor/internal/testkit/ssetest"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
)

// WithMaxActiveRuns (the host's max_active_runs) bounds the chat runs, each
// a parent CLI process: with the limit's runs active, one more run — with a
// runId of its own or without — gets 429 with Retry-After and starts
// nothing; once a run has ended, a new one is admitted again
// (docs/design.md#secrets, "Bounded state").
func TestMaxActiveRunsBoundsTheChats(t *testing.T) {
	leakCheck(t)
	const limit = 2
	f := newFixture(t, sse.WithMaxActiveRuns(limit))
	for _, id := range []string{"max-1", "max-2"} {
		resp := ssetest.Post(t, f.url(), input("th", id, "slow"))
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("run %s within the limit: %d", id, resp.StatusCode)
		}
		readUntil(t, bufio.NewReader(resp.Body), "TEXT_MESSAGE_CONTENT")
	}
	for _, id := range []string{"max-3", ""} {
		resp := ssetest.Post(t, f.url(), input("th", id, "plain"))
		var e struct{ Error struct{ Code string } }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || e.Error.Code != "too_many_runs" || resp.Header.Get("Retry-After") == "" {
			t.Errorf("run %q beyond the limit: %d %q Retry-After %q, want 429 too_many_runs with Retry-After",
				id, resp.StatusCode, e.Error.Code, resp.Header.Get("Retry-After"))
		}
	}
	if n := f.handler.Registry().Len(); n != limit {
		t.Errorf("registry holds %d runs, want %d (a refused run takes no place)", n, limit)
	}

	// One run ends: its place is free again.
	if err := f.handler.Registry().Cancel(context.Background(), "max-1"); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, f.handle(t, "max-1"))
	testenv.WaitUntil(t, "the ended run to free its place", func() bool { return f.handler.Registry().Len() < limit })
	resp := ssetest.Post(t, f.url(), input("th", "max-4", "plain"))
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("run after one ended: %d, want 200", resp.StatusCode)
	}
	if err := f.handler.Registry().Cancel(context.Background(), "max-2"); err != nil {
		t.Fatal(err)
	}
	f.waitAllEnded(t)
}

// An origin is scheme, host and port: without WithAllowedOrigins naming it,
// a page on another port of the handler's own host (another local server)
// is cross-origin and refused, as is another name or scheme for the same
// address; only the handler's exact origin passes (docs/design.md#secrets,
// "Browser requests").
func TestSameOriginIsSchemeHostAndPort(t *testing.T) {
	leakCheck(t)
	f := newFixture(t)
	u, err := url.Parse(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	otherPort := "1"
	if u.Port() == otherPort {
		otherPort = "2"
	}
	for _, tt := range []struct {
		name, origin string
		want         int
	}{
		{"own origin", f.srv.URL, http.StatusOK},
		{"another port of the same host", "http://" + u.Hostname() + ":" + otherPort, http.StatusForbidden},
		{"the same host without a port", "http://" + u.Hostname(), http.StatusForbidden},
		{"another name for the same address", "http://localhost:" + u.Port(), http.StatusForbidden},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := ssetest.Post(t, f.url(), input("th", "", "plain"), "Origin", tt.origin)
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("Origin %s: %d, want %d", tt.origin, resp.StatusCode, tt.want)
			}
			if tt.want == http.StatusForbidden && resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("Origin %s: a refused origin got Access-Control-Allow-Origin %q", tt.origin, resp.Header.Get("Access-Control-Allow-Origin"))
			}
		})
	}
	f.waitAllEnded(t)
}
