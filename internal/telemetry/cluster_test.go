package telemetry

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A replica's health is in /metrics: journal commit lag and pending bytes,
// lease renewal failures, takeovers, runs lost by cause, the NATS
// connection, the follower lag; a sticky context that could not be read is
// counted by agent. A host that is not a replica has none of the cluster
// series.
func TestClusterMetrics(t *testing.T) {
	h := NewHost(HostConfig{Adapter: "scripted", Agents: map[string]string{"research": "a2a"}})
	if n := testutil.CollectAndCount(h.reg, "agentadaptor_cluster_runs_lost_total"); n != 0 {
		t.Fatalf("a host that is not a replica has %d cluster series", n)
	}
	m := h.Cluster()
	if h.Cluster() != m {
		t.Fatal("Cluster must register its metrics once")
	}
	m.NATSConnected(true)
	m.JournalPending(4096)
	m.JournalCommitted(3 * time.Millisecond)
	m.LeaseRenewFailed()
	m.Takeover(false)
	m.Takeover(true)
	m.RunLost("lease_expired")
	m.RunLost("fenced")
	m.RunLost("elsewhere") // not a cause: no new series
	m.FollowerLag(20 * time.Millisecond)
	h.StickyContextUnreadable("research")
	want := `
# HELP agentadaptor_cluster_runs_lost_total Runs that ended without their own terminal event, by cause: lease_expired (this replica ended another replica's run with RUN_ERROR host_lost), fenced (another replica ended this replica's run), journal_lost (this replica's publish buffer overflowed).
# TYPE agentadaptor_cluster_runs_lost_total counter
agentadaptor_cluster_runs_lost_total{cause="fenced"} 1
agentadaptor_cluster_runs_lost_total{cause="journal_lost"} 0
agentadaptor_cluster_runs_lost_total{cause="lease_expired"} 1
# HELP agentadaptor_cluster_takeovers_total Lost runs of other replicas this replica started ending, by kind: new (the run's lease expired), resumed (another replica's unfinished takeover).
# TYPE agentadaptor_cluster_takeovers_total counter
agentadaptor_cluster_takeovers_total{kind="new"} 1
agentadaptor_cluster_takeovers_total{kind="resumed"} 1
`
	if err := testutil.GatherAndCompare(h.reg, strings.NewReader(want), "agentadaptor_cluster_runs_lost_total", "agentadaptor_cluster_takeovers_total"); err != nil {
		t.Fatal(err)
	}
	if c, p, f := testutil.ToFloat64(m.connected), testutil.ToFloat64(m.pending), testutil.ToFloat64(m.renewFailed); c != 1 || p != 4096 || f != 1 {
		t.Errorf("nats_connected %v, pending_bytes %v, lease_renew_failures %v", c, p, f)
	}
	m.NATSConnected(false)
	if c := testutil.ToFloat64(m.connected); c != 0 {
		t.Errorf("nats_connected %v after a disconnect", c)
	}
	for _, name := range []string{"agentadaptor_cluster_journal_commit_seconds", "agentadaptor_cluster_follower_lag_seconds", "agentadaptor_sticky_context_unreadable_total"} {
		if testutil.CollectAndCount(h.reg, name) != 1 {
			t.Errorf("%s: want one series", name)
		}
	}
	problems, err := testutil.GatherAndLint(h.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "agentadaptor_cluster") || strings.HasPrefix(p.Metric, "agentadaptor_sticky") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
}
