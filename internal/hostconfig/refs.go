package hostconfig

import (
	"fmt"
	"strings"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

// Ref is one auth reference of a configuration: where it is and what it
// says ("env:NAME" or "file:/path"; not secret).
type Ref struct {
	// Field names it, e.g. "agents[0].auth_ref".
	Field string
	// Ref is the reference as configured.
	Ref string
	// Multiline marks a reference whose content spans lines (a NATS .creds
	// file); every other one holds a single-line token.
	Multiline bool
}

// Refs lists every auth reference of c: the principals' tokens, the
// agents' auth_ref and auth block secrets, the cluster's credentials.
func (c *Config) Refs() []Ref {
	var out []Ref
	add := func(field, ref string, multiline bool) {
		if ref != "" {
			out = append(out, Ref{Field: field, Ref: ref, Multiline: multiline})
		}
	}
	for i, t := range c.Auth.Tokens {
		add(fmt.Sprintf("auth.tokens[%d].token_ref", i), t.TokenRef, false)
	}
	for i, a := range c.Agents {
		add(fmt.Sprintf("agents[%d].auth_ref", i), a.AuthRef, false)
		if a.Auth != nil {
			add(fmt.Sprintf("agents[%d].auth.token_ref", i), a.Auth.TokenRef, false)
			add(fmt.Sprintf("agents[%d].auth.client_secret_ref", i), a.Auth.ClientSecretRef, false)
		}
	}
	add("cluster.creds_ref", c.Cluster.CredsRef, true)
	return out
}

// SecretEnv returns the names of the environment variables c's env:
// references name: the host's secrets, which no child process may inherit.
func (c *Config) SecretEnv() []string {
	var out []string
	for _, r := range c.Refs() {
		if name, ok := strings.CutPrefix(r.Ref, "env:"); ok && name != "" {
			out = append(out, name)
		}
	}
	return out
}

// ResolveRefs resolves every auth reference of c now, so that a variable
// that is not set or a file that cannot be read stops the host at startup
// rather than at the first delegation that needs it. The error is an
// [*Error] naming the field and the reference, never a value; what was
// resolved is not kept (each use resolves again, so a rotated file is read
// anew).
func (c *Config) ResolveRefs() error {
	for _, r := range c.Refs() {
		var err error
		if r.Multiline {
			_, err = credentials.ReadDocument(r.Ref)
		} else {
			_, err = credentials.Resolve(r.Ref)
		}
		if err != nil {
			return &Error{Field: r.Field, Reason: err.Error()}
		}
	}
	return nil
}
