package host_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/internal/hostconfig"
)

// procStat returns the fields of /proc/PID/stat after the command name
// (fields[0] is field 3, the state).
func procStat(pid string) []string {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return nil
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

// parent.nice reaches the parent process: while a run's scripted parent
// sleeps, the child of this process whose command line names the run's
// scenario runs at the configured nice value.
func TestParentNiceLowersTheParentProcess(t *testing.T) {
	const nice = 11
	self := procStat("self")
	if len(self) < 17 {
		t.Skip("no /proc")
	}
	if own, _ := strconv.Atoi(self[16]); own >= nice {
		t.Skipf("the test process already runs at nice %d", own)
	}
	scenario := filepath.Join(t.TempDir(), "slow.yaml")
	_ = os.WriteFile(scenario, []byte("- say: working on it\n- sleep: 1h\n"), 0o600)
	_, srv := newHost(t, &hostconfig.Config{Parent: hostconfig.Parent{Adapter: "scripted", Scenario: scenario, Nice: nice}})
	resp := post(t, srv.URL+"/agui", input)
	defer resp.Body.Close()
	// The run's stream has begun: its parent process has started.
	var got []string
	buf := make([]byte, 4096)
	var seen []byte
	for !bytes.Contains(seen, []byte("working on it")) {
		n, err := resp.Body.Read(buf)
		seen = append(seen, buf[:n]...)
		if err != nil {
			t.Fatalf("the parent never spoke: %v\n%s", err, seen)
		}
	}
	me := strconv.Itoa(os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid := filepath.Base(d)
		f := procStat(pid)
		if len(f) < 17 || f[1] != me {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		if bytes.Contains(cmdline, []byte(scenario)) {
			got = append(got, f[16])
		}
	}
	if len(got) != 1 || got[0] != strconv.Itoa(nice) {
		t.Fatalf("nice of the parent processes naming %s: %v, want [%d]", scenario, got, nice)
	}
	cr := post(t, srv.URL+"/agui/runs/run-client-1/cancel", "")
	cr.Body.Close()
}
