package hostconfig

import (
	"errors"
	"slices"
	"testing"
)

func TestParentACP(t *testing.T) {
	c, err := Parse("host.yaml", []byte("parent: {adapter: acp, binary: gemini, args: [--experimental-acp], permissions: {allow: ['kind:read'], deny: [Shell]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Parent
	if p.Adapter != "acp" || p.Binary != "gemini" || !slices.Equal(p.Args, []string{"--experimental-acp"}) ||
		!slices.Equal(p.Permissions.Allow, []string{"kind:read"}) || !slices.Equal(p.Permissions.Deny, []string{"Shell"}) {
		t.Errorf("parent %+v", p)
	}
	for _, tt := range []struct{ name, doc, field string }{
		{"no binary", "parent: {adapter: acp}\n", "parent.binary"},
		{"model", "parent: {adapter: acp, binary: gemini, model: x}\n", "parent.model"},
		{"bad pattern", "parent: {adapter: acp, binary: gemini, permissions: {allow: ['[']}}\n", "parent.permissions[0]"},
		{"args on claude", "parent: {adapter: claude, args: [x]}\n", "parent.args"},
		{"permissions on codex", "parent: {adapter: codex, permissions: {deny: [x]}}\n", "parent.args"},
		{"unknown permission field", "parent: {adapter: acp, binary: g, permissions: {ask: [x]}}\n", "ask"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("host.yaml", []byte(tt.doc))
			var e *Error
			if !errors.As(err, &e) || e.Field != tt.field {
				t.Fatalf("err = %v, want an error on field %q", err, tt.field)
			}
		})
	}
}
