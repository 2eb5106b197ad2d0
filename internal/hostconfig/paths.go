package hostconfig

import (
	"path/filepath"
	"strings"
)

// ResolvePaths makes the file paths of c that are relative absolute against
// dir, the directory of the config file ([Load] calls it), so a config
// means the same files whatever the current directory: parent.scenario,
// parent.work_dir, parent.binary when it is a path (has a '/'; a bare name
// is looked up on PATH), audit_file, and every file: auth reference
// (auth.tokens[].token_ref, agents' auth_ref, auth.token_ref and
// auth.client_secret_ref, cluster.creds_ref). Empty and absolute paths are
// left as they are. dir itself is made absolute first.
func (c *Config) ResolvePaths(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	path := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(abs, *p)
		}
	}
	ref := func(r *string) {
		if rest, ok := strings.CutPrefix(*r, "file:"); ok && rest != "" && !filepath.IsAbs(rest) {
			*r = "file:" + filepath.Join(abs, rest)
		}
	}
	path(&c.Parent.Scenario)
	path(&c.Parent.WorkDir)
	if strings.ContainsRune(c.Parent.Binary, '/') {
		path(&c.Parent.Binary)
	}
	path(&c.AuditFile)
	for i := range c.Auth.Tokens {
		ref(&c.Auth.Tokens[i].TokenRef)
	}
	for i := range c.Agents {
		a := &c.Agents[i]
		ref(&a.AuthRef)
		if a.Auth != nil {
			ref(&a.Auth.TokenRef)
			ref(&a.Auth.ClientSecretRef)
		}
	}
	ref(&c.Cluster.CredsRef)
	return nil
}
