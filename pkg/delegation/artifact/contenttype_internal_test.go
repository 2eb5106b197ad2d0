package artifact

import "testing"

func TestContentTypeSaysUTF8ForText(t *testing.T) {
	for _, c := range []struct {
		mt, content, want string
	}{
		{"text/markdown", "Café – “quotes”", "text/markdown; charset=utf-8"},
		{"text/plain", "plain", "text/plain; charset=utf-8"},
		{"application/json", `{"a":"é"}`, "application/json; charset=utf-8"},
		{"text/plain; charset=iso-8859-1", "caf\xe9", "text/plain; charset=iso-8859-1"}, // the remote's own charset stays
		{"text/plain", "caf\xe9", "text/plain"},                                         // not UTF-8: no claim
		{"image/png", "\x89PNG", "image/png"},
		{"", "x", "application/octet-stream"},
	} {
		if got := contentType(c.mt, []byte(c.content)); got != c.want {
			t.Errorf("contentType(%q, %q) = %q, want %q", c.mt, c.content, got, c.want)
		}
	}
}
