package hostconfig

import (
	"os"
	"path/filepath"
	"testing"
)

// A config's relative file paths mean the files beside it, whatever the
// current directory: a copied config works from its own folder and from
// anywhere else.
func TestLoadResolvesPathsAgainstTheConfigFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conf")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	doc := `
audit_file: audit/host.jsonl
parent: {adapter: scripted, scenario: parent.yaml, work_dir: ../work, binary: ./bin/agent}
auth:
  tokens:
    - {name: alice, token_ref: file:secrets/alice}
    - {name: bob, token_ref: env:BOB_TOKEN}
    - {name: carol, token_ref: file:/run/secrets/carol}
agents:
  - {key: a, agent_card_url: "http://127.0.0.1:1/card", auth_ref: file:secrets/a}
  - key: b
    agent_card_url: "http://127.0.0.1:1/card"
    auth: {scheme: oauth2, client_id: me, client_secret_ref: file:secrets/b}
  - key: c
    agent_card_url: "http://127.0.0.1:1/card"
    auth: {scheme: bearer, token_ref: file:secrets/c}
`
	cfgPath := filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(cfgPath, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cwd := range []string{dir, t.TempDir()} {
		t.Run(cwd, func(t *testing.T) {
			t.Chdir(cwd)
			rel, err := filepath.Rel(cwd, cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Load(rel)
			if err != nil {
				t.Fatal(err)
			}
			for _, tt := range []struct{ name, got, want string }{
				{"audit_file", c.AuditFile, filepath.Join(dir, "audit/host.jsonl")},
				{"parent.scenario", c.Parent.Scenario, filepath.Join(dir, "parent.yaml")},
				{"parent.work_dir", c.Parent.WorkDir, filepath.Join(filepath.Dir(dir), "work")},
				{"parent.binary", c.Parent.Binary, filepath.Join(dir, "bin/agent")},
				{"file: token_ref", c.Auth.Tokens[0].TokenRef, "file:" + filepath.Join(dir, "secrets/alice")},
				{"env: token_ref", c.Auth.Tokens[1].TokenRef, "env:BOB_TOKEN"},
				{"absolute file: ref", c.Auth.Tokens[2].TokenRef, "file:/run/secrets/carol"},
				{"auth_ref", c.Agents[0].AuthRef, "file:" + filepath.Join(dir, "secrets/a")},
				{"client_secret_ref", c.Agents[1].Auth.ClientSecretRef, "file:" + filepath.Join(dir, "secrets/b")},
				{"auth.token_ref", c.Agents[2].Auth.TokenRef, "file:" + filepath.Join(dir, "secrets/c")},
			} {
				if tt.got != tt.want {
					t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
				}
			}
		})
	}
	// A bare binary name is looked up on PATH, not beside the config.
	c := &Config{Parent: Parent{Binary: "claude"}}
	if err := c.ResolvePaths(dir); err != nil || c.Parent.Binary != "claude" {
		t.Fatalf("binary %q, %v", c.Parent.Binary, err)
	}
}
