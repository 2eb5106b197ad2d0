package credentials

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrInvalidRef is matched (errors.Is) by every [*RefError]: an auth
// reference that is malformed or does not resolve.
var ErrInvalidRef = errors.New("invalid auth reference")

// RefError reports an auth reference that could not be resolved. It names
// the reference (which is not secret: "env:NAME" or "file:/path") and what
// to do, never the credential. It matches [ErrInvalidRef] with errors.Is.
type RefError struct {
	// Ref is the auth reference as configured.
	Ref string
	// Problem says what is wrong and what to do.
	Problem string
}

// Error names the reference and the problem, never the credential.
func (e *RefError) Error() string {
	return fmt.Sprintf("auth reference %q: %s", e.Ref, e.Problem)
}

// Is makes errors.Is(err, [ErrInvalidRef]) true.
func (e *RefError) Is(target error) bool { return target == ErrInvalidRef }

// IsRef reports whether ref has the shape of an auth reference ("env:NAME"
// or "file:/path"); it does not resolve it.
func IsRef(ref string) bool {
	scheme, rest, ok := strings.Cut(ref, ":")
	return ok && rest != "" && (scheme == "env" || scheme == "file")
}

// Resolve reads the secret an auth reference names into a bearer
// [Credential]:
//
//   - "env:NAME": the value of environment variable NAME, surrounding space
//     trimmed (must be non-empty);
//   - "file:/path": the contents of the file, surrounding space trimmed
//     (must be non-empty).
//
// An empty ref returns (nil, nil): no credential. Any other scheme, and a
// secret holding a line break, is a [*RefError]. The secret is read now and
// not again: resolve anew to pick up a rotated file.
func Resolve(ref string) (*Credential, error) {
	if ref == "" {
		return nil, nil
	}
	b, err := ReadDocument(ref)
	if err != nil {
		return nil, err
	}
	token := strings.TrimSpace(string(b))
	if strings.ContainsAny(token, "\r\n") {
		return nil, &RefError{Ref: ref, Problem: "credential contains a line break; store a single-line token"}
	}
	return &Credential{ref: ref, token: token}, nil
}

// ReadDocument reads the secret an auth reference names as it is stored,
// for secrets that span lines (a NATS .creds file: a user JWT and an nkey
// seed). The reference rules are [Resolve]'s; the content must hold more
// than white space. An error is a [*RefError]. Do not print the content.
func ReadDocument(ref string) ([]byte, error) {
	fail := func(problem string) ([]byte, error) {
		return nil, &RefError{Ref: ref, Problem: problem}
	}
	scheme, rest, ok := strings.Cut(ref, ":")
	if !ok || rest == "" {
		return fail(`expected "env:NAME" or "file:/path"`)
	}
	var content []byte
	switch scheme {
	case "env":
		v, set := os.LookupEnv(rest)
		if !set {
			return fail("environment variable " + rest + " is not set; export it before starting the host")
		}
		if strings.TrimSpace(v) == "" {
			return fail("environment variable " + rest + " is empty")
		}
		content = []byte(v)
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
		if len(bytes.TrimSpace(b)) == 0 {
			return fail("file is empty")
		}
		content = b
	default:
		return fail(fmt.Sprintf("unknown scheme %q; use env:NAME or file:/path", scheme))
	}
	return content, nil
}
