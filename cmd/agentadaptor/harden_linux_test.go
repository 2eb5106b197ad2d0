package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// dumpableProbeEnv, set to a command line (arguments separated by \x1f),
// makes this test binary run that command and, once it listens, print
// its own dumpable state and exit (see TestMain): a fresh process, so only
// the command can have changed it.
const dumpableProbeEnv = "AGENTADAPTOR_TEST_DUMPABLE_PROBE"

func probeDumpable() {
	line := os.Getenv(dumpableProbeEnv)
	if line == "" {
		return
	}
	pr, pw := io.Pipe()
	go func() { _ = dispatch(context.Background(), strings.Split(line, "\x1f"), io.Discard, pw) }()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "listening on") {
			d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
			fmt.Printf("dumpable=%d err=%v\n", d, err)
			os.Exit(0)
		}
	}
	fmt.Println("the command stopped before listening")
	os.Exit(1)
}

// serve and a2a serve make themselves non-dumpable, so that the agent
// CLIs they start (same user) cannot read their environment from
// /proc/PID/environ, nor their memory.
func TestServeHidesItsEnvironment(t *testing.T) {
	scenario := writeScenarioFile(t, "- say: hi\n")
	for name, args := range map[string][]string{
		"serve":     {"serve", "--addr", "127.0.0.1:0"},
		"a2a serve": {"a2a", "serve", "--adapter", "scripted", "--scenario", scenario, "--addr", "127.0.0.1:0"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), dumpableProbeEnv+"="+strings.Join(args, "\x1f"), "GORACE=atexit_sleep_ms=0")
			out, err := cmd.Output()
			if err != nil || !strings.Contains(string(out), "dumpable=0 ") {
				t.Fatalf("%s: %s (%v): the process's /proc/PID/environ stays readable by its children's user", name, out, err)
			}
		})
	}
}
