package artifact

import (
	"strings"
	"testing"
)

func TestSanitizeMeta(t *testing.T) {
	m := SanitizeMeta("../../etc/passwd", "name\x00with\ncontrol", "text/html; charset=utf-8")
	if strings.Contains(m.ID, "/") || m.Name != "namewithcontrol" || m.MimeType != "text/html; charset=utf-8" {
		t.Errorf("%+v", m)
	}
	if m := SanitizeMeta("", "", "not a mime"); m.ID != "" || m.Name != "artifact" || m.MimeType != "" {
		t.Errorf("%+v", m)
	}
	if _, _, ok := ParseURI("host://delegations/del-1/artifacts/a.md"); !ok {
		t.Error("valid URI rejected")
	}
	if _, _, ok := ParseURI("host://delegations/../artifacts/x"); ok {
		t.Error("traversal accepted")
	}
}
