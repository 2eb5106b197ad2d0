package host_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/hostyaml"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/internal/testkit/natstest"
)

// Two POST /agui with the same new runId on two replicas at once: one is
// served, the other gets 409 run_id_in_use (the runId is reserved in the
// cluster before a run starts).
func TestClusterAdmitsARunIDOnce(t *testing.T) {
	checkLeaks(t)
	ns := natstest.New(t)
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Completed("done"))})
	a := startReplica(t, replicaConfig(t, ns, "a", remote, hostconfig.Policy{}))
	b := startReplica(t, replicaConfig(t, ns, "b", remote, hostconfig.Policy{}))
	for round := range 10 {
		runID := fmt.Sprintf("run-twice-%d", round)
		var wg sync.WaitGroup
		codes := make([]int, 2)
		bodies := make([]string, 2)
		for i, base := range []string{a.srv.URL, b.srv.URL} {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPost, base+"/agui", strings.NewReader(threadBody(runID)))
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				codes[i], bodies[i] = resp.StatusCode, string(body)
			})
		}
		wg.Wait()
		ok, conflict := 0, 0
		for i := range codes {
			switch {
			case codes[i] == 200 && strings.Contains(bodies[i], "RUN_FINISHED"):
				ok++
			case codes[i] == 409 && strings.Contains(bodies[i], "run_id_in_use"):
				conflict++
			}
		}
		if ok != 1 || conflict != 1 {
			t.Fatalf("%s: %v\n%s\n%s", runID, codes, bodies[0], bodies[1])
		}
	}
}

// A run is known cluster-wide before its client sees RUN_STARTED: a
// follow on another replica right after it, with the client's cursor,
// never answers 404 — it waits for the journal and serves the run, to the
// terminal the run's own client got.
func TestClusterFollowRightAfterRunStarted(t *testing.T) {
	checkLeaks(t)
	ns := natstest.New(t)
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.Working("on it"), fakea2a.TextChunks("a ", "b"), fakea2a.Completed("done"))...)})
	a := startReplica(t, replicaConfig(t, ns, "a", remote, hostconfig.Policy{}))
	b := startReplica(t, replicaConfig(t, ns, "b", remote, hostconfig.Policy{}))
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			runID := fmt.Sprintf("run-follow-%02d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.srv.URL+"/agui", strings.NewReader(threadBody(runID)))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			id := ""
			for id == "" {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Errorf("%s: the stream ended before its first frame", runID)
					return
				}
				id, _ = strings.CutPrefix(strings.TrimSpace(line), "id: ")
			}
			freq, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/agui/runs/"+runID+"/events", nil)
			freq.Header.Set("Last-Event-ID", id)
			fresp, err := http.DefaultClient.Do(freq)
			if err != nil {
				t.Error(err)
				return
			}
			defer fresp.Body.Close()
			body, _ := io.ReadAll(fresp.Body)
			own, _ := io.ReadAll(br)
			// The run's one terminal, as its own client got it: on a
			// loaded machine a's lease may lapse and b end the run
			// host_lost, which both streams then show.
			terminal := []byte(`"type":"RUN_FINISHED"`)
			if !bytes.Contains(own, terminal) {
				terminal = []byte(`"type":"RUN_ERROR"`)
			}
			if fresp.StatusCode != 200 || !bytes.Contains(own, terminal) || !bytes.Contains(body, terminal) {
				t.Errorf("%s: a follow on b right after RUN_STARTED (cursor %s): %d\n%s\n--- the run's own client:\n%s", runID, id, fresp.StatusCode, body, own)
			}
		})
	}
	wg.Wait()
}

// A replica with a cluster and no creds_ref says at startup what it
// risks; with credentials it does not.
func TestClusterWithoutCredentialsWarns(t *testing.T) {
	checkLeaks(t)
	remote := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Completed("done"))})
	for _, tc := range []struct {
		ns   *natstest.Server
		warn bool
	}{{natstest.NewNoAuth(t), true}, {natstest.New(t), false}} {
		var logs bytes.Buffer
		var mu sync.Mutex
		cfg := replicaConfig(t, tc.ns, "a", remote, hostconfig.Policy{})
		h, err := hostyaml.New(context.Background(), cfg, hostyaml.Options{StateDir: t.TempDir(),
			Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = h.Shutdown(ctx)
		cancel()
		mu.Lock()
		got := logs.String()
		mu.Unlock()
		warned := strings.Contains(got, "no cluster.creds_ref") && strings.Contains(got, "read every principal's frames")
		if warned != tc.warn {
			t.Fatalf("creds_ref %q: warned %v, want %v\n%s", cfg.Cluster.CredsRef, warned, tc.warn, got)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
