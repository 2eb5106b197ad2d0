package agentadaptor_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/shellagent"
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

// reportNice is a shell function printing "WHO NICE", the nice value of the
// shell (or subshell) that runs it, read from /proc/self/stat: the shell
// opens the file itself for the redirection, so "self" is that shell.
const reportNice = `report() { read -r s < /proc/self/stat; s=${s##*) }; set -- $s; echo "$who ${17}"; }`

// The child and the processes it starts run at the nice value of WithNice:
// the child itself, a grandchild it starts at once (which may exist before
// the SDK sets the value, and is then reached through the process group)
// and one it starts later (which inherits the value). Each reports only
// after a gate that opens once Start has returned, when the value is set.
// Without WithNice, or with 0, all run at the test process's own value.
func TestWithNiceLowersTheChildAndItsProcesses(t *testing.T) {
	const n = 7
	inherited := ownNice(t)
	if inherited >= n {
		t.Skipf("the test process already runs at nice %d, not below %d", inherited, n)
	}
	ctx := testCtx(t)
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
			early := shellagent.Gate(filepath.Join(t.TempDir(), "early"))
			late := shellagent.Gate(filepath.Join(t.TempDir(), "late"))
			script := shellagent.Script(
				reportNice,
				"(who=early; "+early.Wait()+"; report) &",
				late.Wait(),
				"(who=later; report) &",
				"who=child; report",
				"wait",
			)
			sdk := newSDK(t, &shellagent.Adapter{Script: script, PlainText: true})
			h, err := sdk.Start(ctx, "nice", tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			early.Release(t)
			late.Release(t)
			res, err := h.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != agentadaptor.StatusCompleted {
				t.Fatalf("status %s: %v", res.Status, res.Failure)
			}
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(res.RawStreams.Stdout)), "\n") {
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

// niceHelperEnv makes TestNiceHelperProcess the helper process of
// TestSetGroupNiceReachesEveryThread.
const niceHelperEnv = "AGENTADAPTOR_TEST_NICE_HELPER"

// TestNiceHelperProcess is not a test: run by
// TestSetGroupNiceReachesEveryThread as the leader of a process group, it
// has several threads (one of them locked by a goroutine, besides the
// runtime's), starts a grandchild, says "ready" and waits until its stdin
// closes.
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
	gc := exec.Command("sleep", "300")
	if err := gc.Start(); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	_ = gc.Process.Kill()
	_ = gc.Wait()
	os.Exit(0)
}

// groupNices returns the nice value of every thread of every process in
// the process group pgid, keyed "pid/tid".
func groupNices(t *testing.T, pgid int) map[string]int {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) { // field 5: the process group
			continue
		}
		dir := filepath.Dir(p)
		tasks, _ := filepath.Glob(filepath.Join(dir, "task", "[0-9]*", "stat"))
		for _, task := range tasks {
			tb, err := os.ReadFile(task)
			if err != nil {
				continue
			}
			out[filepath.Base(dir)+"/"+filepath.Base(filepath.Dir(task))] = statNice(t, string(tb))
		}
	}
	return out
}

// setGroupNice reaches every thread of every process already in the group,
// not only the leader's main thread (what PRIO_PROCESS would reach on
// Linux): the helper's threads and its grandchild exist before it is called.
func TestSetGroupNiceReachesEveryThread(t *testing.T) {
	const n = 9
	inherited := ownNice(t)
	if inherited >= n {
		t.Skipf("the test process already runs at nice %d, not below %d", inherited, n)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNiceHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), niceHelperEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	before := groupNices(t, pgid)
	leaderThreads, others := 0, 0
	for k, v := range before {
		if v != inherited {
			t.Fatalf("%s runs at nice %d before, want %d", k, v, inherited)
		}
		if strings.HasPrefix(k, strconv.Itoa(pgid)+"/") {
			leaderThreads++
		} else {
			others++
		}
	}
	if leaderThreads < 2 || others < 1 {
		t.Fatalf("want a leader with several threads and a grandchild in the group, have %v", before)
	}
	if err := agentadaptor.SetGroupNice(pgid, n); err != nil {
		t.Fatal(err)
	}
	after := groupNices(t, pgid)
	for k := range before {
		if v, ok := after[k]; ok && v != n {
			t.Errorf("%s runs at nice %d, want %d", k, v, n)
		}
	}
	// A group that has gone is not an error.
	_ = stdin.Close()
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	_ = cmd.Wait()
	if err := agentadaptor.SetGroupNice(pgid, n); err != nil {
		t.Errorf("after the group ended: %v", err)
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
