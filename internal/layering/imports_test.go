package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/seed0634/agentadaptor"

var protocolSDKs = []string{
	"github.com/a2aproject/a2a-go",
	"github.com/ag-ui-protocol/ag-ui",
	"github.com/modelcontextprotocol/go-sdk",
	"github.com/coder/acp-go-sdk",
}

// goFile is one parsed Go file and its name.
type goFile struct {
	name string
	*ast.File
}

// scanTree walks the repository (node_modules, testdata and hidden
// directories left out) and returns, by package directory relative to the
// repo root, its parsed non-test files (imports and comments only), and
// every directory that holds Go files (test files included).
func scanTree(t *testing.T) (files map[string][]goFile, dirs []string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repo root not found at %s", root)
	}
	files = map[string][]goFile{}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			// What the go tool ignores too (./... skips _ and . directories):
			// the benchmark's build overlay lives in bench/e2e/out/bin/_overlay.
			if name == "node_modules" || name == "testdata" || ((strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if !seen[rel] {
			seen[rel] = true
			dirs = append(dirs, rel)
		}
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		files[rel] = append(files[rel], goFile{filepath.Base(path), f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(dirs)
	return files, dirs
}

// pkgFiles maps a package dir (relative to the repo root) to its parsed
// non-test files.
func pkgFiles(t *testing.T) map[string][]goFile {
	t.Helper()
	files, _ := scanTree(t)
	return files
}

// imports lists what files import, sorted, each path once.
func imports(files []goFile) []string {
	var out []string
	for _, f := range files {
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func hasPrefixAny(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if s == p || strings.HasPrefix(s, p+"/") {
			return true
		}
	}
	return false
}

// nonProduct are the places of the packages that are not product code
// (docs/design.md#packages): test support, end-to-end and layering tests,
// dev tools, the benchmark commands, and the adapters' public conformance
// suite. The product never imports them; they may import each other.
var nonProduct = []string{"internal/testkit", "internal/e2e", "internal/layering", "internal/tools", "bench", "pkg/adapters/adaptertest"}

// isNonProduct reports whether the package in dir (relative to the repo
// root) is one of nonProduct.
func isNonProduct(dir string) bool { return hasPrefixAny(dir, nonProduct...) }

// testOnly are the places of the packages that hold tests only: besides
// doc.go they have no non-test file.
var testOnly = []string{"internal/e2e", "internal/layering"}

// telemetryLibs are the metrics and tracing libraries: only
// internal/telemetry (and the commands and test support) may import them;
// the root package and every pkg/ package take part in telemetry through
// hooks of their own (docs/design.md#observability).
var telemetryLibs = []string{"go.opentelemetry.io", "github.com/prometheus"}

// layer is the import rule of one package (docs/design.md#layering): the
// module packages it may import and the protocol SDKs it may use; with
// product, every production package of the module (the root, pkg/ and
// internal/ but nonProduct) and every protocol SDK.
type layer struct {
	allow   []string
	sdks    []string
	product bool
}

// productPackage reports whether imp is a production package of the
// module: the root, or a package under pkg/ or internal/ that is not one
// of nonProduct (test support, end-to-end and layering tests, dev tools,
// the adapters' conformance suite). Commands and examples are not.
func productPackage(imp string) bool {
	rel, ok := strings.CutPrefix(imp, module+"/")
	switch {
	case imp == module:
		return true
	case !ok || !(strings.HasPrefix(rel, "pkg/") || strings.HasPrefix(rel, "internal/")):
		return false
	}
	return !isNonProduct(rel)
}

var (
	a2aSDK  = "github.com/a2aproject/a2a-go"
	aguiSDK = "github.com/ag-ui-protocol/ag-ui"
	mcpSDK  = "github.com/modelcontextprotocol/go-sdk"
	acpSDK  = "github.com/coder/acp-go-sdk"
)

func mod(paths ...string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = module + "/" + p
	}
	return out
}

// layers maps a package directory to its rule. Directories not listed
// (cmd, examples, internal) are free to wire everything together.
var layers = map[string]layer{
	".":                       {},
	"pkg/clients/clienterr":   {},
	"pkg/credentials":         {},
	"pkg/clients/a2a":         {allow: mod("pkg/clients/clienterr", "pkg/credentials"), sdks: []string{a2aSDK}},
	"pkg/clients/agui":        {allow: mod("pkg/clients/clienterr", "pkg/credentials"), sdks: []string{aguiSDK}},
	"pkg/delegation":          {},
	"pkg/delegation/bustest":  {allow: mod("pkg/delegation")},
	"pkg/delegation/artifact": {allow: mod("pkg/delegation", "internal/sanitize")},
	"pkg/delegation/audit":    {allow: mod("pkg/delegation")},
	"pkg/delegation/remote":   {allow: mod("pkg/delegation", "pkg/delegation/artifact", "internal/sanitize", "pkg/credentials")},
	"pkg/delegation/registry": {allow: mod("pkg/delegation", "pkg/delegation/remote", "pkg/clients/clienterr", "internal/sanitize", "pkg/credentials")},
	"pkg/delegation/delegator": {allow: mod("pkg/delegation", "pkg/delegation/remote", "pkg/delegation/registry", "pkg/delegation/audit",
		"pkg/delegation/artifact", "pkg/clients/clienterr", "internal/sanitize", "pkg/credentials")},
	"pkg/delegation/a2aremote": {allow: mod("pkg/delegation", "pkg/delegation/remote", "pkg/clients/a2a", "pkg/clients/clienterr",
		"pkg/credentials", "internal/sanitize"), sdks: []string{a2aSDK}},
	"pkg/delegation/aguiremote": {allow: mod("pkg/delegation", "pkg/delegation/remote", "pkg/clients/agui", "pkg/clients/clienterr",
		"pkg/credentials", "internal/sanitize"), sdks: []string{aguiSDK}},
	"pkg/delegation/mcptool": {allow: append(mod("pkg/delegation", "pkg/delegation/delegator", "pkg/delegation/registry", "internal/sanitize"), module),
		sdks: []string{mcpSDK}},
	"pkg/bridges/agui":           {allow: []string{module}, sdks: []string{aguiSDK}},
	"pkg/bridges/sse":            {allow: append(mod("pkg/bridges/agui"), module), sdks: []string{aguiSDK}},
	"pkg/bridges/a2a":            {allow: []string{module}, sdks: []string{a2aSDK}},
	"pkg/bridges/subagentstream": {allow: append(mod("pkg/bridges/agui", "pkg/bridges/sse", "pkg/delegation"), module), sdks: []string{aguiSDK}},
	// The host assembles the product: every production package, never
	// test support, the commands or the examples.
	"pkg/host": {product: true},
}

// TestImportRules enforces the layering of docs/design.md#layering on
// every non-test file: the root package imports nothing of the module and
// no protocol SDK; adapters import the core SDK only (the scripted agent
// may use the MCP client); every pkg/ package of the table imports only the
// module packages and protocol SDKs its layer allows; neither the root nor
// a pkg/ package imports otel or Prometheus. A pkg/ package that is not in
// the table fails the test: a new package needs a rule.
func TestImportRules(t *testing.T) {
	pkgs := pkgFiles(t)
	if len(pkgs["."]) == 0 || len(pkgs["pkg/adapters/scripted"]) == 0 || len(pkgs["pkg/delegation"]) == 0 {
		t.Fatalf("did not find the root package, the scripted adapter and pkg/delegation: %v", keys(pkgs))
	}
	for dir, files := range pkgs {
		for _, imp := range imports(files) {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok && isNonProduct(rel) && !isNonProduct(dir) {
				t.Errorf("%s imports %s: test support, tests and tools are never imported by the product", dir, imp)
			}
			if dir == "internal/testkit/testenv" && hasPrefixAny(imp, module) {
				t.Errorf("internal/testkit/testenv imports %s: it imports the standard library only, so every test can use it", imp)
			}
		}
		if hasPrefixAny(dir, testOnly...) {
			for _, f := range files {
				if f.name != "doc.go" {
					t.Errorf("%s/%s: the packages under %v hold tests only (and doc.go)", dir, f.name, testOnly)
				}
			}
		}
		if dir == "." || strings.HasPrefix(dir, "pkg/") {
			for _, imp := range imports(files) {
				if hasPrefixAny(imp, telemetryLibs...) {
					t.Errorf("%s imports %s: metrics and traces live in internal/telemetry, behind the package's own hooks (docs/design.md#observability)", dir, imp)
				}
			}
		}
		if strings.HasPrefix(dir, "pkg/adapters/") {
			forbidden := []string{module + "/pkg/bridges", module + "/pkg/delegation", module + "/pkg/clients", a2aSDK, aguiSDK}
			if dir != "pkg/adapters/scripted" {
				forbidden = append(forbidden, mcpSDK)
			}
			if dir != "pkg/adapters/acp" {
				forbidden = append(forbidden, acpSDK)
			}
			for _, imp := range imports(files) {
				if hasPrefixAny(imp, forbidden...) {
					t.Errorf("%s imports %s: adapters import the core SDK only (the scripted agent may use the MCP client, the ACP adapter the ACP SDK)", dir, imp)
				}
			}
			continue
		}
		rule, ok := layers[dir]
		if !ok {
			if strings.HasPrefix(dir, "pkg/") {
				t.Errorf("%s has no import rule: add it to layers (and to docs/design.md#layering)", dir)
			}
			continue
		}
		for _, imp := range imports(files) {
			switch {
			case rule.product && (imp == module || strings.HasPrefix(imp, module+"/")):
				if !productPackage(imp) {
					t.Errorf("%s imports %s: it may import the module's production packages only (the root, pkg/, internal/ but test support, tests and tools)", dir, imp)
				}
			case imp == module || strings.HasPrefix(imp, module+"/"):
				if !slices.Contains(rule.allow, imp) {
					t.Errorf("%s imports %s: its layer allows only %v", dir, imp, rule.allow)
				}
			case rule.product:
			case hasPrefixAny(imp, protocolSDKs...):
				if !hasPrefixAny(imp, rule.sdks...) {
					t.Errorf("%s imports the protocol SDK %s: its layer allows only %v", dir, imp, rule.sdks)
				}
			}
		}
	}
}

// TestLeafDependencies checks the transitive dependencies (go list -deps)
// of the packages that must stay free of protocol SDKs: the subagent mux
// renders AG-UI but depends on neither A2A, MCP nor the delegation tool
// packages; the delegator and the event vocabulary depend on no protocol SDK.
func TestLeafDependencies(t *testing.T) {
	for pkg, banned := range map[string][]string{
		"./pkg/bridges/subagentstream": {a2aSDK, mcpSDK, module + "/pkg/delegation/delegator", module + "/pkg/delegation/mcptool",
			module + "/pkg/delegation/registry", module + "/pkg/delegation/a2aremote", module + "/pkg/clients"},
		"./pkg/delegation":           {a2aSDK, mcpSDK, aguiSDK},
		"./pkg/delegation/delegator": {a2aSDK, mcpSDK, aguiSDK, module + "/pkg/delegation/a2aremote", module + "/pkg/delegation/aguiremote"},
	} {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = "../.."
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for dep := range strings.FieldsSeq(string(out)) {
			if hasPrefixAny(dep, banned...) {
				t.Errorf("%s depends on %s", pkg, dep)
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
