package sanitize

import "testing"

// An id a remote agent chose becomes a path segment of host:// URIs and
// routes: ID never returns one holding "..", wherever the dots were in the
// input (start, middle, end, or made of replaced characters), and what it
// returns is SafeID (docs/design.md#audit-and-artifacts).
func TestIDHasNoDotDotAnywhere(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"../etc", "__etc"},
		{"a..b", "a._b"},
		{"art/../../secret", "art_.__.__secret"},
		{"x...y", "x._.y"},
		{"tail..", "tail._"},
		{"a.b.c", "a.b.c"},
	} {
		got := ID(tt.in)
		if got != tt.want {
			t.Errorf("ID(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if !SafeID(got) {
			t.Errorf("ID(%q) = %q is not a safe path segment", tt.in, got)
		}
	}
}
