package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ClusterMetrics is the health of a replica of a scaled-out host in its
// /metrics: it implements internal/cluster's Observer (the cluster package
// defines the hook; this package is the only one importing Prometheus).
// Its series exist only on a replica (Host.Cluster registers them).
type ClusterMetrics struct {
	commit       prometheus.Histogram
	pending      prometheus.Gauge
	renewFailed  prometheus.Counter
	takeovers    *prometheus.CounterVec
	lost         *prometheus.CounterVec
	connected    prometheus.Gauge
	followerLag  prometheus.Histogram
	lostByCause  map[string]prometheus.Counter
	takeoverKind [2]prometheus.Counter
}

// Causes of ended runs, as internal/cluster names them (the label values
// of agentadaptor_cluster_runs_lost_total).
var clusterLostCauses = []string{"lease_expired", "fenced", "journal_lost"}

// Cluster returns the host's cluster metrics, registering them on first
// use (a host that is not a replica never calls it).
func (h *Host) Cluster() *ClusterMetrics {
	h.clusterOnce.Do(func() {
		m := &ClusterMetrics{
			commit: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "agentadaptor_cluster_journal_commit_seconds",
				Help: "From a frame of this replica's run handed to the journal to its batch acknowledged by JetStream (the run's clients on this replica are served committed frames only).", Buckets: relayBuckets}),
			pending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentadaptor_cluster_journal_pending_bytes",
				Help: "Bytes of frames waiting to be published to JetStream (beyond the 64 MiB buffer a run ends with journal_lost)."}),
			renewFailed: prometheus.NewCounter(prometheus.CounterOpts{Name: "agentadaptor_cluster_lease_renew_failures_total",
				Help: "Run leases that could not be renewed in a round (NATS slow or away, or the lease lost): a run whose lease is not renewed in time stops publishing."}),
			takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentadaptor_cluster_takeovers_total",
				Help: "Lost runs of other replicas this replica started ending, by kind: new (the run's lease expired), resumed (another replica's unfinished takeover)."}, []string{"kind"}),
			lost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentadaptor_cluster_runs_lost_total",
				Help: "Runs that ended without their own terminal event, by cause: lease_expired (this replica ended another replica's run with RUN_ERROR host_lost), fenced (another replica ended this replica's run), journal_lost (this replica's publish buffer overflowed)."}, []string{"cause"}),
			connected: prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentadaptor_cluster_nats_connected",
				Help: "1 while the replica is connected to NATS, 0 while it is not (new runs are refused then)."}),
			followerLag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "agentadaptor_cluster_follower_lag_seconds",
				Help: "For frames of another replica's run followed live on this replica: from the frame's storage in JetStream (the NATS server's clock) to its hand-off to the client's subscription here.", Buckets: relayBuckets}),
			lostByCause: map[string]prometheus.Counter{},
		}
		for _, c := range clusterLostCauses {
			m.lostByCause[c] = m.lost.WithLabelValues(c)
		}
		m.takeoverKind = [2]prometheus.Counter{m.takeovers.WithLabelValues("new"), m.takeovers.WithLabelValues("resumed")}
		h.reg.MustRegister(m.commit, m.pending, m.renewFailed, m.takeovers, m.lost, m.connected, m.followerLag)
		h.cluster = m
	})
	return h.cluster
}

// JournalCommitted implements cluster.Observer.
func (m *ClusterMetrics) JournalCommitted(lag time.Duration) { m.commit.Observe(lag.Seconds()) }

// JournalPending implements cluster.Observer.
func (m *ClusterMetrics) JournalPending(bytes int) { m.pending.Set(float64(bytes)) }

// LeaseRenewFailed implements cluster.Observer.
func (m *ClusterMetrics) LeaseRenewFailed() { m.renewFailed.Inc() }

// Takeover implements cluster.Observer.
func (m *ClusterMetrics) Takeover(resumed bool) {
	if resumed {
		m.takeoverKind[1].Inc()
		return
	}
	m.takeoverKind[0].Inc()
}

// RunLost implements cluster.Observer.
func (m *ClusterMetrics) RunLost(cause string) {
	if c := m.lostByCause[cause]; c != nil {
		c.Inc()
	}
}

// NATSConnected implements cluster.Observer.
func (m *ClusterMetrics) NATSConnected(connected bool) {
	if connected {
		m.connected.Set(1)
		return
	}
	m.connected.Set(0)
}

// FollowerLag implements cluster.Observer.
func (m *ClusterMetrics) FollowerLag(d time.Duration) { m.followerLag.Observe(max(d, 0).Seconds()) }

// StickyContextUnreadable implements delegator.ContextObserver: a sticky
// remote context that could not be read in time (the delegation started a
// new one and said so).
func (h *Host) StickyContextUnreadable(agent string) {
	h.stickyLost.WithLabelValues(label(agent, "unregistered")).Inc()
}
