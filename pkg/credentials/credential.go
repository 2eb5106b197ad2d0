package credentials

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
)

// Credential is a secret resolved from a host auth reference and the way it
// is presented ([Scheme]: a bearer token, an API key header, or OAuth2
// client credentials whose access tokens it fetches). Its secrets never
// appear in String, GoString, fmt verbs, JSON or slog output; they are only
// ever written into requests to the trusted origin (see [Transport]), and
// the client secret only to the token endpoint.
type Credential struct {
	ref   string
	token string // the bearer token, the API key, or the OAuth2 client secret

	scheme Scheme // "" is SchemeBearer
	header string // SchemeAPIKey
	// SchemeOAuth2: the token source, the token endpoint's origin, the
	// token client's own transport, and the last access token (mu).
	source *observedSource
	origin string
	owned  *http.Transport
	mu     sync.Mutex
	access string
}

// FromToken wraps a bearer token obtained elsewhere (a secret manager, a
// test) as a [Credential], surrounding space trimmed. label is a non-secret
// name for it, shown in messages and by [Credential.Ref] in place of an
// auth reference.
func FromToken(label, token string) *Credential {
	return &Credential{ref: label, token: strings.TrimSpace(token)}
}

// Secret returns c's token (the bearer token, the API key or the OAuth2
// client secret), "" for a nil c. Use it only to check a token presented
// to you or to redact c's token from text you show; requests to a remote
// get it through [Transport]. It is a function, not a method, so that
// nothing that formats or templates a Credential can reach it.
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
	if c.scheme != "" && c.scheme != SchemeBearer {
		return "Credential(" + c.ref + ", " + string(c.scheme) + ", redacted)"
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
