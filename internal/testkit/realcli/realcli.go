package realcli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
)

// The CLIs this package knows.
const (
	Claude = "claude"
	Codex  = "codex"
	// Gemini is Gemini CLI (@google/gemini-cli), an ACP agent with
	// --experimental-acp.
	Gemini = "gemini"
	// CodexACP is codex-acp (@zed-industries/codex-acp), Codex over ACP.
	CodexACP = "codex-acp"
)

// RepoRoot walks up from the working directory to the directory holding
// go.mod (see testenv.RepoRoot).
func RepoRoot() (string, error) { return testenv.RepoRoot() }

// Find returns the absolute path of the named CLI installed under the
// repository's node_modules. For Claude it prefers the native binary of the
// platform package when the bin entry is the placeholder stub left by an
// install that skipped postinstall scripts.
func Find(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	candidates := []string{filepath.Join(root, "node_modules", ".bin", name)}
	if name == CodexACP {
		// The native binary of the platform package, not the bin entry's
		// node launcher that spawns it.
		candidates = append([]string{filepath.Join(root, "node_modules", "@zed-industries", "codex-acp-"+runtime.GOOS+"-"+npmArch(), "bin", "codex-acp")}, candidates...)
	}
	if name == Claude {
		candidates = append(candidates, filepath.Join(root, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude"))
	}
	var reasons []string
	for _, c := range candidates {
		p, err := filepath.EvalSymlinks(c)
		if err != nil {
			reasons = append(reasons, err.Error())
			continue
		}
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			reasons = append(reasons, p+": not an executable file")
			continue
		}
		if name == Claude && fi.Size() < 1<<20 {
			// The npm placeholder stub: it only prints install instructions.
			reasons = append(reasons, p+": placeholder stub (postinstall skipped)")
			continue
		}
		return p, nil
	}
	return "", fmt.Errorf("realcli: %s not installed (%s)", name, strings.Join(reasons, "; "))
}

// npmArch is the architecture as npm platform packages name it.
func npmArch() string {
	if runtime.GOARCH == "amd64" {
		return "x64"
	}
	return runtime.GOARCH
}

// Require returns the path of the named CLI, or skips t (fails it when
// CI=true) when the binary is not installed.
func Require(t testing.TB, name string) string {
	t.Helper()
	p, err := Find(name)
	testenv.Require(t, "the "+name+" CLI", err)
	return p
}

// Cmdlines returns the command lines (arguments joined by spaces) of the
// processes visible in /proc whose command line contains substr, by pid.
// Processes that exit while being read are skipped.
func Cmdlines(substr string) map[int]string {
	out := map[int]string{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		s := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
		if strings.Contains(s, substr) {
			out[pid] = s
		}
	}
	return out
}

// WaitGone polls Cmdlines(substr) until no process matches or timeout
// passes, and returns what still matches. Killed processes can take a moment
// to leave /proc; this is a bound, not a timing assertion.
func WaitGone(substr string, timeout time.Duration) map[int]string {
	var procs map[int]string
	testenv.Poll(timeout, func() bool { procs = Cmdlines(substr); return len(procs) == 0 })
	return procs
}

// WaitFor polls Cmdlines(substr) until some process matches or timeout
// passes (a process in the middle of an exec can briefly show an empty
// command line), and returns the matches.
func WaitFor(substr string, timeout time.Duration) map[int]string {
	var procs map[int]string
	testenv.Poll(timeout, func() bool { procs = Cmdlines(substr); return len(procs) > 0 })
	return procs
}
