package authref

import (
	"fmt"
	"log/slog"
	"strings"
)

// Credential is a bearer token resolved from a host auth reference. Its
// value never appears in String, GoString, fmt verbs, JSON or slog output;
// it is only ever written into the Authorization header of requests to the
// trusted origin (see [Transport]).
type Credential struct {
	ref   string
	token string
}

// NewCredential wraps a token obtained elsewhere (tests, secret managers).
// ref is a non-secret label used in messages.
func NewCredential(ref, token string) *Credential {
	return &Credential{ref: ref, token: strings.TrimSpace(token)}
}

// Secret returns c's token, "" for a nil c. It is a function, not a method,
// so that it cannot be reached through the client packages' exported
// aliases of [Credential]: use it only to send the token to its origin or to
// redact it.
func Secret(c *Credential) string {
	if c == nil {
		return ""
	}
	return c.token
}

// Ref returns the non-secret auth reference the credential came from.
func (c *Credential) Ref() string {
	if c == nil {
		return ""
	}
	return c.ref
}

// String never reveals the token.
func (c *Credential) String() string {
	if c == nil {
		return "Credential(none)"
	}
	return "Credential(" + c.ref + ", redacted)"
}

// GoString never reveals the token.
func (c *Credential) GoString() string { return c.String() }

// Format makes every fmt verb (including %#v and %+v) print String.
func (c *Credential) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// MarshalJSON never reveals the token.
func (c *Credential) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// LogValue never reveals the token.
func (c *Credential) LogValue() slog.Value { return slog.StringValue(c.String()) }
