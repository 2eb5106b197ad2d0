//go:build linux

package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/internal/testkit/natstest"
	"github.com/seed0634/agentadaptor/internal/testkit/ssetest"
)

// clusterConfig writes replica's config: the delegating parent, lease,
// and generous per-replica bounds (many runs at once).
func clusterConfig(t *testing.T, dir string, ns *natstest.Server, replica string, remote *fakea2a.Server, lease time.Duration) string {
	t.Helper()
	scenario := filepath.Join(dir, "parent.yaml")
	if err := os.WriteFile(scenario, []byte(parentScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`addr: 127.0.0.1:0
max_active_runs: 1000
parent: {adapter: scripted, scenario: %q}
agents:
  - {key: research, display_name: Research Agent, protocol: a2a, agent_card_url: %q,
     policy: {max_concurrent_global: 1000, max_concurrent_per_run: 4, max_timeout: 5m}}
cluster: {nats_url: %q, replica: %s, lease: %s, creds_ref: %q}
`, scenario, remote.CardURL(), ns.URL(), replica, lease, ns.CredsRef())
	path := filepath.Join(dir, replica+".yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// readAllEvents reads a run's whole stream from one replica (from the
// start) until its end.
func readAllEvents(ctx context.Context, base, runID string) (int, []byte, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/agui/runs/"+runID+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// countTerminals counts the terminal events among a stream's data lines.
func countTerminals(lines []byte) int {
	return bytes.Count(lines, []byte(`"type":"RUN_FINISHED"`)) + bytes.Count(lines, []byte(`"type":"RUN_ERROR"`))
}

// oneHistory checks, for one run, that the owner's own client and a whole
// replay from every replica hold the same frames (ids and data, byte for
// byte) with exactly one terminal event.
func oneHistory(t *testing.T, runID string, own []byte, replicas ...*serveProc) {
	t.Helper()
	want := dataLines(own)
	if n := countTerminals(want); n != 1 {
		t.Errorf("%s: the owner's client got %d terminal events:\n%s", runID, n, own)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, p := range replicas {
		code, body, err := readAllEvents(ctx, p.url, runID)
		if err != nil || code != 200 {
			t.Errorf("%s from %s: %d %v %s", runID, p.url, code, err, body)
			continue
		}
		if got := dataLines(body); !bytes.Equal(got, want) {
			t.Errorf("%s: %s serves other frames than the owner's client got:\n%s\n--- owner's client:\n%s", runID, p.url, got, want)
		}
	}
}

// cancelsPerTask counts CancelTask calls at the remote, by task id.
func cancelsPerTask(remote *fakea2a.Server) map[string]int {
	n := map[string]int{}
	for _, r := range remote.RequestsFor("CancelTask") {
		if r.TaskID != "" {
			n[string(r.TaskID)]++
		}
	}
	return n
}

// activeRuns reads a replica's /healthz active_runs.
func activeRuns(t *testing.T, p *serveProc) int {
	_, body := get(t, p.url+"/healthz")
	var h struct {
		Active int `json:"active_runs"`
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		return -1
	}
	return h.Active
}

// metric returns the sum of a Prometheus series' samples whose line starts
// with prefix (name and labels).
func metric(t *testing.T, p *serveProc, prefix string) float64 {
	_, body := get(t, p.url+"/metrics")
	sum := 0.0
	for l := range strings.SplitSeq(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}

// The owner replica (a real process) is stopped (SIGSTOP) for two leases
// mid-delegation, until another replica has ended its run, then continued:
// its own client, a follower and a replay on every replica see the same
// frames and one terminal (RUN_ERROR host_lost); the remote task gets at
// most one CancelTask, counted at the remote; /metrics shows the takeover
// and the fenced run.
func TestPausedOwnerOneHistory(t *testing.T) {
	const lease = 2 * time.Second
	ns := natstest.New(t)
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.Working("searching"), fakea2a.TextChunks("partial "), fakea2a.Hang())...)})
	dir := t.TempDir()
	a := startServe(t, clusterConfig(t, dir, ns, "a", remote, lease))
	b := startServe(t, clusterConfig(t, dir, ns, "b", remote, lease))
	c := startServe(t, clusterConfig(t, dir, ns, "c", remote, lease))

	live := post(t, a.url, "run-p")
	live.Until(t, `"delta":"partial "`)
	eventually(t, "the audit record with the remote task id", func() bool {
		for _, r := range audits(t, b.url, "run-p") {
			if r.RemoteTaskID != "" {
				return true
			}
		}
		return false
	})
	req, _ := http.NewRequest(http.MethodGet, b.url+"/agui/runs/run-p/events", nil)
	onB := ssetest.Open(t, req)
	onB.Until(t, `"delta":"partial "`)

	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	continued := false
	defer func() {
		if !continued {
			_ = a.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	time.Sleep(2 * lease) // the stimulus: the owner is away longer than its lease
	onB.Until(t, `"code":"host_lost"`)
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	continued = true

	live.Rest()
	onB.Rest()
	own := live.Raw.Bytes()
	if !bytes.Contains(own, []byte(`"code":"host_lost"`)) {
		t.Fatalf("the owner's client did not get the journal's end:\n%s\n--- a:\n%s", own, a.log())
	}
	if !bytes.Equal(dataLines(onB.Raw.Bytes()), dataLines(own)) {
		t.Fatalf("the follower on b and the owner's client differ:\n%s\n--- owner:\n%s", onB.Raw.Bytes(), own)
	}
	oneHistory(t, "run-p", own, a, b, c)
	verify(t, own)

	eventually(t, "the owner's run to end", func() bool { return activeRuns(t, a) == 0 })
	eventually(t, "the audit record ended host_lost", func() bool {
		recs := audits(t, c.url, "run-p")
		return len(recs) == 1 && recs[0].Status == "cancelled"
	})
	for _, p := range []*serveProc{a, b, c} {
		eventually(t, "every cleanup watcher to finish", func() bool { return watchersLeft(p) == 0 })
	}
	for task, n := range cancelsPerTask(remote) {
		if n > 1 {
			t.Errorf("task %s got %d CancelTask calls, want at most 1: %v\n--- a:\n%s\n--- b:\n%s\n--- c:\n%s", task, n, cancelReasons(remote, task), a.log(), b.log(), c.log())
		}
	}
	if n := metric(t, b, "agentadaptor_cluster_takeovers_total") + metric(t, c, "agentadaptor_cluster_takeovers_total"); n < 1 {
		t.Errorf("no takeover in the survivors' /metrics")
	}
	if n := metric(t, b, `agentadaptor_cluster_runs_lost_total{cause="lease_expired"}`) + metric(t, c, `agentadaptor_cluster_runs_lost_total{cause="lease_expired"}`); n != 1 {
		t.Errorf("%v runs ended host_lost by the survivors, want 1", n)
	}
	if n := metric(t, a, `agentadaptor_cluster_runs_lost_total{cause="fenced"}`); n != 1 {
		t.Errorf("the owner's /metrics counts %v fenced runs, want 1", n)
	}
	if n := metric(t, a, "agentadaptor_cluster_nats_connected"); n != 1 {
		t.Errorf("the owner's /metrics: nats_connected %v", n)
	}
	noPermissionViolations(t, a, b, c)
	http.DefaultClient.CloseIdleConnections()
}

// Three replicas, the owner of a third of 200 runs held to a small CPU
// share (its cgroup's CPU quota where the test may set one, else stopped
// 90% of the time), lease 1s: its leases lapse and other replicas end some
// of its runs while it still works on them. For every run, its own client
// and a replay from every replica hold the same frames and exactly one
// terminal; every remote task gets at most one CancelTask, also once every
// cleanup watcher (a cancellation whose answer came too late) is done.
//
// Nothing waits on timing: the deadlines only stop a hung test. The phases'
// durations are logged (about 20 s on a loaded 2-core machine).
func TestStarvedOwnerOneHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("200 runs on 3 replicas")
	}
	const lease = time.Second
	const runs = 200
	ns := natstest.New(t)
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.Working("searching"), fakea2a.TextChunks("one ", "two ", "three"), fakea2a.Sleep(1500*time.Millisecond),
		fakea2a.Completed("done"))...)})
	dir := t.TempDir()
	a := startServe(t, clusterConfig(t, dir, ns, "a", remote, lease))
	how := starve(t, a.cmd.Process.Pid)
	t.Logf("the owner is starved by %s", how)
	b := startServe(t, clusterConfig(t, dir, ns, "b", remote, lease))
	c := startServe(t, clusterConfig(t, dir, ns, "c", remote, lease))
	reps := []*serveProc{a, b, c}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	began := time.Now()
	own := make([][]byte, runs)
	ids := make([]string, runs)
	var wg sync.WaitGroup
	var refused atomic.Int32 // 503 cluster_unavailable answers
	var failedMu sync.Mutex
	var failed []string // runs whose own client did not get their end
	for i := range runs {
		wg.Go(func() {
			// A replica may answer 503 cluster_unavailable (it could not
			// reserve the runId in time: a starved replica, or NATS itself
			// slow on a saturated machine): as documented, the client
			// retries, with a new runId, on another replica, until the
			// test's deadline.
			for attempt := 0; ; attempt++ {
				runID := fmt.Sprintf("run-s%03d-%d", i, attempt)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, reps[(i+attempt)%3].url+"/agui", strings.NewReader(threadBody(runID)))
				req.Header.Set("Content-Type", "application/json")
				fail := func(format string, args ...any) {
					t.Errorf(format, args...)
					failedMu.Lock()
					failed = append(failed, runID)
					failedMu.Unlock()
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					fail("%s (attempt %d): %v", runID, attempt+1, err)
					return
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusServiceUnavailable && bytes.Contains(body, []byte("cluster_unavailable")) {
					refused.Add(1)
					select {
					case <-time.After(time.Second):
					case <-ctx.Done():
						t.Errorf("run %d: refused until the deadline, last: %s", i, body)
						return
					}
					continue
				}
				if err != nil || resp.StatusCode != 200 {
					fail("%s: %d %v %s", runID, resp.StatusCode, err, body)
					return
				}
				own[i], ids[i] = body, runID
				return
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		for _, p := range reps {
			t.Logf("--- what replica %s logged about %v:\n%s", p.url, failed, linesAbout(p.log(), failed))
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("every client got its run's end after %v (%d attempts were refused 503 cluster_unavailable and retried)", time.Since(began), refused.Load())

	// Every run's history from every replica, a few runs at a time.
	lost := 0
	lostOn := map[string]int{}
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				oneHistory(t, ids[i], own[i], reps...)
			}
		})
	}
	for i := range runs {
		if t.Failed() {
			break
		}
		if bytes.Contains(own[i], []byte(`"code":"host_lost"`)) {
			lost++
			var n, attempt int
			_, _ = fmt.Sscanf(ids[i], "run-s%03d-%d", &n, &attempt)
			lostOn[[]string{"a", "b", "c"}[(n+attempt)%3]]++
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d of %d runs ended host_lost (by replica: %v); every history checked after %v", lost, runs, lostOn, time.Since(began))
	for _, p := range reps {
		eventually(t, "every run to end", func() bool { return activeRuns(t, p) == 0 })
		// A cancellation whose answer came too late is retried: count
		// the CancelTask calls once every retry is done.
		eventually(t, "every cleanup watcher to finish", func() bool { return watchersLeft(p) == 0 })
	}
	t.Logf("every run and cleanup ended after %v", time.Since(began))
	perTask := cancelsPerTask(remote)
	for task, n := range perTask {
		if n > 1 {
			t.Errorf("task %s got %d CancelTask calls, want at most 1: %v", task, n, cancelReasons(remote, task))
		}
	}
	t.Logf("%d remote tasks were sent a CancelTask", len(perTask))
	noPermissionViolations(t, reps...)
	http.DefaultClient.CloseIdleConnections()
}

// linesAbout returns the lines of a replica's log that name one of the
// runs (their runId as a log attribute), for a failure's message.
func linesAbout(log string, runIDs []string) string {
	var b strings.Builder
	for l := range strings.Lines(log) {
		for _, id := range runIDs {
			if strings.Contains(l, "="+id+" ") || strings.HasSuffix(strings.TrimSpace(l), "="+id) || strings.Contains(l, `"`+id+`"`) {
				b.WriteString(l)
				break
			}
		}
	}
	return b.String()
}

// watchersLeft is how many cleanup watchers replica p started and has not
// finished, from its log.
func watchersLeft(p *serveProc) int {
	l := p.log()
	return strings.Count(l, "cleanup watcher started") -
		strings.Count(l, "cancellation confirmed by cleanup watcher") - strings.Count(l, "cleanup watcher gave up")
}

// cancelReasons lists the reasons and replicas' runs of task's CancelTask
// calls, for a failure's message.
func cancelReasons(remote *fakea2a.Server, task string) []string {
	var out []string
	for _, r := range remote.RequestsFor("CancelTask") {
		if string(r.TaskID) == task {
			out = append(out, fmt.Sprintf("%v (run %v)", r.Metadata["reason"], r.Metadata["run_id"]))
		}
	}
	return out
}

// noPermissionViolations checks that the README's NATS permissions let the
// replicas do everything they did.
func noPermissionViolations(t *testing.T, reps ...*serveProc) {
	t.Helper()
	for _, p := range reps {
		if l := p.log(); strings.Contains(strings.ToLower(l), "permissions violation") {
			t.Errorf("a replica was refused a subject by the README's NATS configuration:\n%s", l)
		}
	}
}

// starve holds process pid to a small CPU share, bounded whatever else
// the machine runs: a CPU quota of 10% of one CPU in a cgroup of its own
// (cgroup v2 cpu.max, else v1 cpu.cfs_quota_us; the children it starts
// too) when the test may make one, else stopped (SIGSTOP) for 90% of the
// time. Everything is undone when the test ends. It returns how.
func starve(t *testing.T, pid int) string {
	t.Helper()
	name := fmt.Sprintf("agentadaptor-test-%d", os.Getpid())
	// Cgroups left by a test process that was killed (a timeout) before
	// its cleanup: removed once their process is gone (rmdir fails on a
	// cgroup that still has processes).
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/cpu"} {
		stale, _ := filepath.Glob(filepath.Join(root, "agentadaptor-test-*"))
		for _, dir := range stale {
			pid := strings.TrimPrefix(filepath.Base(dir), "agentadaptor-test-")
			if _, err := os.Stat("/proc/" + pid); err != nil {
				_ = os.Remove(dir)
			}
		}
	}
	try := func(dir string, files map[string]string, procs string) bool {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return false
		}
		ok := true
		for f, v := range files {
			if os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644) != nil {
				ok = false
			}
		}
		if ok && os.WriteFile(filepath.Join(dir, procs), []byte(strconv.Itoa(pid)), 0o644) != nil {
			ok = false
		}
		if !ok {
			_ = os.Remove(dir)
			return false
		}
		t.Cleanup(func() {
			// The process is killed by then (startServe's cleanup runs
			// later: kill it here); the cgroup can go once it is empty.
			_ = syscall.Kill(pid, syscall.SIGKILL)
			deadline := time.Now().Add(30 * time.Second)
			for os.Remove(dir) != nil && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
		})
		return true
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && strings.Contains(string(b), "cpu") {
		_ = os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+cpu"), 0o644)
		if try(filepath.Join("/sys/fs/cgroup", name), map[string]string{"cpu.max": "10000 100000"}, "cgroup.procs") {
			return "cgroup v2 cpu.max 10%"
		}
	}
	if try(filepath.Join("/sys/fs/cgroup/cpu", name), map[string]string{"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "10000"}, "cgroup.procs") {
		return "cgroup v1 cpu quota 10%"
	}
	// No cgroup: the test stops the process for 90 ms of every 100 ms
	// (SIGSTOP/SIGCONT), so it runs at most a tenth of the time. Unlike
	// nice 19 against busy loops, this adds no load to the machine and
	// does not starve the owner without bound when the machine is busy
	// (a nice 19 process gets almost nothing beside other work).
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = syscall.Kill(pid, syscall.SIGCONT) }()
		for {
			if syscall.Kill(pid, syscall.SIGSTOP) != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(90 * time.Millisecond):
			}
			_ = syscall.Kill(pid, syscall.SIGCONT)
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return "SIGSTOP for 90 ms of every 100 ms"
}
