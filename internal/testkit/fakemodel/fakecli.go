package fakemodel

import (
	"bufio"
	"bytes"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// Environment variables that drive the fake CLI (see MaybeRunFakeCLI).
const (
	// FakeCLIEnv, set to "1", turns the process into the fake CLI.
	FakeCLIEnv = "AGENTADAPTOR_FAKE_CLI"
	// FakeCLIFixture is the file whose lines the fake CLI prints on stdout.
	FakeCLIFixture = "AGENTADAPTOR_FAKE_CLI_FIXTURE"
	// FakeCLIMode is "replay" (default: print every line, then exit),
	// "slow" (print the first FakeCLISlowLines lines, then block until
	// signalled) or "partial" (print the first FakeCLISlowLines lines, the
	// next one without its newline, then exit: a truncated stream).
	FakeCLIMode = "AGENTADAPTOR_FAKE_CLI_MODE"
	// FakeCLISlowLines is how many lines "slow" and "partial" print (default 1).
	FakeCLISlowLines = "AGENTADAPTOR_FAKE_CLI_LINES"
	// FakeCLIExit is the exit code after replaying (default 0).
	FakeCLIExit = "AGENTADAPTOR_FAKE_CLI_EXIT"
	// FakeCLIStderr is written to stderr before exiting.
	FakeCLIStderr = "AGENTADAPTOR_FAKE_CLI_STDERR"
	// FakeCLIArgvFile, if set, receives the argv (NUL-separated) and the
	// environment names the fake CLI was started with.
	FakeCLIArgvFile = "AGENTADAPTOR_FAKE_CLI_ARGV_FILE"
)

// FakeCLIEnvFor returns the environment that makes a re-executed test binary
// (with MaybeRunFakeCLI in its TestMain) replay fixture in the given mode.
func FakeCLIEnvFor(fixture, mode string) map[string]string {
	return map[string]string{FakeCLIEnv: "1", FakeCLIFixture: fixture, FakeCLIMode: mode}
}

// MaybeRunFakeCLI turns the current process into a fake agent CLI when
// FakeCLIEnv is "1": it replays a fixture file on stdout line by line and
// exits, never returning. Call it first thing in TestMain; otherwise it
// returns immediately.
func MaybeRunFakeCLI() {
	if os.Getenv(FakeCLIEnv) != "1" {
		return
	}
	os.Exit(runFakeCLI())
}

func runFakeCLI() int {
	if p := os.Getenv(FakeCLIArgvFile); p != "" {
		var b bytes.Buffer
		b.WriteString(strings.Join(os.Args, "\x00"))
		b.WriteString("\n")
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			b.WriteString(k + "\n")
		}
		_ = os.WriteFile(p, b.Bytes(), 0o600)
	}
	data, err := os.ReadFile(os.Getenv(FakeCLIFixture))
	if err != nil {
		os.Stderr.WriteString("fake cli: " + err.Error() + "\n")
		return 2
	}
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	lines := bytes.SplitAfter(data, []byte("\n"))
	n, err := strconv.Atoi(os.Getenv(FakeCLISlowLines))
	if err != nil || n < 0 {
		n = 1
	}
	switch os.Getenv(FakeCLIMode) {
	case "slow":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
		for _, l := range lines[:min(n, len(lines))] {
			_, _ = w.Write(l)
		}
		_ = w.Flush()
		<-c
		return 130
	case "partial":
		for _, l := range lines[:min(n, len(lines))] {
			_, _ = w.Write(l)
		}
		if n < len(lines) && n > 0 {
			l := bytes.TrimRight(lines[n], "\n")
			_, _ = w.Write(l[:len(l)/2])
		}
	default:
		_, _ = w.Write(data)
	}
	_ = w.Flush()
	if s := os.Getenv(FakeCLIStderr); s != "" {
		os.Stderr.WriteString(s + "\n")
	}
	code, _ := strconv.Atoi(os.Getenv(FakeCLIExit))
	return code
}

// FakeCLIOption is the run option that gives a run the environment of
// FakeCLIEnvFor(fixture, mode), plus the extra variables given as name,
// value pairs.
func FakeCLIOption(fixture, mode string, extra ...string) agentadaptor.RunOption {
	env := FakeCLIEnvFor(fixture, mode)
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return agentadaptor.WithEnv(env)
}
