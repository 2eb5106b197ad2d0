package mcptool_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// The delegation MCP endpoint serves local CLIs, never a browser: a
// request that carries any Origin header is refused (403) even with a live
// run token — a page on the internet, a sandboxed page or file (Origin:
// null), a browser extension, and a page served from loopback itself (the
// endpoint's own origin, another local port, localhost), since a web page
// reaching a loopback port must not drive delegations. The CLI's request,
// which carries no Origin, is served (docs/design.md#secrets, "The MCP
// endpoint").
func TestMCPEndpointRefusesEveryBrowserOrigin(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Completed("ok"))
	e := newEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	e.ensureRun(t, "run-1", tokenA)
	u, err := url.Parse(e.srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(t *testing.T, origin string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL(), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tokenA)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	for _, tc := range []struct{ name, origin string }{
		{"remote site", "https://evil.example"},
		{"opaque origin", "null"},
		{"the endpoint's own origin", "http://" + u.Host},
		{"another loopback port", "http://127.0.0.1:1"},
		{"loopback over https", "https://127.0.0.1"},
		{"localhost", "http://localhost:" + u.Port()},
		{"IPv6 loopback", "http://[::1]:" + u.Port()},
		{"browser extension", "chrome-extension://abcdefghijklmnop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, session := post(t, tc.origin); code != http.StatusForbidden || session != "" {
				t.Fatalf("Origin %q with a live token: status %d, session %q; want 403 and no session", tc.origin, code, session)
			}
		})
	}
	t.Run("the CLI (no Origin)", func(t *testing.T) {
		if code, session := post(t, ""); code != http.StatusOK || session == "" {
			t.Fatalf("the CLI's initialize: status %d, session %q; want 200 and a session", code, session)
		}
	})
}
