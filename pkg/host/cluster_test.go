package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/hostyaml"
	"github.com/seed0634/agentadaptor/internal/testkit/aguiverify"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/internal/testkit/natstest"
	"github.com/seed0634/agentadaptor/internal/testkit/ssetest"
	"github.com/seed0634/agentadaptor/pkg/host"
	"go.uber.org/goleak"
)

// delegatingParent is a scripted parent that delegates once to "research".
const delegatingParent = `steps:
  - say: "Asking the research agent."
  - call: {tool: delegate_to_agent, args: {agent: research, objective: "Find it."}}
  - say_result: "Result: {{.JSON.status}} {{.JSON.summary}}"
`

// replicaConfig is a host config for one replica of a cluster on ns,
// delegating to the fake agent.
func replicaConfig(t *testing.T, ns *natstest.Server, replica string, remote *fakea2a.Server, policy hostconfig.Policy) *hostconfig.Config {
	t.Helper()
	cfg := scenarioConfig(t, delegatingParent)
	cfg.Agents = []hostconfig.Agent{{Key: "research", DisplayName: "Research Agent", Protocol: "a2a", AgentCardURL: remote.CardURL(), Policy: policy}}
	cfg.Cluster = hostconfig.Cluster{NATSURL: ns.URL(), Replica: replica, Lease: hostconfig.Duration(2 * time.Second), CredsRef: ns.CredsRef()}
	return cfg
}

func postRun(t *testing.T, base, runID string) *ssetest.Reader {
	return ssetest.Open(t, ssetest.PostRequest(t.Context(), t, base+"/agui", threadBody(runID)))
}

// threadBody is a run's input on its own chat thread.
func threadBody(runID string) string {
	return strings.Replace(strings.Replace(runInput, "%s", runID, 1), `"t-1"`, `"t-`+runID+`"`, 1)
}

func events(t *testing.T, base, runID string, cursor uint64) *ssetest.Reader {
	req, _ := http.NewRequest(http.MethodGet, base+"/agui/runs/"+runID+"/events", nil)
	req.Header.Set("Last-Event-ID", strconv.FormatUint(cursor, 10))
	return ssetest.Open(t, req)
}

// replica is one in-process host of a cluster.
type replica struct {
	h   *host.Host
	srv *httptest.Server
}

func startReplica(t *testing.T, cfg *hostconfig.Config) *replica {
	t.Helper()
	h, err := hostyaml.New(context.Background(), cfg, hostyaml.Options{StateDir: t.TempDir(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{h: h, srv: httptest.NewServer(h.Handler())}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r.srv.CloseClientConnections()
		_ = h.Shutdown(ctx)
		r.srv.Close()
	})
	return r
}

// testLogger logs warnings and errors to the test's log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func verifySSE(t *testing.T, raw []byte, opts ...aguiverify.Option) {
	t.Helper()
	if err := aguiverify.VerifyReader(bytes.NewReader(raw), append(opts, aguiverify.AllowUnnumberedFrames())...); err != nil {
		t.Fatalf("invalid AG-UI stream: %v\n%s", err, raw)
	}
}

// ids returns the ids of the numbered frames.
func ids(fs []ssetest.Frame) []uint64 {
	var out []uint64
	for _, f := range fs {
		if f.ID > 0 {
			out = append(out, f.ID)
		}
	}
	return out
}

// A run on replica A, followed from replica B with Last-Event-ID: the same
// stream, ids contiguous, re-opened where the cursor was, live until the
// end; B's audit and artifact routes serve the run too.
func TestClusterReconnectOnAnotherReplica(t *testing.T) {
	checkLeaks(t)
	ns := natstest.New(t)
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.Working("searching"), fakea2a.TextChunks("first ", "half "), fakea2a.AwaitRelease(),
		fakea2a.TextChunks("second ", "half"), fakea2a.Artifact(fakea2a.ArtifactSpec{Name: "notes.md", Text: "NOTES"}),
		fakea2a.Completed("done"))...)})
	a := startReplica(t, replicaConfig(t, ns, "a", remote, hostconfig.Policy{}))
	b := startReplica(t, replicaConfig(t, ns, "b", remote, hostconfig.Policy{}))

	live := postRun(t, a.srv.URL, "run-x")
	seen := live.Until(t, `"delta":"half "`)
	cursor := seen[len(seen)-1].ID
	// B follows from the cursor (the browser moved to B).
	onB := events(t, b.srv.URL, "run-x", cursor)
	for _, id := range remote.Tasks() {
		remote.Release(id)
	}
	rest := onB.Rest()
	whole := live.Rest()
	if len(rest) == 0 || rest[0].ID != 0 || !strings.Contains(rest[0].Data, "RUN_STARTED") {
		t.Fatalf("B's stream must re-open with RUN_STARTED:\n%s", onB.Raw.String())
	}
	got := ids(rest)
	for i, id := range got {
		if id != cursor+1+uint64(i) {
			t.Fatalf("B's ids are not contiguous from %d: %v", cursor+1, got)
		}
	}
	if last := ids(whole); len(last) == 0 || got[len(got)-1] != last[len(last)-1] {
		t.Fatalf("B ends at %v, A at %v", got, ids(whole))
	}
	verifySSE(t, onB.Raw.Bytes())
	nodeValidate(t, onB.Raw.Bytes())
	// The whole stream from B equals A's.
	full := events(t, b.srv.URL, "run-x", 0)
	allB := full.Rest()
	if len(allB) != len(seen)+len(whole) {
		t.Fatalf("B replays %d frames, A streamed %d", len(allB), len(seen)+len(whole))
	}
	verifySSE(t, full.Raw.Bytes())
	// A complete stream is a 204 on B too; an unknown cursor a 404.
	if code, _, _ := request(t, nil, "GET", b.srv.URL+"/agui/runs/run-x/events", "", map[string]string{"Last-Event-ID": strconv.FormatUint(got[len(got)-1], 10)}); code != 204 {
		t.Fatalf("complete stream on B: %d", code)
	}
	if code, _, _ := request(t, nil, "GET", b.srv.URL+"/agui/runs/run-x/events", "", map[string]string{"Last-Event-ID": "99999"}); code != 404 {
		t.Fatalf("unknown cursor on B: %d", code)
	}
	// The runId is taken across the cluster.
	if code, _, _ := request(t, nil, "POST", b.srv.URL+"/agui", runBody("run-x"), map[string]string{"Content-Type": "application/json"}); code != 409 {
		t.Fatalf("reusing a runId on B: %d", code)
	}
	// Audit and artifact routes on B.
	code, _, body := request(t, nil, "GET", b.srv.URL+"/agui/runs/run-x/delegations", "", nil)
	var recs []map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &recs) != nil || len(recs) != 1 || recs[0]["status"] != "completed" {
		t.Fatalf("audit on B: %d %s", code, body)
	}
	var uri string
	for _, f := range allB {
		if strings.Contains(f.Data, `"subagent.artifact"`) {
			var ev struct {
				Value struct {
					DelegationID string `json:"delegationId"`
					Artifact     struct {
						ID string `json:"id"`
					} `json:"artifact"`
				} `json:"value"`
			}
			_ = json.Unmarshal([]byte(f.Data), &ev)
			uri = "/agui/runs/run-x/delegations/" + ev.Value.DelegationID + "/artifacts/" + ev.Value.Artifact.ID
		}
	}
	if uri == "" {
		t.Fatal("no artifact event")
	}
	if code, hdr, body := request(t, nil, "GET", b.srv.URL+uri, "", nil); code != 200 || body != "NOTES" || hdr.Get("Content-Security-Policy") == "" {
		t.Fatalf("artifact on B: %d %q", code, body)
	}
	http.DefaultClient.CloseIdleConnections()
}

// Cancel and input answers sent to replica B reach the run on A, with the
// answers one host gives.
func TestClusterCancelAndInputThroughAnotherReplica(t *testing.T) {
	checkLeaks(t)
	ns := natstest.New(t)
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.Working("thinking"), fakea2a.InputRequired("Which year?"), fakea2a.TextChunks("answer"), fakea2a.Completed("done"))...)})
	a := startReplica(t, replicaConfig(t, ns, "a", remote, hostconfig.Policy{}))
	b := startReplica(t, replicaConfig(t, ns, "b", remote, hostconfig.Policy{}))
	json := map[string]string{"Content-Type": "application/json"}

	// Input: the question is answered through B.
	live := postRun(t, a.srv.URL, "run-in")
	q := live.Until(t, `"subagent.input_required"`)
	var ev struct {
		Value struct {
			DelegationID string `json:"delegationId"`
		} `json:"value"`
	}
	_ = jsonUnmarshal(q[len(q)-1].Data, &ev)
	inputURL := "/agui/runs/run-in/delegations/" + ev.Value.DelegationID + "/input"
	if code, _, body := request(t, nil, "POST", b.srv.URL+inputURL, `{"text":""}`, json); code != 400 || !strings.Contains(body, "empty_answer") {
		t.Fatalf("empty answer through B: %d %s", code, body)
	}
	if code, _, body := request(t, nil, "POST", b.srv.URL+"/agui/runs/run-in/delegations/nope/input", `{"text":"x"}`, json); code != 404 || !strings.Contains(body, "delegation_not_found") {
		t.Fatalf("unknown delegation through B: %d %s", code, body)
	}
	if code, _, body := request(t, nil, "POST", b.srv.URL+inputURL, `{"text":"1999"}`, json); code != 202 || !strings.Contains(body, "accepted") {
		t.Fatalf("answer through B: %d %s", code, body)
	}
	live.Until(t, "RUN_FINISHED")
	verifySSE(t, live.Raw.Bytes())
	if code, _, body := request(t, nil, "POST", b.srv.URL+inputURL, `{"text":"again"}`, json); code != 404 {
		t.Fatalf("answer to an ended delegation through B: %d %s", code, body)
	}

	// Cancel through B: the same 200 body, and A's stream ends cancelled.
	live2 := postRun(t, a.srv.URL, "run-c")
	live2.Until(t, `"subagent.input_required"`)
	code, _, body := request(t, nil, "POST", b.srv.URL+"/agui/runs/run-c/cancel", "", nil)
	if code != 200 || strings.TrimSpace(body) != `{"cancelled":true,"runId":"run-c"}` {
		t.Fatalf("cancel through B: %d %s", code, body)
	}
	rest := live2.Rest()
	if len(rest) == 0 || !strings.Contains(rest[len(rest)-1].Data, `"RUN_ERROR"`) || !strings.Contains(rest[len(rest)-1].Data, `"cancelled"`) {
		t.Fatalf("the run did not end cancelled:\n%s", live2.Raw.String())
	}
	verifySSE(t, live2.Raw.Bytes())
	if code, _, body := request(t, nil, "POST", b.srv.URL+"/agui/runs/run-c/cancel", "", nil); code != 404 || !strings.Contains(body, "run_not_found") {
		t.Fatalf("cancel of an ended run through B: %d %s", code, body)
	}
	if code, _, _ := request(t, nil, "POST", b.srv.URL+"/agui/runs/never/cancel", "", nil); code != 404 {
		t.Fatalf("cancel of an unknown run through B: %d", code)
	}
	http.DefaultClient.CloseIdleConnections()
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// Runs of a principal are its own on every replica: another principal gets
// 404 on B for A's run, its stream, cancel, input and audit.
func TestClusterOwnershipAcrossReplicas(t *testing.T) {
	ns := natstest.New(t)
	t.Setenv("ALICE_TOKEN", "alice-token-0123456789abcdef")
	t.Setenv("BOB_TOKEN", "bob-token-0123456789abcdefgh")
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.Working("thinking"), fakea2a.AwaitRelease(), fakea2a.Completed("done"))...)})
	mk := func(name string) *replica {
		cfg := replicaConfig(t, ns, name, remote, hostconfig.Policy{})
		cfg.Auth.Tokens = []hostconfig.Token{{Name: "alice", TokenRef: "env:ALICE_TOKEN"}, {Name: "bob", TokenRef: "env:BOB_TOKEN"}}
		return startReplica(t, cfg)
	}
	a, b := mk("a"), mk("b")
	alice := map[string]string{"Authorization": "Bearer alice-token-0123456789abcdef", "Content-Type": "application/json"}
	bob := map[string]string{"Authorization": "Bearer bob-token-0123456789abcdefgh", "Content-Type": "application/json"}
	req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/agui", strings.NewReader(runBody("run-al")))
	for k, v := range alice {
		req.Header.Set(k, v)
	}
	live := ssetest.Open(t, req)
	live.Until(t, `"subagent.status"`)
	waitFor(t, func() bool {
		code, _, _ := request(t, nil, "GET", b.srv.URL+"/agui/runs/run-al/delegations", "", alice)
		return code == 200
	})
	for _, path := range []string{"/agui/runs/run-al/events", "/agui/runs/run-al/delegations"} {
		if code, _, body := request(t, nil, "GET", b.srv.URL+path, "", bob); code != 404 {
			t.Errorf("bob GET %s on B: %d %s", path, code, body)
		}
	}
	if code, _, _ := request(t, nil, "POST", b.srv.URL+"/agui/runs/run-al/cancel", "", bob); code != 404 {
		t.Errorf("bob cancels alice's run on B: %d", code)
	}
	if code, _, _ := request(t, nil, "POST", b.srv.URL+"/agui/runs/run-al/delegations/d/input", `{"text":"x"}`, bob); code != 404 {
		t.Errorf("bob answers on B: %d", code)
	}
	for _, id := range remote.Tasks() {
		remote.Release(id)
	}
	live.Until(t, "RUN_FINISHED")
	if code, _, body := request(t, nil, "GET", b.srv.URL+"/agui/runs/run-al/events", "", map[string]string{"Authorization": alice["Authorization"], "Last-Event-ID": "1"}); code != 200 || !strings.Contains(body, "RUN_FINISHED") {
		t.Errorf("alice follows on B: %d %s", code, body)
	}
	http.DefaultClient.CloseIdleConnections()
}

// checkLeaks verifies, after everything the test started has stopped
// (its replicas, NATS), that no goroutine was left behind.
func checkLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		goleak.VerifyNone(t, ignore)
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// 200 runs spread over three replicas, each followed in full from another
// replica: nothing lost, every stream valid and identical.
func TestClusterManyRunsNothingLost(t *testing.T) {
	if testing.Short() {
		t.Skip("200 runs")
	}
	ns := natstest.New(t)
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.Working("on it"), fakea2a.TextChunks("a ", "b ", "c"), fakea2a.Completed("done"))...)})
	var reps []*replica
	for _, name := range []string{"a", "b", "c"} {
		cfg := replicaConfig(t, ns, name, remote, hostconfig.Policy{MaxConcurrentGlobal: 300, MaxConcurrentPerRun: 4})
		cfg.MaxActiveRuns = 300
		reps = append(reps, startReplica(t, cfg))
	}
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 8) // gentle on the 2-core CI machine: other packages run beside it
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			runID := fmt.Sprintf("run-%03d", i)
			owner, other := reps[i%3], reps[(i+1)%3]
			body, err := postAll(owner.srv.URL, runID)
			if err != nil {
				errs <- err
				return
			}
			if err := aguiverify.VerifyReader(bytes.NewReader(body)); err != nil {
				errs <- fmt.Errorf("%s on its replica: %w", runID, err)
				return
			}
			// The journal is asynchronous: the other replica has the whole
			// stream once it has the end.
			deadline := time.Now().Add(60 * time.Second)
			for {
				replay, code, err := getAll(other.srv.URL, runID)
				if err == nil && code == 200 && bytes.Equal(dataLines(replay), dataLines(body)) {
					return
				}
				if time.Now().After(deadline) {
					errs <- fmt.Errorf("%s from another replica: %d %v\n%s\nwant\n%s", runID, code, err, replay, body)
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	http.DefaultClient.CloseIdleConnections()
}

func postAll(base, runID string) ([]byte, error) {
	req, _ := http.NewRequest(http.MethodPost, base+"/agui", strings.NewReader(threadBody(runID)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("POST %s: %d %s", runID, resp.StatusCode, b)
	}
	return b, err
}

func getAll(base, runID string) ([]byte, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/agui/runs/"+runID+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}

// dataLines keeps the id and data lines of an SSE stream (no comments).
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

// NATS goes away while a run is in flight: new runs are refused with 503
// until NATS is back; the run goes on on its replica, its frames wait
// there (its own client is served only what the journal committed, so it
// waits too), and once NATS is back they reach the journal: the run's
// client and another replica serve the same whole stream.
func TestClusterNATSLostMidRun(t *testing.T) {
	checkLeaks(t)
	ns := natstest.New(t)
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.Working("searching"), fakea2a.AwaitRelease(), fakea2a.TextChunks("after ", "the outage"), fakea2a.Completed("done"))...)})
	a := startReplica(t, replicaConfig(t, ns, "a", remote, hostconfig.Policy{}))
	b := startReplica(t, replicaConfig(t, ns, "b", remote, hostconfig.Policy{}))
	live := postRun(t, a.srv.URL, "run-o")
	live.Until(t, `"subagent.status"`)
	ns.Stop()
	jsonCT := map[string]string{"Content-Type": "application/json"}
	waitFor(t, func() bool {
		code, _, body := request(t, nil, "POST", a.srv.URL+"/agui", threadBody("run-refused"), jsonCT)
		return code == 503 && strings.Contains(body, "cluster_unavailable")
	})
	if code, _, body := request(t, nil, "GET", a.srv.URL+"/healthz", "", nil); code != 200 || !strings.Contains(body, `"degraded"`) {
		t.Fatalf("healthz without NATS: %d %s", code, body)
	}
	for _, id := range remote.Tasks() {
		remote.Release(id)
	}
	waitFor(t, func() bool { return a.h.ActiveRuns() == 0 }) // the run finished on its replica
	if err := ns.Restart(); err != nil {
		t.Fatal(err)
	}
	rest := live.Rest()
	if len(rest) == 0 || !strings.Contains(rest[len(rest)-1].Data, "RUN_FINISHED") {
		t.Fatalf("the run's client did not get its end:\n%s", live.Raw.String())
	}
	verifySSE(t, live.Raw.Bytes())
	waitFor(t, func() bool {
		replay, code, err := getAll(b.srv.URL, "run-o")
		return err == nil && code == 200 && bytes.Equal(dataLines(replay), dataLines(live.Raw.Bytes()))
	})
	waitFor(t, func() bool {
		code, _, body := request(t, nil, "GET", a.srv.URL+"/healthz", "", nil)
		return code == 200 && strings.Contains(body, `"ok"`)
	})
	after := postRun(t, a.srv.URL, "run-after")
	after.Until(t, `"subagent.status"`)
	for _, id := range remote.Tasks() {
		remote.Release(id)
	}
	after.Until(t, "RUN_FINISHED")
	http.DefaultClient.CloseIdleConnections()
}

// A browser that leaves the run's replica and follows the run on another
// one keeps the run alive past the run replica's reconnect grace.
func TestClusterFollowerOnAnotherReplicaKeepsTheRun(t *testing.T) {
	checkLeaks(t)
	ns := natstest.New(t)
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.Working("searching"), fakea2a.AwaitRelease(), fakea2a.Completed("done"))...)})
	cfgA := replicaConfig(t, ns, "a", remote, hostconfig.Policy{})
	cfgA.ReconnectGrace = hostconfig.Duration(8 * time.Second)
	a := startReplica(t, cfgA)
	b := startReplica(t, replicaConfig(t, ns, "b", remote, hostconfig.Policy{}))
	live := postRun(t, a.srv.URL, "run-f")
	seen := live.Until(t, `"subagent.status"`)
	live.Resp.Body.Close() // the browser leaves A
	onB := events(t, b.srv.URL, "run-f", seen[len(seen)-1].ID)
	time.Sleep(12 * time.Second) // longer than A's reconnect grace
	for _, id := range remote.Tasks() {
		remote.Release(id)
	}
	rest := onB.Rest()
	if len(rest) == 0 || !strings.Contains(rest[len(rest)-1].Data, "RUN_FINISHED") {
		t.Fatalf("the run followed on B did not finish:\n%s", onB.Raw.String())
	}
	verifySSE(t, onB.Raw.Bytes())
}

// sticky_per_parent_thread_agent across replicas: the thread's second run,
// on another replica, continues the remote context of its first.
func TestClusterStickyThreadContextAcrossReplicas(t *testing.T) {
	ns := natstest.New(t)
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.Working("on it"), fakea2a.Completed("done"))...)})
	policy := hostconfig.Policy{Context: "sticky_per_parent_thread_agent"}
	a := startReplica(t, replicaConfig(t, ns, "a", remote, policy))
	b := startReplica(t, replicaConfig(t, ns, "b", remote, policy))
	contextOf := func(base, runID string) string {
		body := strings.Replace(runInput, "%s", runID, 1) // thread t-1 for both runs
		req, _ := http.NewRequest(http.MethodPost, base+"/agui", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		s := ssetest.Open(t, req)
		fs := s.Until(t, `"subagent.finished"`)
		s.Rest()
		var ev struct {
			Value struct {
				RemoteContextID string `json:"remoteContextId"`
			} `json:"value"`
		}
		_ = json.Unmarshal([]byte(fs[len(fs)-1].Data), &ev)
		return ev.Value.RemoteContextID
	}
	first := contextOf(a.srv.URL, "run-s1")
	second := contextOf(b.srv.URL, "run-s2")
	if first == "" || second != first {
		t.Fatalf("the thread's remote context: %q on A, %q on B", first, second)
	}
	http.DefaultClient.CloseIdleConnections()
}
