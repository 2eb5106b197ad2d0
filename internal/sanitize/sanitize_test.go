package sanitize

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSanitizers(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"ID keeps safe characters", ID("task-1.a:b_c"), "task-1.a:b_c"},
		{"ID replaces others", ID("a/b c"), "a_b_c"},
		{"ID refuses traversal", ID("../../etc"), "__.__etc"},
		{"ID of nothing usable", ID("///"), ""},
		{"ID is bounded", ID(strings.Repeat("x", 100)), strings.Repeat("x", 64)},
		{"Line drops controls", Line("a\nb\u2028c\x7f", 10), "abc"},
		{"Line is bounded", Line("héllo", 3), "hé"},
		{"Text keeps newlines", Text("a\nb\tc\x01", 10), "a\nb\tc"},
		{"Text marks a cut", Text("abcdef", 3), "abc…"},
		{"Truncate on a rune boundary", Truncate("héllo", 2), "h…"},
		{"MediaType keeps charset", MediaType("text/plain; charset=utf-8"), "text/plain; charset=utf-8"},
		{"MediaType refuses junk", MediaType("not a type"), ""},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func FuzzSanitizers(f *testing.F) {
	for _, s := range []string{"", "a/b", "..", "\xff\xfe", "text/plain; charset=\"x\"", strings.Repeat("é", 50)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if id := ID(s); id != "" && !SafeID(id) {
			t.Fatalf("ID(%q) = %q is not safe", s, id)
		}
		for _, out := range []string{Line(s, 20), Text(s, 20), Truncate(s, 20), MediaType(s)} {
			if !utf8.ValidString(out) && utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 out of valid input %q: %q", s, out)
			}
		}
		if l := Line(s, 20); len(l) > 20 {
			t.Fatalf("Line(%q) longer than its bound: %q", s, l)
		}
	})
}

// The fast paths (input already clean) return what the general ones build.
func FuzzFastPathsMatch(f *testing.F) {
	for _, s := range []string{"", "task-1", "a..b", ".a", "a.", "___", "_a_", " padded ", "a\tb\nc", strings.Repeat("x", 64), strings.Repeat("y", 65), "é"} {
		f.Add(s, 20)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = max%100 + 1
		if max < 1 {
			max = -max + 1
		}
		if got, want := ID(s), idSlow(s); got != want {
			t.Fatalf("ID(%q) = %q, general path %q", s, got, want)
		}
		if got, want := Line(s, max), lineSlow(s, max); got != want {
			t.Fatalf("Line(%q, %d) = %q, general path %q", s, max, got, want)
		}
		if got, want := Text(s, max), textSlow(s, max); got != want {
			t.Fatalf("Text(%q, %d) = %q, general path %q", s, max, got, want)
		}
	})
}
