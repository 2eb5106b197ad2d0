// Command mutate is the repository's mutation check, run on demand with
// `make mutate` (it is not part of `make test`): it applies each single-edit
// mutation of a guarantee (docs/design.md#guarantees) listed in the
// mutations.yaml files kept next to the code they mutate, one at a time, to
// a scratch copy of the repository, runs the tests of the packages the
// entry lists, and reports whether they failed ("killed") or passed
// ("survived"). The real tree is never edited.
//
//	go run ./internal/tools/mutate              # every mutation; ends with "killed K/N"
//	go run ./internal/tools/mutate -only 'bus-' # the mutations whose id matches
//	go run ./internal/tools/mutate -check       # only check that every snippet still matches
//
// A mutation whose find snippet no longer matches the code (or matches more
// than one place) is an error ("stale mutation"), never skipped. The run
// fails (exit 1) on any error, on a survivor whose entry does not explain
// why it is equivalent, on an entry marked equivalent that was killed, and
// on a score below 95%.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
)

// MinScore is the lowest acceptable share of killed mutations.
const MinScore = 0.95

func main() {
	only := flag.String("only", "", "run only the mutations whose id matches this regular expression")
	check := flag.Bool("check", false, "only check that every mutation's find snippet matches exactly once; run no tests")
	keep := flag.Bool("keep", false, "keep the scratch copy (its path is printed)")
	noBaseline := flag.Bool("no-baseline", false, "skip the unmutated run of the listed packages' tests")
	timeout := flag.Duration("timeout", 5*time.Minute, "go test -timeout for each mutant")
	verbose := flag.Bool("v", false, "print the test output of every mutant, not only of survivors and errors")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Stdout, options{only: *only, check: *check, keep: *keep, noBaseline: *noBaseline, timeout: *timeout, verbose: *verbose})
	stop()
	os.Exit(code)
}

type options struct {
	only       string
	check      bool
	keep       bool
	noBaseline bool
	timeout    time.Duration
	verbose    bool
}

// outcome of one mutation.
type outcome int

const (
	killed outcome = iota
	survived
	failed // stale, ambiguous, does not compile
)

func run(ctx context.Context, w io.Writer, o options) int {
	root, err := testenv.RepoRoot()
	if err != nil {
		fmt.Fprintln(w, "mutate:", err)
		return 1
	}
	ms, err := LoadLists(root)
	if err != nil {
		fmt.Fprintln(w, "mutate:", err)
		return 1
	}
	if o.only != "" {
		re, err := regexp.Compile(o.only)
		if err != nil {
			fmt.Fprintln(w, "mutate: -only:", err)
			return 1
		}
		ms = slices.DeleteFunc(ms, func(m *Mutation) bool { return !re.MatchString(m.ID) })
	}
	if len(ms) == 0 {
		fmt.Fprintln(w, "mutate: no mutation to run")
		return 1
	}
	// Every snippet is checked against the real tree first: a stale list is
	// reported before anything slow happens.
	stale := 0
	for _, m := range ms {
		src, err := os.ReadFile(filepath.Join(root, m.Path()))
		if err == nil {
			_, err = m.Apply(src)
		}
		if err != nil {
			stale++
			if o.check {
				fmt.Fprintf(w, "ERROR     %-44s %s: %v\n", m.ID, m.Path(), err)
			}
		}
	}
	if stale > 0 && !o.check {
		fmt.Fprintf(w, "mutate: %d stale mutations: each is reported as an error below\n", stale)
	}
	if o.check {
		fmt.Fprintf(w, "mutate: %d mutations, %d stale\n", len(ms), stale)
		if stale > 0 {
			return 1
		}
		return 0
	}

	start := time.Now()
	scratch, err := scratchCopy(root)
	if err != nil {
		fmt.Fprintln(w, "mutate: scratch copy:", err)
		return 1
	}
	if o.keep {
		fmt.Fprintln(w, "mutate: scratch copy kept at", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}
	fmt.Fprintf(w, "mutate: %d mutations; scratch copy of %s in %s\n", len(ms), root, scratch)

	if !o.noBaseline {
		var pkgs []string
		for _, m := range ms {
			for _, p := range m.Packages {
				if !slices.Contains(pkgs, p) {
					pkgs = append(pkgs, p)
				}
			}
		}
		slices.Sort(pkgs)
		t0 := time.Now()
		out, err := goTest(ctx, scratch, o.timeout, false, pkgs)
		if err != nil {
			fmt.Fprintf(w, "mutate: the unmutated tests fail, so no mutant can be judged:\n%s\n", tail(out, 60))
			return 1
		}
		fmt.Fprintf(w, "mutate: baseline: the tests of %d packages pass unmutated (%s)\n", len(pkgs), round(time.Since(t0)))
	}

	var nKilled, nSurvived, nExplained, nErrors int
	for i, m := range ms {
		if ctx.Err() != nil {
			fmt.Fprintln(w, "mutate: interrupted")
			return 1
		}
		t0 := time.Now()
		res, detail, out := runOne(ctx, scratch, m, o.timeout)
		took := round(time.Since(t0))
		prefix := fmt.Sprintf("[%2d/%d] ", i+1, len(ms))
		switch res {
		case killed:
			nKilled++
			if m.Equivalent != "" {
				nErrors++
				fmt.Fprintf(w, "%sERROR     %-44s killed, but listed as equivalent: remove its equivalent field (%s)\n", prefix, m.ID, detail)
				continue
			}
			fmt.Fprintf(w, "%skilled    %-44s %s (%s) %s\n", prefix, m.ID, m.Path(), took, detail)
			if o.verbose {
				fmt.Fprintln(w, indent(tail(out, 30)))
			}
		case survived:
			nSurvived++
			if m.Equivalent != "" {
				nExplained++
				fmt.Fprintf(w, "%ssurvived  %-44s %s (%s) equivalent: %s\n", prefix, m.ID, m.Path(), took, oneLine(m.Equivalent))
				continue
			}
			fmt.Fprintf(w, "%sSURVIVED  %-44s %s (%s) not killed by %s: add a test for %q, or explain why it is equivalent\n",
				prefix, m.ID, m.Path(), took, strings.Join(m.Packages, " "), oneLine(m.Guarantee))
			fmt.Fprintln(w, indent(tail(out, 15)))
		case failed:
			nErrors++
			fmt.Fprintf(w, "%sERROR     %-44s %s: %s\n", prefix, m.ID, m.Path(), detail)
			if out != "" {
				fmt.Fprintln(w, indent(tail(out, 30)))
			}
		}
	}
	score := float64(nKilled) / float64(len(ms))
	fmt.Fprintf(w, "\nsurvived %d (%d explained as equivalent), errors %d, took %s\n", nSurvived, nExplained, nErrors, round(time.Since(start)))
	fmt.Fprintf(w, "killed %d/%d (%.1f%%)\n", nKilled, len(ms), 100*score)
	if nErrors > 0 || nSurvived > nExplained || score < MinScore {
		return 1
	}
	return 0
}

// runOne applies m to the scratch copy, runs its packages' tests and
// reverts it. detail names the tests that failed, or the error.
func runOne(ctx context.Context, scratch string, m *Mutation, timeout time.Duration) (res outcome, detail, out string) {
	path := filepath.Join(scratch, m.Path())
	fi, err := os.Stat(path)
	if err != nil {
		return failed, err.Error(), ""
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		return failed, err.Error(), ""
	}
	mutated, err := m.Apply(orig)
	if err != nil {
		return failed, err.Error(), ""
	}
	if err := os.WriteFile(path, mutated, fi.Mode().Perm()); err != nil {
		return failed, err.Error(), ""
	}
	defer func() {
		if err := os.WriteFile(path, orig, fi.Mode().Perm()); err != nil {
			res, detail = failed, "reverting the mutation: "+err.Error()
		}
	}()
	if b, err := goCmd(ctx, scratch, 5*time.Minute, "build", "./"+filepath.ToSlash(m.Dir)); err != nil {
		return failed, "the mutant does not compile: fix its replace snippet", b
	}
	out, err = goTest(ctx, scratch, m.TestTimeout(timeout), m.Race, m.Packages)
	if err == nil {
		return survived, "", out
	}
	if strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]") {
		return failed, "the tests do not compile against the mutant", out
	}
	return killed, describeFailure(out), out
}

var failRe = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// describeFailure names the failing top-level tests (or the panic/timeout).
func describeFailure(out string) string {
	var names []string
	for _, m := range failRe.FindAllStringSubmatch(out, -1) {
		name, _, _ := strings.Cut(m[1], "/")
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	switch {
	case len(names) > 0:
		if len(names) > 4 {
			names = append(names[:4], fmt.Sprintf("and %d more", len(names)-4))
		}
		return "by " + strings.Join(names, ", ")
	case strings.Contains(out, "panic: test timed out"):
		return "by a test timeout"
	case strings.Contains(out, "panic:"):
		return "by a panic"
	}
	return "by a failing test binary"
}

func goTest(ctx context.Context, dir string, timeout time.Duration, race bool, pkgs []string) (string, error) {
	args := []string{"test", "-count=1", "-timeout", timeout.String()}
	if race {
		args = append(args, "-race")
	}
	// The outer bound only matters if a test binary ignores its -timeout.
	return goCmd(ctx, dir, timeout+2*time.Minute, append(args, pkgs...)...)
}

func goCmd(ctx context.Context, dir string, bound time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	// The scratch copy is its own module: no workspace may redirect it.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.WaitDelay = 10 * time.Second
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

// scratchCopy copies the repository's files (tracked, and untracked but not
// ignored: the working tree as it is) into a new temporary directory.
// Symbolic links are copied as links; node_modules directories git ignores
// are linked, so that the Node-based checks of the tests still run.
func scratchCopy(root string) (string, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return "", fmt.Errorf("git ls-files: %w", err)
	}
	dir, err := os.MkdirTemp("", "agentadaptor-mutate-")
	if err != nil {
		return "", err
	}
	for p := range strings.SplitSeq(strings.TrimRight(string(out), "\x00"), "\x00") {
		if p == "" {
			continue
		}
		if err := copyEntry(filepath.Join(root, p), filepath.Join(dir, p)); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	for _, nm := range []string{"node_modules", "tests/browser/node_modules"} {
		src := filepath.Join(root, nm)
		dst := filepath.Join(dir, nm)
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		if fi, err := os.Stat(src); err == nil && fi.IsDir() {
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				os.RemoveAll(dir)
				return "", err
			}
			if err := os.Symlink(src, dst); err != nil {
				os.RemoveAll(dir)
				return "", err
			}
		}
	}
	return dir, nil
}

func copyEntry(src, dst string) error {
	fi, err := os.Lstat(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil // deleted in the working tree
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, fi.Mode().Perm())
	}
	return nil // sockets, devices: nothing a test needs
}

func round(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string { return "    | " + strings.ReplaceAll(s, "\n", "\n    | ") }
