package credentials

import (
	"slices"
	"strings"
	"sync"
)

// minSecretLen is the shortest value [Secrets] treats as a secret: shorter
// values would redact ordinary words.
const minSecretLen = 6

// Secrets is the set of secret values a host knows (the credentials behind
// its auth references, run tokens) and scrubs from every string it shows:
// events, tool results, audit records, log lines, HTTP responses. It is
// defence in depth: a remote that echoes a credential into its text or ids
// does not get it shown. The zero value is empty and ready; a nil *Secrets
// redacts nothing. Safe for concurrent use.
type Secrets struct {
	mu      sync.RWMutex
	secrets []string
}

// Add remembers secret. Values shorter than 6 bytes are ignored: they
// would redact ordinary words.
func (s *Secrets) Add(secret string) {
	if s == nil || len(secret) < minSecretLen {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.secrets, secret) {
		s.secrets = append(s.secrets, secret)
	}
}

// AddRef remembers the secret an auth reference currently resolves to, if
// it resolves; an unresolvable reference is ignored (it has no secret to
// leak yet).
func (s *Secrets) AddRef(ref string) {
	if s == nil || ref == "" {
		return
	}
	if c, err := Resolve(ref); err == nil {
		s.Add(Secret(c))
	}
}

// Redact returns str with every known secret replaced by [Redacted].
func (s *Secrets) Redact(str string) string {
	if s == nil {
		return str
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, sec := range s.secrets {
		if strings.Contains(str, sec) {
			str = strings.ReplaceAll(str, sec, Redacted)
		}
	}
	return str
}

// Contains reports whether str holds a known secret.
func (s *Secrets) Contains(str string) bool {
	return s.Redact(str) != str
}
