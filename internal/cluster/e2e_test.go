package cluster_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/testkit/ssetest"

	"github.com/seed0634/agentadaptor/internal/testkit/aguiverify"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/internal/testkit/natstest"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
)

// binary is `agentadaptor`, built once for these tests.
var binary string

func TestMain(m *testing.M) {
	code := func() int {
		dir, err := os.MkdirTemp("", "agentadaptor-cluster-e2e")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		root, err := testenv.RepoRoot()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		binary = filepath.Join(dir, "agentadaptor")
		cmd := exec.Command("go", "build", "-o", binary, "./cmd/agentadaptor")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

const parentScenario = `steps:
  - say: "Asking the research agent."
  - call: {tool: delegate_to_agent, args: {agent: research, objective: "Find it."}}
  - say_result: "Result: {{.JSON.status}} {{.JSON.summary}}"
`

// writeConfig writes a replica's config and returns its path.
func writeConfig(t *testing.T, dir string, ns *natstest.Server, replica string, remote *fakea2a.Server) string {
	t.Helper()
	scenario := filepath.Join(dir, "parent.yaml")
	if err := os.WriteFile(scenario, []byte(parentScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`addr: 127.0.0.1:0
parent: {adapter: scripted, scenario: %q}
agents:
  - {key: research, display_name: Research Agent, protocol: a2a, agent_card_url: %q}
cluster: {nats_url: %q, replica: %s, lease: 2s, creds_ref: %q}
`, scenario, remote.CardURL(), ns.URL(), replica, ns.CredsRef())
	path := filepath.Join(dir, replica+".yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveProc is one `agentadaptor serve` replica.
type serveProc struct {
	cmd  *exec.Cmd
	url  string
	mu   sync.Mutex
	logs bytes.Buffer
	done chan struct{}
}

func startServe(t *testing.T, config string) *serveProc {
	t.Helper()
	p := &serveProc{cmd: exec.Command(binary, "serve", "--config", config), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "AGENTADAPTOR_STATE_DIR="+t.TempDir())
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			p.mu.Unlock()
			if _, u, ok := strings.Cut(line, "listening on "); ok {
				select {
				case ready <- strings.TrimSpace(u):
				default:
				}
			}
		}
		_ = p.cmd.Wait()
	}()
	t.Cleanup(func() { p.kill(syscall.SIGKILL) })
	select {
	case p.url = <-ready:
	case <-p.done:
		t.Fatalf("serve exited before listening:\n%s", p.log())
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not start:\n%s", p.log())
	}
	return p
}

func (p *serveProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// kill sends sig and waits for the process to exit.
func (p *serveProc) kill(sig syscall.Signal) {
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(45 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func threadBody(runID string) string {
	return `{"threadId":"t-` + runID + `","runId":"` + runID + `","messages":[{"id":"u1","role":"user","content":"hi"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`
}

func post(t *testing.T, base, runID string) *ssetest.Reader {
	return ssetest.Open(t, ssetest.PostRequest(t.Context(), t, base+"/agui", threadBody(runID)))
}

func get(t *testing.T, url string, header ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type auditRec struct {
	DelegationID string `json:"delegation_id"`
	Status       string `json:"status"`
	RemoteTaskID string `json:"remote_task_id"`
	Events       []struct {
		RemoteTaskID string `json:"remote_task_id"`
	} `json:"events"`
	Result *struct {
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	} `json:"result"`
}

func audits(t *testing.T, base, runID string) []auditRec {
	code, body := get(t, base+"/agui/runs/"+runID+"/delegations")
	var recs []auditRec
	if code != 200 || json.Unmarshal([]byte(body), &recs) != nil {
		return nil
	}
	return recs
}

func verify(t *testing.T, raw []byte) {
	t.Helper()
	if err := aguiverify.VerifyReader(bytes.NewReader(raw), aguiverify.AllowUnnumberedFrames()); err != nil {
		t.Fatalf("invalid AG-UI stream: %v\n%s", err, raw)
	}
}

// kill -9 of the replica running a run mid-delegation: a survivor ends the
// run's stream (followed from another replica) with RUN_ERROR host_lost
// after closing what was open, and the remote task is cancelled exactly
// once across the two survivors.
func TestKillOwnerMidDelegation(t *testing.T) {
	ns := natstest.New(t)
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.Working("searching"), fakea2a.TextChunks("partial "), fakea2a.Hang())...)})
	dir := t.TempDir()
	a := startServe(t, writeConfig(t, dir, ns, "a", remote))
	b := startServe(t, writeConfig(t, dir, ns, "b", remote))
	c := startServe(t, writeConfig(t, dir, ns, "c", remote))

	live := post(t, a.url, "run-k")
	cursor := ssetest.LastID(live.Until(t, `"delta":"partial "`))
	// The remote task's id is in the shared audit before the owner dies.
	eventually(t, "the audit record with the remote task id", func() bool {
		for _, r := range audits(t, b.url, "run-k") {
			if r.RemoteTaskID != "" {
				return true
			}
		}
		return false
	})
	follow := func() *ssetest.Reader {
		req, _ := http.NewRequest(http.MethodGet, b.url+"/agui/runs/run-k/events", nil)
		req.Header.Set("Last-Event-ID", strconv.FormatUint(cursor, 10))
		return ssetest.Open(t, req)
	}
	onB := follow()
	a.kill(syscall.SIGKILL)
	killed := time.Now()

	onB.Rest()
	t.Logf("the run ended on b %v after its replica was killed (lease 2s)", time.Since(killed).Round(10*time.Millisecond))
	raw := onB.Raw.Bytes()
	if !bytes.Contains(raw, []byte(`"code":"host_lost"`)) || !bytes.Contains(raw, []byte(`"type":"RUN_ERROR"`)) {
		t.Fatalf("the stream on B did not end with RUN_ERROR host_lost:\n%s\n--- b:\n%s\n--- c:\n%s", raw, b.log(), c.log())
	}
	verify(t, raw)
	// Ids stay contiguous from the cursor.
	next := cursor + 1
	for line := range strings.SplitSeq(string(raw), "\n") {
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			n, _ := strconv.ParseUint(id, 10, 64)
			if n != next {
				t.Fatalf("id %d after %d:\n%s", n, next-1, raw)
			}
			next++
		}
	}
	// The subagent was closed before the run's end.
	if !bytes.Contains(raw, []byte(`"name":"subagent.failed"`)) {
		t.Fatalf("the open subagent was not closed:\n%s", raw)
	}
	// The whole stream, replayed from C, is valid too.
	code, whole := get(t, c.url+"/agui/runs/run-k/events")
	if code != 200 {
		t.Fatalf("replay from C: %d %s", code, whole)
	}
	verify(t, []byte(whole))
	// Exactly one CancelTask, and the audit says why.
	eventually(t, "the audit record ended host_lost", func() bool {
		recs := audits(t, c.url, "run-k")
		return len(recs) == 1 && recs[0].Status == "cancelled" && recs[0].Result != nil && recs[0].Result.Error != nil && recs[0].Result.Error.Code == "host_lost"
	})
	time.Sleep(3 * 2 * time.Second) // more scans of both survivors
	if n := len(remote.RequestsFor("CancelTask")); n != 1 {
		t.Fatalf("%d CancelTask calls, want exactly 1\n--- b:\n%s\n--- c:\n%s", n, b.log(), c.log())
	}
	// The runId stays taken; cancel of the ended run is a 404.
	req, _ := http.NewRequest(http.MethodPost, c.url+"/agui/runs/run-k/cancel", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("cancel of the lost run: %d", resp.StatusCode)
	}
	http.DefaultClient.CloseIdleConnections()
}

// Every replica and the NATS server restart: the audit is still readable
// and a retained run replays whole, from file storage.
func TestRestartOfEveryReplica(t *testing.T) {
	ns := natstest.New(t)
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.Working("searching"), fakea2a.TextChunks("all ", "of it"), fakea2a.Artifact(fakea2a.ArtifactSpec{Name: "notes.md", Text: "NOTES"}),
		fakea2a.Completed("done"))...)})
	dir := t.TempDir()
	a := startServe(t, writeConfig(t, dir, ns, "a", remote))
	b := startServe(t, writeConfig(t, dir, ns, "b", remote))
	live := post(t, a.url, "run-r")
	live.Until(t, "RUN_FINISHED")
	live.Rest()
	original := live.Raw.Bytes()
	verify(t, original)
	eventually(t, "the run replayable from B", func() bool {
		code, body := get(t, b.url+"/agui/runs/run-r/events")
		return code == 200 && strings.Contains(body, "RUN_FINISHED")
	})
	a.kill(syscall.SIGTERM)
	b.kill(syscall.SIGTERM)
	if err := ns.Restart(); err != nil {
		t.Fatal(err)
	}
	a2 := startServe(t, writeConfig(t, dir, ns, "a", remote))
	b2 := startServe(t, writeConfig(t, dir, ns, "b", remote))
	recs := audits(t, b2.url, "run-r")
	if len(recs) != 1 || recs[0].Status != "completed" {
		t.Fatalf("audit after the restart: %+v", recs)
	}
	for _, base := range []string{a2.url, b2.url} {
		code, replay := get(t, base+"/agui/runs/run-r/events")
		if code != 200 || !bytes.Equal(dataLines([]byte(replay)), dataLines(original)) {
			t.Fatalf("replay from %s after the restart: %d\n%s\nwant\n%s", base, code, replay, original)
		}
	}
	if code, body := get(t, b2.url+"/agui/runs/run-r/delegations/"+recs[0].DelegationID+"/artifacts/notes.md"); code != 200 || body != "NOTES" {
		t.Fatalf("artifact after the restart: %d %q", code, body)
	}
	http.DefaultClient.CloseIdleConnections()
}

func dataLines(b []byte) []byte {
	var out bytes.Buffer
	for l := range bytes.SplitSeq(b, []byte("\n")) {
		if bytes.HasPrefix(l, []byte("id: ")) || bytes.HasPrefix(l, []byte("data: ")) {
			out.Write(l)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

// Without NATS at startup, serve exits 2 with one clear line.
func TestServeWithoutNATS(t *testing.T) {
	ns := natstest.New(t)
	url := ns.URL()
	ns.Stop()
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Completed("done"))})
	cmd := exec.Command(binary, "serve", "--config", writeConfig(t, t.TempDir(), ns, "a", remote))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := -1
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], "cannot reach NATS at "+url) {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
}
