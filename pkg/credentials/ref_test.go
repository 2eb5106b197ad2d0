package credentials

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const secretToken = "s3cr3t-T0KEN-value"

var errTestInvalid = errors.New("test: invalid auth reference")

func TestResolve(t *testing.T) {
	scope := NewScope("test", errTestInvalid)
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	if err := os.WriteFile(good, []byte("  "+secretToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	twoLines := filepath.Join(dir, "two-lines")
	if err := os.WriteFile(twoLines, []byte(secretToken+"\n"+secretToken), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AA_TEST_TOKEN", secretToken)
	t.Setenv("AA_EMPTY_TOKEN", "")
	cases := []struct {
		ref     string
		ok      bool
		noCred  bool
		problem string // part of the problem text when !ok
	}{
		{"", true, true, ""},
		{"env:AA_TEST_TOKEN", true, false, ""},
		{"file:" + good, true, false, ""},
		{"env:AA_EMPTY_TOKEN", false, false, "environment variable AA_EMPTY_TOKEN is empty"},
		{"env:AA_UNSET_TOKEN_XYZ", false, false, "environment variable AA_UNSET_TOKEN_XYZ is not set; export it"},
		{"file:" + empty, false, false, "file is empty"},
		{"file:" + filepath.Join(dir, "missing"), false, false, "file cannot be read: no such file or directory"},
		{"file:" + twoLines, false, false, "line break"},
		{"vault:secret/agent", false, false, `unknown scheme "vault"`},
		{"literal-token", false, false, `expected "env:NAME" or "file:/path"`},
		{"env:", false, false, `expected "env:NAME" or "file:/path"`},
	}
	for _, tc := range cases {
		t.Run(tc.ref, func(t *testing.T) {
			cred, err := scope.Resolve(tc.ref)
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				var ae *Error
				if !errors.As(err, &ae) || !errors.Is(err, errTestInvalid) || ae.Ref != tc.ref {
					t.Fatalf("want *Error, got %T %v", err, err)
				}
				if !strings.HasPrefix(err.Error(), "test: auth reference ") || !strings.Contains(ae.Problem, tc.problem) {
					t.Fatalf("message %q, want prefix and %q", err, tc.problem)
				}
				if strings.Contains(err.Error(), secretToken) {
					t.Fatal("error leaks the token")
				}
				return
			}
			if (cred == nil) != tc.noCred {
				t.Fatalf("cred = %v", cred)
			}
			if cred != nil && (Secret(cred) != secretToken || cred.Ref() != tc.ref) {
				t.Fatalf("cred ref %q secret %q", cred.Ref(), Secret(cred))
			}
		})
	}
}

func TestErrorScopes(t *testing.T) {
	other := errors.New("other: invalid auth reference")
	_, err := NewScope("test", errTestInvalid).Resolve("bogus")
	if !errors.Is(err, errTestInvalid) || errors.Is(err, other) {
		t.Fatalf("scope sentinel: %v", err)
	}
	bare := &Error{Ref: "x", Problem: "p"}
	if bare.Error() != `auth reference "x": p` || errors.Is(bare, errTestInvalid) {
		t.Fatalf("scopeless error: %v", bare)
	}
}
