package hostconfig

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const refsDoc = `parent: {adapter: codex}
auth: {tokens: [{name: alice, token_ref: env:HC_ALICE}, {name: bob, token_ref: file:%s}]}
agents:
  - {key: a, agent_card_url: http://x, auth_ref: env:HC_AGENT}
  - {key: b, agent_card_url: http://y, auth: {scheme: oauth2, client_id: c, client_secret_ref: env:HC_CLIENT_SECRET}}
cluster: {nats_url: nats://127.0.0.1:4222, creds_ref: env:HC_NATS}
`

// Every reference of the configuration is listed, and each unset variable
// or unreadable file is found at startup: the error names the field and
// the reference, never a value.
func TestResolveRefs(t *testing.T) {
	dir := t.TempDir()
	bobFile := filepath.Join(dir, "bob")
	doc := strings.Replace(refsDoc, "%s", bobFile, 1)
	c, err := Parse("host.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.SecretEnv(); !slices.Equal(got, []string{"HC_ALICE", "HC_AGENT", "HC_CLIENT_SECRET", "HC_NATS"}) {
		t.Fatalf("secret env %q", got)
	}
	set := func() {
		t.Setenv("HC_ALICE", "alice-secret-value")
		t.Setenv("HC_AGENT", "agent-secret-value")
		t.Setenv("HC_CLIENT_SECRET", "client-secret-value")
		t.Setenv("HC_NATS", "-----BEGIN NATS USER JWT-----\nabc\n------END NATS USER JWT------\n")
		if err := os.WriteFile(bobFile, []byte("bob-secret-value\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	set()
	if err := c.ResolveRefs(); err != nil {
		t.Fatalf("all set: %v", err)
	}
	for _, tc := range []struct {
		name, field, ref string
		breakIt          func()
	}{
		{"unset token variable", "auth.tokens[0].token_ref", "env:HC_ALICE", func() { os.Unsetenv("HC_ALICE") }},
		{"missing token file", "auth.tokens[1].token_ref", "file:" + bobFile, func() { os.Remove(bobFile) }},
		{"unset agent auth_ref", "agents[0].auth_ref", "env:HC_AGENT", func() { os.Unsetenv("HC_AGENT") }},
		{"empty client secret", "agents[1].auth.client_secret_ref", "env:HC_CLIENT_SECRET", func() { t.Setenv("HC_CLIENT_SECRET", " ") }},
		{"unset NATS creds", "cluster.creds_ref", "env:HC_NATS", func() { os.Unsetenv("HC_NATS") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set()
			tc.breakIt()
			err := c.ResolveRefs()
			var e *Error
			if !errors.As(err, &e) || e.Field != tc.field || !strings.Contains(err.Error(), tc.ref) {
				t.Fatalf("err = %v, want %s naming %s", err, tc.field, tc.ref)
			}
			for _, v := range []string{"alice-secret-value", "bob-secret-value", "agent-secret-value", "client-secret-value", "NATS USER JWT"} {
				if strings.Contains(err.Error(), v) {
					t.Errorf("the error shows a value: %v", err)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("not one line: %q", err)
			}
		})
	}
}

func TestThirdWaveFields(t *testing.T) {
	c, err := Parse("host.yaml", []byte("parent: {adapter: codex, env: {allow: [LANG, 'ANTHROPIC_*'], deny: [AWS_SECRET_ACCESS_KEY]}}\naudit_file: a.jsonl\naudit_max_bytes: 1048576\naudit_max_files: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxConnections != DefaultMaxConnections || c.AuditMaxBytes != 1<<20 || c.AuditMaxFiles != 3 || len(c.Parent.Env.Allow) != 2 || c.Parent.Env.Deny[0] != "AWS_SECRET_ACCESS_KEY" {
		t.Fatalf("%+v", c)
	}
	for _, tt := range []struct{ name, doc, field string }{
		{"negative max_connections", "max_connections: -1\n", "max_connections"},
		{"rotation without a file", "audit_max_bytes: 100\n", "audit_max_bytes"},
		{"files without rotation", "audit_file: a\naudit_max_files: 2\n", "audit_max_files"},
		{"negative audit_max_bytes", "audit_file: a\naudit_max_bytes: -1\n", "audit_max_bytes"},
		{"bad env name", "parent: {env: {deny: ['A=B']}}\n", "parent.env.deny[0]"},
		{"unknown env field", "parent: {env: {pass: [A]}}\n", "pass"},
		{"allowing a secret", "parent: {adapter: codex, env: {allow: [LANG, HC_T]}}\nauth: {tokens: [{name: a, token_ref: env:HC_T}]}\n", "parent.env.allow[1]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("host.yaml", []byte(tt.doc))
			var e *Error
			if !errors.As(err, &e) || e.Field != tt.field {
				t.Fatalf("got %v, want an error on %s", err, tt.field)
			}
		})
	}
}
