package credentials

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSecretsRedactsEveryKnownSecret(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("  file-secret-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AUTHREF_SECRETS_TEST", "env-secret-456")
	var s Secrets
	s.AddRef("env:AUTHREF_SECRETS_TEST")
	s.AddRef("file:" + file)
	s.AddRef("env:AUTHREF_SECRETS_UNSET") // unresolvable: nothing to add
	s.Add("short")                        // shorter than 6 bytes: ignored
	got := s.Redact("a env-secret-456 b file-secret-123 c short")
	if want := "a [REDACTED] b [REDACTED] c short"; got != want {
		t.Fatalf("Redact = %q, want %q", got, want)
	}
	if !s.Contains("xx env-secret-456") || s.Contains("nothing here") {
		t.Fatal("Contains disagrees with Redact")
	}
	var nilSet *Secrets
	if nilSet.Redact("env-secret-456") != "env-secret-456" {
		t.Fatal("a nil set must redact nothing")
	}
}
