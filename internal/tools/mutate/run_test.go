package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A throw-away module with one guarded function, for the runner's own test.
var tinyModule = map[string]string{
	"go.mod":      "module example.com/tiny\n\ngo 1.24\n",
	"p/p.go":      "package p\n\n// Max returns the larger of a and b.\nfunc Max(a, b int) int {\n\tif a > b {\n\t\treturn a\n\t}\n\treturn b\n}\n",
	"p/p_test.go": "package p\n\nimport \"testing\"\n\nfunc TestMax(t *testing.T) {\n\tif Max(2, 1) != 2 || Max(1, 2) != 2 {\n\t\tt.Fatal(\"Max\")\n\t}\n}\n",
	"p/mutations.yaml": `
- id: max-returns-b
  guarantee: Max returns the larger (docs/design.md#x)
  file: p.go
  find: 'if a > b {'
  replace: 'if false {'
  packages: [./p]
- id: max-ties-equal
  guarantee: Max of equal values (docs/design.md#x)
  file: p.go
  find: 'if a > b {'
  replace: 'if a >= b {'
  packages: [./p]
  equivalent: for a == b both branches return the same value.
- id: max-unexplained-survivor
  guarantee: Max of negative values (docs/design.md#x)
  file: p.go
  find: 'return b'
  replace: 'return b + 0*b'
  packages: [./p]
- id: max-stale
  guarantee: gone (docs/design.md#x)
  file: p.go
  find: 'if b > a {'
  replace: 'if false {'
  packages: [./p]
`,
}

func TestRunReportsEveryOutcome(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a module")
	}
	for _, tool := range []string{"git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	root := t.TempDir()
	for name, body := range tinyModule {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "-C", root, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	t.Chdir(filepath.Join(root, "p"))
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	code := run(ctx, &out, options{timeout: 2 * time.Minute})
	got := out.String()
	for _, want := range []string{
		"killed    max-returns-b",
		"survived  max-ties-equal",
		"equivalent: for a == b both branches return the same value.",
		"SURVIVED  max-unexplained-survivor",
		"ERROR     max-stale",
		"stale mutation",
		"killed 1/4 (25.0%)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if code != 1 {
		t.Errorf("exit code %d, want 1 (a stale mutation, an unexplained survivor, a low score)", code)
	}
	// The real tree is never edited.
	if b, _ := os.ReadFile(filepath.Join(root, "p", "p.go")); string(b) != tinyModule["p/p.go"] {
		t.Errorf("the mutated file of the real tree changed:\n%s", b)
	}
	// -check only looks at the snippets.
	out.Reset()
	if code := run(ctx, &out, options{check: true}); code != 1 || !strings.Contains(out.String(), "4 mutations, 1 stale") {
		t.Errorf("-check: exit %d\n%s", code, out.String())
	}
}
