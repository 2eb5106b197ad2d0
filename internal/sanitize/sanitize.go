// Package sanitize turns text that a remote agent chose (ids, names, media
// types, messages) into values safe to put into URIs, file names, UI text,
// tool results and logs: bounded, printable, valid UTF-8. Every function is
// total: it never fails and never panics, whatever the input.
//
// It must not know any protocol or hold secrets: redaction of known secrets
// is pkg/credentials's job and happens before sanitizing.
package sanitize

import (
	"mime"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Patterns of the values this package produces.
var (
	// MediaTypePattern returns the pattern of a bare media type such as
	// "text/markdown" (compiled on first use).
	MediaTypePattern = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,63}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,63}$`)
	// IDPattern returns the pattern of what [ID] returns: 1-64 of
	// [A-Za-z0-9_.:-] (compiled on first use).
	IDPattern = lazyRegexp(`^[A-Za-z0-9_.:-]{1,64}$`)
)

// ID returns s as an identifier safe in a URI path segment: at most 64
// characters of [A-Za-z0-9_.:-] (others become '_'), no "..", no leading or
// trailing '.'. It returns "" when nothing usable is left.
func ID(s string) string {
	if idAsIs(s) {
		return s // already an identifier: nothing to build
	}
	return idSlow(s)
}

// idAsIs reports whether ID(s) is s: 1-64 allowed characters, no "..",
// no leading or trailing '.', not only '_'.
func idAsIs(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	underscores := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':') {
			return false
		}
		underscores = underscores && c == '_'
	}
	return !underscores
}

func idSlow(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.', r == ':':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := b.String()
	for strings.Contains(out, "..") {
		out = strings.ReplaceAll(out, "..", "._")
	}
	out = strings.Trim(out, ".")
	if out == "" || strings.Trim(out, "_") == "" {
		return ""
	}
	return out
}

// SafeID reports whether s is usable as a path segment of a host URI as is.
func SafeID(s string) bool {
	return IDPattern().MatchString(s) && !strings.Contains(s, "..") && strings.Trim(s, ".") != ""
}

// Line returns s as one line of printable text of at most max bytes:
// control characters (including newlines), C1 controls, line separators
// and invalid UTF-8 are dropped, surrounding space trimmed.
func Line(s string, max int) string {
	if len(s) <= max && printableASCII(s, false) {
		return strings.TrimSpace(s) // nothing to drop or cut
	}
	return lineSlow(s, max)
}

// printableASCII reports whether s is printable ASCII (with '\n' and '\t'
// when text): what Line and Text keep as is.
func printableASCII(s string, text bool) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 || c > 0x7e) && !(text && (c == '\n' || c == '\t')) {
			return false
		}
	}
	return true
}

func lineSlow(s string, max int) string {
	var b strings.Builder
	for _, r := range s {
		if r == utf8.RuneError || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > max {
			break
		}
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}

// Text returns s with control characters other than newline and tab and
// invalid UTF-8 dropped, bounded to max bytes; a cut is marked with "…".
func Text(s string, max int) string {
	if len(s) <= max && printableASCII(s, true) {
		return s // nothing to drop or cut
	}
	return textSlow(s, max)
}

func textSlow(s string, max int) string {
	var b strings.Builder
	for _, r := range s {
		if r == utf8.RuneError || (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > max {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Truncate returns s cut to at most n bytes on a rune boundary, marked with
// "…" when cut. It does not otherwise change s.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// MediaType returns s as a syntactically valid media type (keeping a
// well-formed charset parameter), or "" when it is not one.
func MediaType(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 200 {
		return ""
	}
	mt, params, err := mime.ParseMediaType(s)
	if err != nil || !MediaTypePattern().MatchString(mt) {
		return ""
	}
	if cs, ok := params["charset"]; ok && IDPattern().MatchString(cs) {
		return mt + "; charset=" + cs
	}
	return mt
}

// lazyRegexp compiles expr on first use: a process that never uses a
// pattern (the scripted agent re-executing this binary, a CLI command)
// does not pay for it at start.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
