package telemetry

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/sanitize"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
)

// HostConfig configures the telemetry of `agentadaptor serve`.
type HostConfig struct {
	// Tracing exports the spans (nil: no traces).
	Tracing *Tracing
	// Adapter is the parent adapter's name (the adapter label of runs).
	Adapter string
	// Agents maps the registry's agent keys to their protocols: their
	// delegation series exist from the start (at 0).
	Agents map[string]string
}

// Host is the telemetry of `agentadaptor serve` (docs/design.md#observability):
// its metrics registry, served by [Host.MetricsHandler], and the hooks it
// installs: the SSE handler's [Host.RunHook] (a span per run, TRACEPARENT
// for the parent CLI, run counts), the delegator's Observer (a span and
// counts per delegation) and the mux's Observer (relay latency, drops). Safe
// for concurrent use.
type Host struct {
	tracing *Tracing
	adapter string
	reg     *prometheus.Registry

	runs         *prometheus.CounterVec
	activeRuns   prometheus.Gauge
	delegations  *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	relay        prometheus.Histogram
	dropped      map[string]prometheus.Counter
	remoteErrors *prometheus.CounterVec
	stickyLost   *prometheus.CounterVec

	clusterOnce sync.Once
	cluster     *ClusterMetrics

	mu       sync.Mutex
	runSpans map[string]trace.Span // SDK run id -> the run's span, while it runs
	wg       sync.WaitGroup        // one watcher per started run
}

var (
	_ delegator.Observer        = (*Host)(nil)
	_ delegator.ContextObserver = (*Host)(nil)
	_ subagentstream.Observer   = (*Host)(nil)
)

// NewHost registers the host's metrics (see the README's Observability
// section for the list) in a registry of its own.
func NewHost(cfg HostConfig) *Host {
	h := &Host{tracing: cfg.Tracing, adapter: label(cfg.Adapter, "unknown"), reg: newRegistry(), runSpans: map[string]trace.Span{},
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentadaptor_runs_total",
			Help: "Parent runs started by POST /agui that ended, by parent adapter and status (completed, failed, cancelled; start_failed: the run did not start)."},
			[]string{"adapter", "status"}),
		activeRuns: prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentadaptor_active_runs", Help: "Parent runs running now."}),
		delegations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentadaptor_delegations_total",
			Help: "delegate_to_agent calls that returned, by agent (registry key; unregistered for an unknown key), protocol and result status (completed, failed, cancelled, input_required)."},
			[]string{"agent", "protocol", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentadaptor_delegation_duration_seconds",
			Help: "How long a delegate_to_agent call took, by agent and protocol.", Buckets: taskBuckets},
			[]string{"agent", "protocol"}),
		relay: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "agentadaptor_relay_latency_seconds",
			Help: "From a remote event's receipt by the host (the delegator publishing it) to its subagent frame written to a browser's SSE stream (live frames only, not replays).", Buckets: relayBuckets}),
		remoteErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentadaptor_remote_errors_total",
			Help: "Failures caused by remote agents, by agent and failure code: delegations that ended with a remote-side code, and cut streams the delegator recovered from (stream_interrupted)."},
			[]string{"agent", "code"}),
		stickyLost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentadaptor_sticky_context_unreadable_total",
			Help: "Delegations whose remembered remote context (sticky context policy) could not be read in time, by agent: each started a new remote context and said so (subagent.status context_unavailable)."},
			[]string{"agent"}),
	}
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentadaptor_stream_dropped_total",
		Help: "Text deltas dropped for slow consumers, by stage: sdk (the parent run's queue), bus (a delegation bus subscription), mux (one SSE client)."},
		[]string{"stage"})
	h.dropped = map[string]prometheus.Counter{}
	for _, s := range []string{subagentstream.DropSDK, subagentstream.DropBus, subagentstream.DropMux} {
		h.dropped[s] = dropped.WithLabelValues(s)
	}
	for _, s := range []agentadaptor.RunStatus{agentadaptor.StatusCompleted, agentadaptor.StatusFailed, agentadaptor.StatusCancelled} {
		h.runs.WithLabelValues(h.adapter, string(s))
	}
	for key, protocol := range cfg.Agents {
		for _, s := range []string{delegation.StatusCompleted, delegation.StatusFailed, delegation.StatusCancelled} {
			h.delegations.WithLabelValues(key, protocol, s)
		}
	}
	for key := range cfg.Agents {
		h.stickyLost.WithLabelValues(key)
	}
	h.reg.MustRegister(h.runs, h.activeRuns, h.delegations, h.duration, h.relay, dropped, h.remoteErrors, h.stickyLost)
	return h
}

// MetricsHandler serves the host's metrics (GET /metrics).
func (h *Host) MetricsHandler() http.Handler { return metricsHandler(h.reg) }

// Registry returns the host's metrics registry.
func (h *Host) Registry() *prometheus.Registry { return h.reg }

// Wait waits until the watcher of every started run has seen its run end,
// or ctx ends. The host calls it at shutdown, after cancelling the runs.
func (h *Host) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RunHook is the SSE handler's hook (sse.WithRunHook). Each run started by
// POST /agui gets a span "agentadaptor.run" that continues the request's
// traceparent and lasts until the run ends; the parent CLI gets it as
// TRACEPARENT in its environment; the run is counted when it ends.
func (h *Host) RunHook() sse.RunHook {
	return func(r *http.Request) ([]agentadaptor.RunOption, func(string, *agentadaptor.RunHandle, error)) {
		var span trace.Span
		var opts []agentadaptor.RunOption
		if h.tracing.Enabled() {
			var ctx context.Context
			ctx, span = h.tracing.tracer.Start(h.tracing.Extract(r.Context(), r.Header), "agentadaptor.run",
				trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attribute.String("agentadaptor.adapter", h.adapter)))
			opts = append(opts, agentadaptor.WithEnv(map[string]string{EnvTraceparent: h.tracing.Traceparent(ctx)}))
		}
		return opts, func(runID string, rh *agentadaptor.RunHandle, err error) {
			if err != nil {
				h.runs.WithLabelValues(h.adapter, "start_failed").Inc()
				if span != nil {
					span.SetStatus(codes.Error, "the run did not start")
					span.End()
				}
				return
			}
			h.activeRuns.Inc()
			sdkRunID := rh.RunID()
			if span != nil {
				span.SetAttributes(attribute.String("agentadaptor.run_id", sdkRunID), attribute.String("agentadaptor.agui_run_id", sanitize.Truncate(runID, 128)))
				h.mu.Lock()
				h.runSpans[sdkRunID] = span
				h.mu.Unlock()
			}
			h.wg.Go(func() {
				<-rh.Done()
				status := "failed"
				if res, _ := rh.Wait(context.Background()); res != nil && res.Status != "" {
					status = string(res.Status)
				}
				h.runs.WithLabelValues(h.adapter, status).Inc()
				h.activeRuns.Dec()
				if span != nil {
					h.mu.Lock()
					delete(h.runSpans, sdkRunID)
					h.mu.Unlock()
					span.SetAttributes(attribute.String("agentadaptor.status", status))
					if status != string(agentadaptor.StatusCompleted) {
						span.SetStatus(codes.Error, "the run "+status)
					}
					span.End()
				}
			})
		}
	}
}

// DelegationStarted implements delegator.Observer: a span
// "agentadaptor.delegation" under the run's span (found by the SDK run id:
// the MCP tool call that carries the delegation has no trace of its own),
// under which every remote call of the delegation is made; the counts and
// duration when the call returns.
func (h *Host) DelegationStarted(ctx context.Context, d delegator.ObservedDelegation) (context.Context, func(delegation.Result)) {
	start := time.Now()
	agent, protocol := label(d.Agent, "unregistered"), label(d.Protocol, "unknown")
	var span trace.Span
	if h.tracing.Enabled() {
		h.mu.Lock()
		run := h.runSpans[d.RunID]
		h.mu.Unlock()
		if run != nil {
			ctx = trace.ContextWithSpan(ctx, run)
		}
		ctx, span = h.tracing.tracer.Start(ctx, "agentadaptor.delegation", trace.WithAttributes(
			attribute.String("agentadaptor.run_id", d.RunID), attribute.String("agentadaptor.delegation_id", d.DelegationID),
			attribute.String("agentadaptor.agent", agent), attribute.String("agentadaptor.protocol", protocol), attribute.Bool("agentadaptor.continue", d.Continue)))
		ctx = withCallIDs(ctx, d.RunID, d.DelegationID)
	}
	return ctx, func(res delegation.Result) {
		status := label(res.Status, delegation.StatusFailed)
		h.delegations.WithLabelValues(agent, protocol, status).Inc()
		h.duration.WithLabelValues(agent, protocol).Observe(time.Since(start).Seconds())
		code := ""
		if res.Error != nil {
			code = string(res.Error.Code)
			if remoteCode(res.Error.Code) && status != delegation.StatusInputRequired {
				h.remoteErrors.WithLabelValues(agent, code).Inc()
			}
		}
		if span == nil {
			return
		}
		span.SetAttributes(attribute.String("agentadaptor.status", status),
			attribute.String("agentadaptor.remote_task_id", sanitize.Truncate(res.RemoteTaskID, 128)),
			attribute.String("agentadaptor.remote_context_id", sanitize.Truncate(res.RemoteContextID, 128)))
		if code != "" {
			span.SetAttributes(attribute.String("agentadaptor.error_code", code))
			if status != delegation.StatusInputRequired {
				span.SetStatus(codes.Error, code)
			}
		}
		span.End()
	}
}

// RemoteError implements delegator.Observer.
func (h *Host) RemoteError(agent string, code delegation.FailureCode) {
	h.remoteErrors.WithLabelValues(label(agent, "unregistered"), string(code)).Inc()
}

// remoteCode reports whether a delegation's failure code is the remote's
// doing (as opposed to the host's policy, the model's input or a
// cancellation).
func remoteCode(c delegation.FailureCode) bool {
	switch c {
	case delegation.CodeAgentUnavailable, delegation.CodeCapabilityUnsupported, delegation.CodeRemoteRejected, delegation.CodeAuthRequired,
		delegation.CodeRemoteFailed, delegation.CodeRemoteTimeout, delegation.CodeStreamInterrupted:
		return true
	}
	return false
}

// Relayed implements subagentstream.Observer: the relay latency of one
// frame. It allocates nothing.
func (h *Host) Relayed(received time.Time) { h.relay.Observe(time.Since(received).Seconds()) }

// Dropped implements subagentstream.Observer.
func (h *Host) Dropped(stage string, n int) {
	if c := h.dropped[stage]; c != nil && n > 0 {
		c.Add(float64(n))
	}
}

// HTTPClient returns the http.Client the connectors of protocol should use
// to reach remote agents: a client span and traceparent on every request
// (see [Tracing.Transport]), over a transport of its own that close
// releases. Without tracing it returns nil, nil (the connectors then keep
// their own transports).
func (h *Host) HTTPClient(protocol string) (_ *http.Client, close func()) {
	if !h.tracing.Enabled() {
		return nil, nil
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	return &http.Client{Transport: h.tracing.Transport(base, protocol)}, base.CloseIdleConnections
}
