package credentials

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Scope is the identity a client package gives the auth reference errors it
// returns: the prefix of their text ("a2a", "agui") and the sentinel they
// match with errors.Is.
type Scope struct {
	name    string
	invalid error
}

// NewScope returns the scope of the client package name; every [*Error] its
// [Scope.Resolve] returns matches invalid with errors.Is.
func NewScope(name string, invalid error) *Scope {
	return &Scope{name: name, invalid: invalid}
}

// Error reports an auth reference that could not be resolved. It names the
// reference (which is not secret: "env:NAME" or "file:/path"), never the
// credential.
type Error struct {
	// Ref is the auth reference as configured.
	Ref string
	// Problem says what is wrong and what to do.
	Problem string

	scope *Scope
}

// Error names the reference and the problem, never the credential.
func (e *Error) Error() string {
	prefix := ""
	if e.scope != nil {
		prefix = e.scope.name + ": "
	}
	return fmt.Sprintf("%sauth reference %q: %s", prefix, e.Ref, e.Problem)
}

// Is makes errors.Is(err, invalid) true for the invalid sentinel of the
// error's [Scope].
func (e *Error) Is(target error) bool {
	return e.scope != nil && e.scope.invalid != nil && target == e.scope.invalid
}

// Resolve resolves a host auth reference into a [Credential]:
//
//   - "env:NAME": the value of environment variable NAME, surrounding space
//     trimmed (must be non-empty);
//   - "file:/path": the contents of the file, surrounding space trimmed
//     (must be non-empty).
//
// An empty ref returns (nil, nil): no credential. Any other scheme, and a
// credential holding a line break, is an [*Error] of scope s.
func (s *Scope) Resolve(ref string) (*Credential, error) {
	if ref == "" {
		return nil, nil
	}
	fail := func(problem string) (*Credential, error) {
		return nil, &Error{Ref: ref, Problem: problem, scope: s}
	}
	scheme, rest, ok := strings.Cut(ref, ":")
	if !ok || rest == "" {
		return fail(`expected "env:NAME" or "file:/path"`)
	}
	var token string
	switch scheme {
	case "env":
		v, set := os.LookupEnv(rest)
		if !set {
			return fail("environment variable " + rest + " is not set; export it before starting the host")
		}
		if token = strings.TrimSpace(v); token == "" {
			return fail("environment variable " + rest + " is empty")
		}
	case "file":
		b, err := os.ReadFile(rest)
		if err != nil {
			// Name the path and the OS reason, never the content.
			reason := "cannot be read"
			var pe *os.PathError
			if errors.As(err, &pe) {
				reason += ": " + pe.Err.Error()
			}
			return fail("file " + reason)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return fail("file is empty")
		}
	default:
		return fail(fmt.Sprintf("unknown scheme %q; use env:NAME or file:/path", scheme))
	}
	if strings.ContainsAny(token, "\r\n") {
		return fail("credential contains a line break; store a single-line token")
	}
	return &Credential{ref: ref, token: token}, nil
}
