package contract

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/seed0634/agentadaptor"

var protocolSDKs = []string{
	"github.com/a2aproject/a2a-go",
	"github.com/ag-ui-protocol/ag-ui",
	"github.com/modelcontextprotocol/go-sdk",
}

// pkgFiles maps a package dir (relative to the repo root) to its parsed
// non-test files.
func pkgFiles(t *testing.T) map[string][]*ast.File {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repo root not found at %s", root)
	}
	out := map[string][]*ast.File{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if name == "node_modules" || name == "testdata" || (strings.HasPrefix(name, ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		out[filepath.ToSlash(rel)] = append(out[filepath.ToSlash(rel)], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func imports(files []*ast.File) []string {
	var out []string
	for _, f := range files {
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out = append(out, p)
		}
	}
	return out
}

func hasPrefixAny(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if s == p || strings.HasPrefix(s, p+"/") {
			return true
		}
	}
	return false
}

// testSupport are the packages only tests import.
var testSupport = []string{module + "/internal/testenv", module + "/internal/shellagent"}

// isTestSupport reports whether the package in dir is itself test support
// (and so may build on other test support).
func isTestSupport(dir string) bool {
	switch dir {
	case "internal/testenv", "internal/shellagent", "internal/realcli", "internal/clie2e",
		"internal/fakea2a", "internal/fakemodel", "pkg/adapters/adaptertest":
		return true
	}
	return false
}

func TestImportRules(t *testing.T) {
	pkgs := pkgFiles(t)
	if len(pkgs["."]) == 0 || len(pkgs["pkg/adapters/scripted"]) == 0 {
		t.Fatalf("did not find the root package and the scripted adapter: %v", keys(pkgs))
	}
	for dir, files := range pkgs {
		for _, imp := range imports(files) {
			if hasPrefixAny(imp, testSupport...) && !isTestSupport(dir) {
				t.Errorf("%s imports %s: test support is imported by tests only, never by the product", dir, imp)
			}
			switch {
			case dir == "internal/testenv":
				if hasPrefixAny(imp, module) {
					t.Errorf("internal/testenv imports %s: it imports the standard library only, so every test can use it", imp)
				}
			case dir == ".":
				if hasPrefixAny(imp, module+"/pkg", module+"/internal") || hasPrefixAny(imp, protocolSDKs...) {
					t.Errorf("core SDK imports %s: the root package imports no pkg/ package and no protocol SDK", imp)
				}
			case strings.HasPrefix(dir, "pkg/adapters/"):
				forbidden := []string{module + "/pkg/bridges", module + "/pkg/hosttools", module + "/pkg/clients",
					"github.com/a2aproject/a2a-go", "github.com/ag-ui-protocol/ag-ui"}
				if dir != "pkg/adapters/scripted" {
					forbidden = append(forbidden, "github.com/modelcontextprotocol/go-sdk")
				}
				if hasPrefixAny(imp, forbidden...) {
					t.Errorf("%s imports %s: adapters import the core SDK only (the scripted agent may use the MCP client)", dir, imp)
				}
			case strings.HasPrefix(dir, "pkg/hosttools/a2adelegation"), strings.HasPrefix(dir, "pkg/bridges/subagentstream"):
				if hasPrefixAny(imp, module+"/pkg/adapters") {
					t.Errorf("%s imports %s: delegation and the subagent mux never import concrete adapters", dir, imp)
				}
			}
		}
	}
}

// TestCoreHasNoProtocolTypes checks that the core SDK does not grow A2A,
// AG-UI or delegation types (docs/design.md#layering).
func TestCoreHasNoProtocolTypes(t *testing.T) {
	root, _ := filepath.Abs("../..")
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(root, "*.go"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no core files in %s: %v", root, err)
	}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		{
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok {
					continue
				}
				for _, s := range gd.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					n := strings.ToLower(ts.Name.Name)
					for _, bad := range []string{"a2a", "agui", "delegation", "subagent"} {
						if strings.Contains(n, bad) {
							t.Errorf("core SDK type %s looks protocol-specific (%s)", ts.Name.Name, bad)
						}
					}
				}
			}
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
