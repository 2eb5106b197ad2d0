package a2adelegation

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportContract: non-test files must not import concrete adapters or
// bridges (SPEC §20.2, DESIGN §1).
func TestImportContract(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(p, "/pkg/adapters/") || strings.Contains(p, "/pkg/bridges/") {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}
