// Package hosttest is test support: it serves a host (pkg/host) on a
// loopback test server for the length of a test and shuts both down in
// order when the test ends ([Serve]), the setup the host's, the command's
// and the end-to-end tests share. Only tests import it.
package hosttest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/pkg/host"
)

// ShutdownTimeout bounds the host's Shutdown when a test ends: generous,
// since it waits for the runs a test left behind and their processes.
const ShutdownTimeout = 30 * time.Second

// Serve serves h's handler on a new loopback httptest.Server and returns
// it. When the test ends (t.Cleanup, so after the test's own deferred
// calls and before the cleanups registered earlier, such as t.TempDir's),
// it shuts the host down first (runs cancelled, their streams ended, the
// parents reaped), bounded by ShutdownTimeout, then closes the server,
// then drops the default client's idle connections so that goleak sees
// none of them. A Shutdown error is logged, not failed: a test that cares
// calls Shutdown itself.
func Serve(t testing.TB, h *host.Host) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Logf("host shutdown: %v", err)
		}
		srv.Close()
		http.DefaultClient.CloseIdleConnections()
	})
	return srv
}
