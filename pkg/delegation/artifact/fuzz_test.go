package artifact

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/seed0634/agentadaptor/internal/sanitize"
)

func FuzzArtifactMetadata(f *testing.F) {
	f.Add("notes.md", "a2a-sdk-notes.md", "text/markdown", []byte(`{"summary":"s","status":"completed","artifacts":[{"id":"a","name":"b","mime_type":"c"}]}`))
	f.Add("../../etc/passwd", "\x00\u2028evil", "text/html; charset=\"x\"", []byte(`{"summary":5}`))
	f.Add("", "", "", []byte(`null`))
	f.Add("a..b", "…", "application/json; x=y", []byte(`[]`))
	f.Fuzz(func(t *testing.T, id, name, mime string, _ []byte) {
		m := SanitizeMeta(id, name, mime)
		if m.ID != "" && !sanitize.SafeID(m.ID) {
			t.Fatalf("unsafe id %q", m.ID)
		}
		if m.ID != "" {
			d, a, ok := ParseURI(URI("del-1", m.ID))
			if !ok || d != "del-1" || a != m.ID {
				t.Fatalf("URI round trip of %q failed", m.ID)
			}
		}
		if m.Name == "" || !utf8.ValidString(m.Name) || len(m.Name) > 200 || strings.ContainsAny(m.Name, "\x00\n\r") {
			t.Fatalf("bad name %q", m.Name)
		}
		if m.MimeType != "" && sanitize.MediaType(m.MimeType) != m.MimeType {
			t.Fatalf("mime %q not stable", m.MimeType)
		}
	})
}
