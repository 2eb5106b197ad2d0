package clibase

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// ResolveBinary resolves a configured binary: bin (def when empty) is used
// as given when it holds a path separator and exists, and is otherwise
// looked up on PATH. Failures are *agentadaptor.ConfigError values naming
// field (e.g. "claude.Config.Binary").
func ResolveBinary(bin, def, field string) (string, error) {
	if bin == "" {
		bin = def
	}
	if strings.ContainsRune(bin, os.PathSeparator) {
		if _, err := os.Stat(bin); err != nil {
			return "", &agentadaptor.ConfigError{Field: field, Reason: fmt.Sprintf("%q not found", bin), Err: err}
		}
		return bin, nil
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		return "", &agentadaptor.ConfigError{Field: field, Reason: fmt.Sprintf("%q is not on PATH", bin), Err: err}
	}
	return p, nil
}

// IsolatedProfile creates the throwaway profile of an isolated run: root is
// isolateDir, or tempDir/home when isolateDir is empty (the profile then goes
// with the run); dir is root/sub, created with mode 0700. The caller points
// HOME at root and the CLI's own configuration variable at dir.
func IsolatedProfile(isolateDir, tempDir, sub string) (root, dir string, err error) {
	root = isolateDir
	if root == "" {
		root = filepath.Join(tempDir, "home")
	}
	dir = filepath.Join(root, sub)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	return root, dir, nil
}

// WithHeadroom is the tool timeout a CLI gets for a server whose own bound is
// d: 10% and 5 seconds above it, so the server times out first.
func WithHeadroom(d time.Duration) time.Duration {
	return d + d/10 + 5*time.Second
}

// SafeName keeps payload names to letters, digits, '_', '-' and '.'.
func SafeName(s string) string {
	if s == "" {
		return "unknown"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			return r
		}
		return '_'
	}, s)
}

// RawMap decodes a JSON object line for a payload's Raw field; it is nil when
// b is not a JSON object.
func RawMap(b []byte) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// NewUUID returns a random (version 4) UUID, as the CLIs take for a new
// session id.
func NewUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
