package agentadaptor_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/shellagent"
)

// statNice returns the nice value (field 19) of a /proc/.../stat line.
func statNice(t *testing.T, stat string) int {
	t.Helper()
	// comm (field 2) may hold spaces: count from the ')' that closes it,
	// after which field 3 comes.
	i := strings.LastIndexByte(stat, ')')
	f := strings.Fields(stat[i+1:])
	if i < 0 || len(f) < 17 {
		t.Fatalf("unexpected stat line %q", stat)
	}
	n, err := strconv.Atoi(f[16])
	if err != nil {
		t.Fatalf("stat line %q: nice: %v", stat, err)
	}
	return n
}

// ownNice is the test process's nice value, which its children inherit.
func ownNice(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return statNice(t, string(b))
}

// niceBelow returns the test process's own nice value, and skips the test
// when that is not below n (a child could not be shown to run lower).
func niceBelow(t *testing.T, n int) int {
	t.Helper()
	inherited := ownNice(t)
	if inherited >= n {
		t.Skipf("the test process already runs at nice %d, not below %d", inherited, n)
	}
	return inherited
}

// reportNice is a shell function printing "WHO NICE", the nice value of the
// shell (or subshell) that runs it, read from /proc/self/stat: the shell
// opens the file itself for the redirection, so "self" is that shell.
const reportNice = `report() { read -r s < /proc/self/stat; s=${s##*) }; set -- $s; echo "$who ${17}"; }`

// The child and the processes it starts run at the nice value of WithNice
// from their first instruction: the child reports at once, a grandchild
// forks at once and reports, and one forked later reports too. None waits
// for anything, so a value applied only after the start could be missed.
// Without WithNice, or with 0, all run at the test process's own value.
func TestWithNiceLowersTheChildAndItsProcesses(t *testing.T) {
	const n = 7
	inherited := niceBelow(t, n)
	ctx := testCtx(t)
	script := shellagent.Script(
		reportNice,
		"(who=early; report) &",
		"who=child; report",
		"(who=later; report) &",
		"wait",
	)
	for _, tc := range []struct {
		name string
		opts []agentadaptor.RunOption
		want int
	}{
		{"WithNice", []agentadaptor.RunOption{agentadaptor.WithNice(n)}, n},
		{"default", nil, inherited},
		{"WithNice(0)", []agentadaptor.RunOption{agentadaptor.WithNice(0)}, inherited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sdk := newSDK(t, &shellagent.Adapter{Script: script, PlainText: true})
			res, err := sdk.Run(ctx, "nice", tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != agentadaptor.StatusCompleted {
				t.Fatalf("status %s: %v", res.Status, res.Failure)
			}
			got := map[string]string{}
			for line := range strings.SplitSeq(strings.TrimSpace(string(res.RawStreams.Stdout)), "\n") {
				who, nice, _ := strings.Cut(line, " ")
				got[who] = nice
			}
			want := strconv.Itoa(tc.want)
			for _, who := range []string{"child", "early", "later"} {
				if got[who] != want {
					t.Errorf("%s runs at nice %q, want %s (stdout %q)", who, got[who], want, res.RawStreams.Stdout)
				}
			}
		})
	}
}

// niceHelperEnv makes TestNiceHelperProcess the child of
// TestWithNiceReachesEveryThread.
const niceHelperEnv = "AGENTADAPTOR_TEST_NICE_HELPER"

// TestNiceHelperProcess is not a test: run by TestWithNiceReachesEveryThread
// as a run's child, it makes sure it has several threads (one locked by a
// goroutine, besides the runtime's), starts a grandchild and prints
// "TID NICE" for each of its threads and "grandchild NICE".
func TestNiceHelperProcess(t *testing.T) {
	if os.Getenv(niceHelperEnv) != "1" {
		return
	}
	locked := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		close(locked)
		select {}
	}()
	<-locked
	tasks, _ := filepath.Glob("/proc/self/task/[0-9]*/stat")
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err == nil {
			fmt.Println(filepath.Base(filepath.Dir(task)), statNice(t, string(b)))
		}
	}
	out, err := exec.Command("/bin/sh", "-c", reportNice+"; who=grandchild; report").Output()
	if err != nil {
		fmt.Println("error", err)
	}
	os.Stdout.Write(out)
	os.Exit(0)
}

// threadNices returns the nice value of each thread of the test process.
func threadNices(t *testing.T) map[string]int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/[0-9]*/stat")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no threads in /proc/self/task: %v", err)
	}
	out := map[string]int{}
	for _, task := range tasks {
		if b, err := os.ReadFile(task); err == nil {
			out[filepath.Base(filepath.Dir(task))] = statNice(t, string(b))
		}
	}
	return out
}

// WithNice reaches every thread of a multi-threaded child (a Go program)
// and its grandchild, and leaves the host's own threads alone: the thread
// the SDK lowers to fork the child from does not outlive the start.
func TestWithNiceReachesEveryThread(t *testing.T) {
	const n = 9
	inherited := niceBelow(t, n)
	ctx := testCtx(t)
	a := &shellagent.Adapter{PlainText: true, Edit: func(_ *agentadaptor.AdapterRequest, inv *agentadaptor.Invocation) {
		inv.Path = os.Args[0]
		inv.Args = []string{"-test.run=^TestNiceHelperProcess$", "-test.count=1"}
		if inv.Env == nil {
			inv.Env = map[string]string{}
		}
		inv.Env[niceHelperEnv] = "1"
	}}
	sdk := newSDK(t, a)
	for range 3 {
		res, err := sdk.Run(ctx, "threads", agentadaptor.WithNice(n))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(res.RawStreams.Stdout)), "\n")
		threads, grandchild := 0, false
		for _, line := range lines {
			who, nice, _ := strings.Cut(line, " ")
			if nice != strconv.Itoa(n) {
				t.Errorf("%s runs at nice %s, want %d", who, nice, n)
			}
			if who == "grandchild" {
				grandchild = true
			} else {
				threads++
			}
		}
		if threads < 2 || !grandchild || res.Status != agentadaptor.StatusCompleted {
			t.Fatalf("want several threads and a grandchild reported by a completed run, got %s: %q", res.Status, res.RawStreams.Stdout)
		}
	}
	for tid, nice := range threadNices(t) {
		if nice != inherited {
			t.Errorf("the test process's thread %s runs at nice %d, want %d", tid, nice, inherited)
		}
	}
}

// A nice value outside 0..MaxNice is a *ConfigError: from Start, and from
// New when it is a run default.
func TestWithNiceRange(t *testing.T) {
	ctx := testCtx(t)
	sdk := newSDK(t, shell(textScript("hi")))
	for _, n := range []int{-1, -20, agentadaptor.MaxNice + 1, 40} {
		_, err := sdk.Start(ctx, "x", agentadaptor.WithNice(n))
		var ce *agentadaptor.ConfigError
		if !errors.As(err, &ce) || ce.Field != "WithNice" {
			t.Errorf("Start with WithNice(%d): %v, want a *ConfigError on WithNice", n, err)
		}
		_, err = agentadaptor.New(agentadaptor.WithAdapters(shell("true")), agentadaptor.WithRunDefaults(agentadaptor.WithNice(n)))
		if !errors.As(err, &ce) || ce.Field != "WithNice" {
			t.Errorf("New with default WithNice(%d): %v, want a *ConfigError on WithNice", n, err)
		}
	}
	if _, err := agentadaptor.New(agentadaptor.WithAdapters(shell("true")), agentadaptor.WithRunDefaults(agentadaptor.WithNice(agentadaptor.MaxNice))); err != nil {
		t.Errorf("New with default WithNice(MaxNice): %v", err)
	}
	res, err := sdk.Run(ctx, "x", agentadaptor.WithNice(agentadaptor.MaxNice))
	if err != nil || res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("Run with WithNice(MaxNice): %v %+v", err, res)
	}
}
