package layering

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// designRow is one row of the package table of docs/design.md#packages.
type designRow struct {
	line     int
	packages []string // directories relative to the repo root ("." for the root)
	mayUse   string   // the "May import" cell
}

// designTable parses the package table of docs/design.md (the section
// "### Packages"): one row per package or group of packages, the first cell
// naming them in backticks ("`pkg/adapters/{claude,codex}`", or
// "`agentadaptor` (repo root)"), the last saying what they may import.
func designTable(t *testing.T) []designRow {
	t.Helper()
	b, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []designRow
	in := false
	for i, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "### Packages"):
			in = true
			continue
		case in && strings.HasPrefix(line, "#"):
			in = false
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 3 {
			t.Fatalf("docs/design.md:%d: a package row has 3 cells (package, owns, may import), this one %d", i+1, len(cells))
		}
		row := designRow{line: i + 1, mayUse: cells[2]}
		for _, name := range codeSpans(cells[0]) {
			if name == "agentadaptor" {
				name = "."
			}
			row.packages = append(row.packages, expandBraces(name)...)
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		t.Fatal(`docs/design.md: no package table under "### Packages"`)
	}
	return rows
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// codeSpans returns the texts in backticks of s.
func codeSpans(s string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// expandBraces expands one "{a,b}" group: "x/{a,b}" is x/a and x/b.
func expandBraces(s string) []string {
	open, end := strings.Index(s, "{"), strings.Index(s, "}")
	if open < 0 || end < open {
		return []string{s}
	}
	var out []string
	for alt := range strings.SplitSeq(s[open+1:end], ",") {
		out = append(out, s[:open]+alt+s[end+1:])
	}
	return out
}

// TestDesignTableMatchesTree checks the package table of
// docs/design.md#packages against the tree: every package of the tree has
// a row, every row names packages that exist, and what a package imports is
// in its row's "May import" cell: each module package (by path, by its last
// element, or "root" for the core SDK) and each protocol SDK. Rows whose
// cell is "—" (test support, tests, tools) or says "everything" (the
// wiring) are not checked for imports. So the table cannot drift from the
// code: a new, moved or removed package, or a new import, fails here until
// the table says it.
func TestDesignTableMatchesTree(t *testing.T) {
	rows := designTable(t)
	documented := map[string]designRow{}
	for _, r := range rows {
		for _, p := range r.packages {
			if prev, dup := documented[p]; dup {
				t.Errorf("docs/design.md:%d: %s already has a row (line %d)", r.line, p, prev.line)
			}
			documented[p] = r
		}
	}
	tree, dirs := scanTree(t)
	for _, d := range dirs {
		if _, ok := documented[d]; !ok {
			t.Errorf("package %s has no row in the table of docs/design.md#packages: add one (what it owns, what it may import)", d)
		}
	}
	for p, r := range documented {
		if !slices.Contains(dirs, p) {
			t.Errorf("docs/design.md:%d: %s is in the package table but not in the tree", r.line, p)
		}
	}

	sdkNames := map[string]string{a2aSDK: "a2a-go", aguiSDK: "AG-UI", mcpSDK: "MCP", acpSDK: "ACP SDK"}
	for dir, files := range tree {
		r, ok := documented[dir]
		if !ok || r.mayUse == "—" || strings.Contains(r.mayUse, "everything") {
			continue
		}
		var named []string
		for _, span := range codeSpans(r.mayUse) {
			named = append(named, expandBraces(span)...)
		}
		words := regexp.MustCompile(`[A-Za-z0-9_]+`).FindAllString(r.mayUse, -1)
		for _, imp := range imports(files) {
			switch {
			case imp == module:
				if !slices.Contains(words, "root") {
					t.Errorf("docs/design.md:%d: %s imports the core SDK; its row does not say root", r.line, dir)
				}
			case strings.HasPrefix(imp, module+"/"):
				rel := strings.TrimPrefix(imp, module+"/")
				if !slices.Contains(named, rel) && !slices.Contains(words, filepath.Base(rel)) {
					t.Errorf("docs/design.md:%d: %s imports %s; its row's \"May import\" does not name it", r.line, dir, rel)
				}
			default:
				for sdk, name := range sdkNames {
					if hasPrefixAny(imp, sdk) && !strings.Contains(r.mayUse, name) {
						t.Errorf("docs/design.md:%d: %s imports the %s SDK (%s); its row's \"May import\" does not name it", r.line, dir, name, imp)
					}
				}
			}
		}
	}
}
