package credentials

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const secretToken = "s3cr3t-T0KEN-value"

func TestResolve(t *testing.T) {
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
			cred, err := Resolve(tc.ref)
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				var ae *RefError
				if !errors.As(err, &ae) || !errors.Is(err, ErrInvalidRef) || ae.Ref != tc.ref {
					t.Fatalf("want *RefError, got %T %v", err, err)
				}
				if !strings.HasPrefix(err.Error(), "auth reference ") || !strings.Contains(ae.Problem, tc.problem) {
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

func TestRefErrorText(t *testing.T) {
	bare := &RefError{Ref: "x", Problem: "p"}
	if bare.Error() != `auth reference "x": p` || !errors.Is(bare, ErrInvalidRef) || errors.Is(bare, errors.New("other")) {
		t.Fatalf("RefError: %v", bare)
	}
}

// TestReadDocument checks that a multi-line secret (a NATS .creds file) is
// read as stored, by the same reference rules as Resolve.
func TestReadDocument(t *testing.T) {
	dir := t.TempDir()
	doc := "-----BEGIN NATS USER JWT-----\neyJ0\n------END NATS USER JWT------\n"
	path := filepath.Join(dir, "user.creds")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadDocument("file:" + path); err != nil || string(b) != doc {
		t.Fatalf("file: %q, %v", b, err)
	}
	t.Setenv("AA_TEST_DOC", doc)
	if b, err := ReadDocument("env:AA_TEST_DOC"); err != nil || string(b) != doc {
		t.Fatalf("env: %q, %v", b, err)
	}
	if _, err := Resolve("env:AA_TEST_DOC"); !errors.Is(err, ErrInvalidRef) || !strings.Contains(err.Error(), "line break") {
		t.Fatalf("Resolve took a multi-line secret: %v", err)
	}
	t.Setenv("AA_TEST_BLANK", " \n ")
	for _, ref := range []string{"", "env:AA_TEST_BLANK", "env:AA_UNSET_DOC_XYZ", "file:" + filepath.Join(dir, "missing"), "vault:x"} {
		if b, err := ReadDocument(ref); !errors.Is(err, ErrInvalidRef) || b != nil {
			t.Errorf("%q: %q, %v", ref, b, err)
		}
	}
}
