package testenv_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
)

// The package lists tests check before running a tests/node script name
// every npm package the script imports (directly or through a local
// module): a package missing from a list would make a partial install fail
// the test inside node instead of skipping it with a message.
func TestNodePackageListsCoverTheScriptsImports(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := filepath.Glob(filepath.Join(root, "tests", "node", "*.mjs"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no tests/node scripts: %v", err)
	}
	imports := regexp.MustCompile(`(?m)^\s*import\s[^;]*?from\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)`)
	for _, path := range scripts {
		name := filepath.Base(path)
		list := testenv.ScriptPackages(name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range imports.FindAllStringSubmatch(string(b), -1) {
			spec := m[1] + m[2]
			if strings.HasPrefix(spec, ".") || strings.HasPrefix(spec, "node:") {
				continue
			}
			pkg := strings.SplitN(spec, "/", 3)
			name := pkg[0]
			if strings.HasPrefix(name, "@") && len(pkg) > 1 {
				name += "/" + pkg[1]
			}
			if !slices.Contains(list, name) {
				t.Errorf("%s imports %s, which its package list %v does not name", filepath.Base(path), name, list)
			}
		}
	}
}
