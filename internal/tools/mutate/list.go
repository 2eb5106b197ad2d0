package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ListName is the name of the mutation list kept in a package directory,
// next to the code it mutates.
const ListName = "mutations.yaml"

// Mutation is one single-edit mutation of a guarantee: in File, the one
// place that matches Find becomes Replace. The tests of Packages must fail
// on it ("killed"); a mutation they cannot kill because it does not change
// any behaviour says why in Equivalent.
type Mutation struct {
	// ID names the mutation; unique across the repository.
	ID string `yaml:"id"`
	// Guarantee is what the mutation breaks, citing docs/design.md.
	Guarantee string `yaml:"guarantee"`
	// File is the mutated file, relative to the list's directory.
	File string `yaml:"file"`
	// Find is the code to replace. It must match exactly one place of File;
	// runs of white space match any run of white space (so re-indenting or
	// re-aligning the code does not make the mutation stale).
	Find string `yaml:"find"`
	// Replace is the mutated code (may be empty: the code is deleted).
	Replace string `yaml:"replace"`
	// Packages are the Go packages whose tests must kill the mutation,
	// relative to the repository root ("./pkg/delegation", ".").
	Packages []string `yaml:"packages"`
	// Race runs the tests with -race (only where a data race is what the
	// tests would see).
	Race bool `yaml:"race"`
	// Timeout, when set (a Go duration), replaces the default go test
	// -timeout for this mutant: for a mutant known to hang a test, which
	// then fails by its timeout instead of holding the run for minutes.
	Timeout string `yaml:"timeout"`
	// Killers names the tests expected to kill the mutation, for readers
	// (not used to filter: all tests of Packages run).
	Killers []string `yaml:"killers"`
	// Equivalent, when set, says why the mutation cannot be killed (it is
	// equivalent to the original); a mutation that survives without it
	// fails the run.
	Equivalent string `yaml:"equivalent"`

	// Dir is the list's directory relative to the repository root ("." for
	// the root), set when the list is loaded.
	Dir string `yaml:"-"`
}

// TestTimeout returns the mutant's go test -timeout: Timeout, else def.
func (m *Mutation) TestTimeout(def time.Duration) time.Duration {
	if d, err := time.ParseDuration(m.Timeout); err == nil && d > 0 {
		return d
	}
	return def
}

// Path returns the mutated file's path relative to the repository root.
func (m *Mutation) Path() string { return filepath.ToSlash(filepath.Join(m.Dir, m.File)) }

// LoadLists reads every mutations.yaml under root (skipping node_modules,
// testdata and hidden directories) and returns their mutations in path
// order. Malformed lists and entries are errors.
func LoadLists(root string) ([]*Mutation, error) {
	var paths []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "node_modules" || name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == ListName {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var all []*Mutation
	seen := map[string]string{}
	for _, p := range paths {
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		ms, err := parseList(p, filepath.ToSlash(rel))
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if where, dup := seen[m.ID]; dup {
				return nil, fmt.Errorf("%s: mutation id %q is also used in %s", p, m.ID, where)
			}
			seen[m.ID] = p
		}
		all = append(all, ms...)
	}
	return all, nil
}

func parseList(path, dir string) ([]*Mutation, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var ms []*Mutation
	if err := dec.Decode(&ms); err != nil && !errors.Is(err, io.EOF) { // io.EOF: an empty list
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, m := range ms {
		m.Dir = dir
		if err := m.validate(); err != nil {
			return nil, fmt.Errorf("%s: entry %d (%s): %w", path, i+1, m.ID, err)
		}
	}
	return ms, nil
}

func (m *Mutation) validate() error {
	switch {
	case m.ID == "":
		return errors.New("id is required")
	case m.Guarantee == "":
		return errors.New("guarantee is required")
	case m.File == "" || filepath.IsAbs(m.File) || strings.Contains(m.File, ".."):
		return errors.New("file must name a file of the list's directory")
	case strings.TrimSpace(m.Find) == "":
		return errors.New("find is required")
	case strings.Join(strings.Fields(m.Find), " ") == strings.Join(strings.Fields(m.Replace), " "):
		return errors.New("replace does not change the code")
	case len(m.Packages) == 0:
		return errors.New("packages is required")
	}
	if m.Timeout != "" {
		if d, err := time.ParseDuration(m.Timeout); err != nil || d <= 0 {
			return fmt.Errorf("timeout %q is not a positive Go duration", m.Timeout)
		}
	}
	for _, p := range m.Packages {
		if p != "." && !strings.HasPrefix(p, "./") {
			return fmt.Errorf("package %q must be relative to the repository root (\".\" or \"./...\")", p)
		}
	}
	return nil
}

// ErrStale is returned by Apply when the find snippet no longer matches:
// the code changed and the mutation must be updated (or removed).
var ErrStale = errors.New("stale mutation: the find snippet matches nothing")

// ErrAmbiguous is returned by Apply when the find snippet matches more than
// one place: the snippet must be made longer.
var ErrAmbiguous = errors.New("ambiguous mutation: the find snippet matches more than one place")

// pattern compiles find into a regexp in which every run of white space
// matches any run of white space, and everything else matches literally.
func pattern(find string) *regexp.Regexp {
	fields := strings.Fields(find)
	for i, f := range fields {
		fields[i] = regexp.QuoteMeta(f)
	}
	return regexp.MustCompile(strings.Join(fields, `\s+`))
}

// Apply returns src with the one place matching m.Find replaced by
// m.Replace, or ErrStale / ErrAmbiguous.
func (m *Mutation) Apply(src []byte) ([]byte, error) {
	locs := pattern(m.Find).FindAllIndex(src, 2)
	switch len(locs) {
	case 0:
		return nil, ErrStale
	case 1:
	default:
		return nil, ErrAmbiguous
	}
	out := make([]byte, 0, len(src)-(locs[0][1]-locs[0][0])+len(m.Replace))
	out = append(out, src[:locs[0][0]]...)
	out = append(out, m.Replace...)
	return append(out, src[locs[0][1]:]...), nil
}
