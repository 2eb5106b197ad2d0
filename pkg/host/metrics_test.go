package host_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	"go.uber.org/goleak"
)

// scrape returns GET /metrics as series -> value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// The metrics move as runs and delegations happen: one run of the embedded
// demo is one completed run and one completed delegation to research, with
// its duration, relayed subagent frames and nothing active afterwards.
func TestMetricsMoveWithADemoRun(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	_, srv := newHost(t, nil)
	const (
		runs        = `agentadaptor_runs_total{adapter="scripted",status="completed"}`
		delegations = `agentadaptor_delegations_total{agent="research",protocol="a2a",status="completed"}`
		durations   = `agentadaptor_delegation_duration_seconds_count{agent="research",protocol="a2a"}`
		relayed     = `agentadaptor_relay_latency_seconds_count`
		active      = `agentadaptor_active_runs`
	)
	before := scrape(t, srv.URL)
	for _, series := range []string{runs, delegations, relayed, active, `agentadaptor_stream_dropped_total{stage="mux"}`, "go_goroutines", "process_cpu_seconds_total"} {
		if v, ok := before[series]; !ok || (v != 0 && strings.HasPrefix(series, "agentadaptor_")) {
			t.Fatalf("before any run, %s = %v (present %v)", series, v, ok)
		}
	}
	resp := post(t, srv.URL+"/agui", input)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "RUN_FINISHED") || !strings.Contains(string(body), "subagent.finished") {
		t.Fatalf("the demo run: %s", body)
	}
	var after map[string]float64
	testenv.WaitUntil(t, "the run to be counted", func() bool {
		after = scrape(t, srv.URL)
		return after[runs] == 1 && after[active] == 0
	})
	if after[delegations] != 1 || after[durations] != 1 {
		t.Fatalf("delegations %v, durations %v", after[delegations], after[durations])
	}
	if after[relayed] < 3 { // at least started, a text delta and finished went to the browser live
		t.Fatalf("relayed frames: %v", after[relayed])
	}
	for series, v := range after {
		if strings.HasPrefix(series, "agentadaptor_remote_errors_total") && v != 0 {
			t.Errorf("%s = %v after a clean run", series, v)
		}
	}
}

// GET /metrics is behind the host's admission like every route but
// /healthz: with tokens it needs one.
func TestMetricsNeedAToken(t *testing.T) {
	t.Setenv("ALICE_TOKEN", "alice-token-0123456789abcdef")
	cfg := scenarioConfig(t, "- say: hello\n")
	cfg.Auth.Tokens = []hostconfig.Token{{Name: "alice", TokenRef: "env:ALICE_TOKEN"}}
	_, srv := newHost(t, cfg)
	if code, hdr, _ := request(t, nil, "GET", srv.URL+"/metrics", "", nil); code != 401 || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer ") {
		t.Fatalf("without a token: %d %v", code, hdr)
	}
	code, _, body := request(t, nil, "GET", srv.URL+"/metrics", "", map[string]string{"Authorization": "Bearer alice-token-0123456789abcdef"})
	if code != 200 || !strings.Contains(body, "agentadaptor_active_runs 0") {
		t.Fatalf("with a token: %d %s", code, body)
	}
	if code, _, _ := request(t, nil, "GET", srv.URL+"/metrics", "", map[string]string{"Host": "evil.example", "Authorization": "Bearer alice-token-0123456789abcdef"}); code != 403 {
		t.Fatalf("a rebinding Host: %d", code)
	}
}
