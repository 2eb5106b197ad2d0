package credentials

import (
	"errors"
	"strings"
)

// Redacted replaces the token wherever it would otherwise be shown.
const Redacted = "[REDACTED]"

// Redact returns s with every occurrence of secret replaced by [Redacted].
// An empty secret leaves s unchanged.
func Redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, Redacted)
}

// RedactErr returns err unchanged unless its text contains secret. Then it
// returns an error with the redacted text that unwraps to the first of keep
// that err matches (errors.Is), so callers can still classify it; the rest
// of err's chain is dropped.
func RedactErr(err error, secret string, keep ...error) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	r := &redactedError{msg: Redact(err.Error(), secret)}
	for _, s := range keep {
		if errors.Is(err, s) {
			r.cause = s
			break
		}
	}
	return r
}

// redactedError replaces an error whose text contained the secret.
type redactedError struct {
	msg   string
	cause error
}

func (r *redactedError) Error() string { return r.msg }
func (r *redactedError) Unwrap() error { return r.cause }
