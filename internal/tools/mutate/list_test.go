package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
)

func TestApplyMatchesCodeWithFlexibleWhiteSpace(t *testing.T) {
	src := []byte("func f() {\n\tif a &&\n\t\tb {\n\t\treturn 1\n\t}\n\treturn 2\n}\n")
	m := &Mutation{Find: "if a && b {\n  return 1", Replace: "if false {\n\t\treturn 1"}
	got, err := m.Apply(src)
	if err != nil {
		t.Fatal(err)
	}
	if want := "func f() {\n\tif false {\n\t\treturn 1\n\t}\n\treturn 2\n}\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// Regexp metacharacters in the snippet are literal.
	m = &Mutation{Find: "s.subs[e.ID] = (x)", Replace: ""}
	if got, err := m.Apply([]byte("a; s.subs[e.ID] = (x); b")); err != nil || string(got) != "a; ; b" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestApplyReportsStaleAndAmbiguousSnippets(t *testing.T) {
	src := []byte("return false\n}\nreturn false\n")
	if _, err := (&Mutation{Find: "return true"}).Apply(src); !errors.Is(err, ErrStale) {
		t.Errorf("a snippet that matches nothing: %v, want ErrStale", err)
	}
	if _, err := (&Mutation{Find: "return false"}).Apply(src); !errors.Is(err, ErrAmbiguous) {
		t.Errorf("a snippet that matches twice: %v, want ErrAmbiguous", err)
	}
	// White space is flexible, not optional: "a&&b" is not "a && b".
	if _, err := (&Mutation{Find: "a && b"}).Apply([]byte("if a&&b {")); !errors.Is(err, ErrStale) {
		t.Errorf("%v, want ErrStale", err)
	}
}

func writeList(t *testing.T, dir, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ListName), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

const entry = `
- id: %s
  guarantee: g (docs/design.md#guarantees)
  file: x.go
  find: 'a := 1'
  replace: 'a := 2'
  packages: [./p]
`

func TestLoadListsReadsEveryListNextToItsCode(t *testing.T) {
	root := t.TempDir()
	writeList(t, filepath.Join(root, "p"), strings.ReplaceAll(entry, "%s", "one")+"  timeout: 90s\n")
	writeList(t, filepath.Join(root, "q", "r"), strings.ReplaceAll(entry, "%s", "two"))
	writeList(t, filepath.Join(root, "node_modules", "x"), strings.ReplaceAll(entry, "%s", "ignored"))
	writeList(t, filepath.Join(root, "e"), "") // an empty list
	ms, err := LoadLists(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].ID != "one" || ms[0].Path() != "p/x.go" || ms[1].Path() != "q/r/x.go" {
		t.Fatalf("loaded %+v", ms)
	}
	if d := ms[0].TestTimeout(time.Minute); d != 90*time.Second {
		t.Errorf("timeout %v", d)
	}
	if d := ms[1].TestTimeout(time.Minute); d != time.Minute {
		t.Errorf("default timeout %v", d)
	}
}

func TestLoadListsRejectsMalformedEntries(t *testing.T) {
	for name, body := range map[string]string{
		"unknown field":     strings.ReplaceAll(entry, "%s", "a") + "  killer: [T]\n",
		"duplicate id":      strings.ReplaceAll(entry, "%s", "a") + strings.ReplaceAll(entry, "%s", "a"),
		"no packages":       strings.Replace(strings.ReplaceAll(entry, "%s", "a"), "  packages: [./p]\n", "", 1),
		"absolute package":  strings.Replace(strings.ReplaceAll(entry, "%s", "a"), "./p", "github.com/x/p", 1),
		"file outside":      strings.Replace(strings.ReplaceAll(entry, "%s", "a"), "x.go", "../x.go", 1),
		"no change":         strings.Replace(strings.ReplaceAll(entry, "%s", "a"), "a := 2", "a  :=  1", 1),
		"no guarantee":      strings.Replace(strings.ReplaceAll(entry, "%s", "a"), "  guarantee: g (docs/design.md#guarantees)\n", "", 1),
		"bad timeout":       strings.ReplaceAll(entry, "%s", "a") + "  timeout: soon\n",
		"not a list":        "id: a\n",
		"empty find":        strings.Replace(strings.ReplaceAll(entry, "%s", "a"), "'a := 1'", "' '", 1),
		"missing id":        strings.Replace(strings.ReplaceAll(entry, "%s", "a"), "- id: a\n  guarantee", "- guarantee", 1),
		"equivalent typo'd": strings.ReplaceAll(entry, "%s", "a") + "  equivalant: x\n",
	} {
		root := t.TempDir()
		writeList(t, filepath.Join(root, "p"), body)
		if _, err := LoadLists(root); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The repository's own lists must at least parse; whether their snippets
// still match the code is `make mutate`'s job (go run ./internal/tools/mutate
// -check), not the test suite's.
func TestRepositoryListsParse(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ms, err := LoadLists(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 30 {
		t.Errorf("%d mutations listed, want at least 30", len(ms))
	}
	for _, m := range ms {
		if !strings.Contains(m.Guarantee, "docs/design.md#") {
			t.Errorf("%s: the guarantee does not cite docs/design.md", m.ID)
		}
	}
}

func TestDescribeFailureNamesTheKillers(t *testing.T) {
	out := "--- FAIL: TestA (0.1s)\n    --- FAIL: TestA/sub (0s)\n--- FAIL: TestB (0s)\nFAIL\n"
	if got := describeFailure(out); got != "by TestA, TestB" {
		t.Errorf("got %q", got)
	}
	if got := describeFailure("panic: test timed out after 1m30s\n"); got != "by a test timeout" {
		t.Errorf("got %q", got)
	}
}
