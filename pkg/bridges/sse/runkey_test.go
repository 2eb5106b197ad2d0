package sse_test

import (
	"testing"

	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
)

// A run key is the runId in its principal's namespace: without a principal
// it is the runId (what every host without authentication and every test
// keeps using), keys of different principals (or none) never collide, and
// SplitRunKey gives back the principal and the client's runId exactly.
func TestRunKeysNamespaceRunIDsPerPrincipal(t *testing.T) {
	cases := []struct{ principal, runID string }{
		{"", "run-1"}, {"alice", "run-1"}, {"bob", "run-1"}, {"alice", ""}, {"", "~"}, {"", "~5:alice/run-1"},
		{"a/b", "c"}, {"a", "b/c"}, {"al:ce", "x"}, {"", "~0:/x"}, {"alice", "~5:alice/run-1"}, {"", ""},
	}
	seen := map[string]string{}
	for _, c := range cases {
		key := sse.RunKey(c.principal, c.runID)
		if c.principal == "" && c.runID != "" && c.runID[0] != '~' && key != c.runID {
			t.Errorf("RunKey(%q, %q) = %q, want the runId itself", c.principal, c.runID, key)
		}
		if prev, dup := seen[key]; dup {
			t.Errorf("RunKey(%q, %q) = %q collides with %s", c.principal, c.runID, key, prev)
		}
		seen[key] = c.principal + "|" + c.runID
		p, r := sse.SplitRunKey(key)
		if p != c.principal || r != c.runID {
			t.Errorf("SplitRunKey(%q) = %q, %q; want %q, %q", key, p, r, c.principal, c.runID)
		}
	}
	// Anything that is not a key of a principal is a bare runId.
	for _, s := range []string{"~x", "~5:ali/x", "~-1:/x", "~01:a/x", "~3:abc"} {
		if p, r := sse.SplitRunKey(s); p != "" || r != s {
			t.Errorf("SplitRunKey(%q) = %q, %q; want a bare runId", s, p, r)
		}
	}
}

func FuzzRunKey(f *testing.F) {
	f.Add("alice", "run-1")
	f.Add("", "~3:abc/d")
	f.Fuzz(func(t *testing.T, principal, runID string) {
		p, r := sse.SplitRunKey(sse.RunKey(principal, runID))
		if p != principal || r != runID {
			t.Fatalf("(%q, %q) came back as (%q, %q)", principal, runID, p, r)
		}
	})
}
