package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// InstallHint is how every missing tool is installed.
const InstallHint = "run `make deps` (scripts/deps.sh) to install it"

// InCI reports whether the tests run under CI (CI=true), where every tool
// is installed and no test may skip for want of one.
func InCI() bool { return os.Getenv("CI") == "true" }

// Require stops t when err is non-nil, err saying why what t needs (a tool,
// an npm package, a browser; e.g. "node and @ag-ui/core") is unusable: t is
// skipped, or fails under CI=true. The message names what, err and how to
// install it.
func Require(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if InCI() {
		t.Fatalf("needs %s, which CI=true requires: %v; %s", what, err, InstallHint)
	}
	t.Skipf("skipped: needs %s: %v; %s", what, err, InstallHint)
}

// Want is [Require] for a check the test can do without (typically one more
// validation of a stream it already checked): when err is non-nil it fails t
// under CI=true, and otherwise logs that the check is skipped and returns
// false. It returns true when err is nil.
func Want(t testing.TB, what string, err error) bool {
	t.Helper()
	if err == nil {
		return true
	}
	if InCI() {
		t.Fatalf("needs %s, which CI=true requires: %v; %s", what, err, InstallHint)
	}
	t.Logf("check skipped: needs %s: %v; %s", what, err, InstallHint)
	return false
}

// RepoRoot returns the repository root: the nearest directory at or above
// the working directory (a package's directory, under go test) that holds
// go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// NodePackages checks that node is on PATH and that the repository's
// node_modules holds each of pkgs (npm package names, e.g. "@ag-ui/core"),
// and returns the repository root. The error names the first thing missing;
// hand it to [Require] or [Want].
func NodePackages(pkgs ...string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	if _, err := exec.LookPath("node"); err != nil {
		return root, fmt.Errorf("node is not on PATH: %w", err)
	}
	var missing []string
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(root, "node_modules", filepath.FromSlash(p), "package.json")); err != nil {
			missing = append(missing, "node_modules/"+p)
		}
	}
	if len(missing) > 0 {
		return root, fmt.Errorf("%s not installed", strings.Join(missing, ", "))
	}
	return root, nil
}

// AGUIPackages returns the npm packages the AG-UI scripts of tests/node
// import (validate-agui.mjs and httpagent-run.mjs, through agui-lib.mjs).
// Tests that run them check for all of these with [NodePackages], so that
// a partial install skips them (or fails them under CI=true) with a message
// instead of failing inside node.
func AGUIPackages() []string {
	return []string{"@ag-ui/core", "@ag-ui/core-0059", "@ag-ui/client", "rxjs"}
}

// A2AJSPackages returns the npm packages the @a2a-js/sdk scripts of
// tests/node import (a2a-*.mjs); see [AGUIPackages].
func A2AJSPackages() []string { return []string{"@a2a-js/sdk"} }

// scriptPackages are the tests/node scripts that import other packages
// than their family's list ([AGUIPackages], [A2AJSPackages]).
var scriptPackages = map[string][]string{
	"a2a-js03-rest.mjs":      {"@a2a-js/sdk-03"},
	"agui-encoder-agent.mjs": {"@ag-ui/encoder", "@ag-ui/core"},
}

// ScriptPackages returns the npm packages the tests/node script (a base
// name such as "a2a-js-remote.mjs") imports: check them with
// [NodePackages] before running it.
func ScriptPackages(script string) []string {
	if pkgs, ok := scriptPackages[script]; ok {
		return pkgs
	}
	if strings.HasPrefix(script, "a2a-") {
		return A2AJSPackages()
	}
	return AGUIPackages()
}

// WaitTimeout bounds [WaitUntil]: generous, so that a loaded machine never
// fails a test that is only slow. It is a bound, not a promise of speed.
const WaitTimeout = 60 * time.Second

// pollInterval is how often [Poll] checks its condition.
const pollInterval = 10 * time.Millisecond

// Poll calls cond every few milliseconds until it returns true or timeout
// has passed, and returns cond's last result. It is for conditions nothing
// announces (a process leaving /proc, another host's run count): when the
// code under test offers a channel, a callback or a blocking call, wait on
// that instead. The timeout bounds a wait; it never asserts how fast
// something happens.
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollInterval)
	}
}

// WaitUntil polls cond (see [Poll]) for at most [WaitTimeout] and fails t
// with "timed out waiting for WHAT" when it never held.
func WaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Poll(WaitTimeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", WaitTimeout, what)
	}
}
