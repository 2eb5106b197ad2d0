package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/sanitize"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
)

// A2AServe is the telemetry of `agentadaptor a2a serve`
// (docs/design.md#observability): its own metrics registry, served by
// [A2AServe.MetricsHandler] on its listener, the HTTP [A2AServe.Middleware]
// and the gRPC [A2AServe.GRPCServerOptions] (a span per request or call that
// continues the caller's traceparent, request latency) and the bridge's
// [A2AServe.TurnObserver] (a span per task turn, TRACEPARENT for the agent
// CLI, turns by state). Safe for concurrent use.
type A2AServe struct {
	tracing *Tracing
	reg     *prometheus.Registry

	turns       *prometheus.CounterVec
	activeTurns prometheus.Gauge
	turnTime    prometheus.Histogram
	latency     *prometheus.HistogramVec
	refused     prometheus.Counter
}

// NewA2AServe registers a2a serve's metrics in a registry of its own; nil
// tracing records no spans.
func NewA2AServe(tracing *Tracing) *A2AServe {
	a := &A2AServe{tracing: tracing, reg: newRegistry(),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentadaptor_a2a_tasks_total",
			Help: "A2A task turns that ended, by the state they left the task in (completed, failed, canceled, rejected, input_required, auth_required, other)."},
			[]string{"state"}),
		activeTurns: prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentadaptor_a2a_active_tasks", Help: "A2A task turns running now (each runs the agent CLI)."}),
		turnTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "agentadaptor_a2a_task_duration_seconds",
			Help: "How long an A2A task turn ran.", Buckets: taskBuckets}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentadaptor_a2a_request_duration_seconds",
			Help: "Request latency: from an admitted request to its response's first byte (a stream's headers), by binding (jsonrpc, rest, card, other, grpc) and status code (HTTP, or the gRPC status name).", Buckets: requestBuckets},
			[]string{"binding", "code"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "agentadaptor_a2a_refused_tasks_total",
			Help: "Messages refused because the server already ran its maximum of active tasks (--max-active-tasks); each started nothing."}),
	}
	for _, s := range []string{"completed", "failed", "canceled", "input_required"} {
		a.turns.WithLabelValues(s)
	}
	a.reg.MustRegister(a.turns, a.activeTurns, a.turnTime, a.latency, a.refused)
	return a
}

// MetricsHandler serves a2a serve's metrics (GET /metrics).
func (a *A2AServe) MetricsHandler() http.Handler { return metricsHandler(a.reg) }

// binding names the A2A binding a request path is for (a bounded label).
func binding(path string) string {
	switch {
	case strings.HasPrefix(path, a2abridge.PathJSONRPC):
		return "jsonrpc"
	case strings.HasPrefix(path, a2abridge.PathREST+"/"):
		return "rest"
	case strings.HasPrefix(path, "/.well-known/"):
		return "card"
	}
	return "other"
}

// Middleware measures and traces the requests next serves: a server span
// "a2a serve <binding>" that continues the request's traceparent (the task
// turns it starts are its children), and the time to the response's first
// byte. It records the method, binding and status code, never the path,
// a header or a body.
func (a *A2AServe) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := binding(r.URL.Path)
		rw := &firstByte{ResponseWriter: w, start: time.Now()}
		var span trace.Span
		if a.tracing.Enabled() {
			var ctx context.Context
			ctx, span = a.tracing.tracer.Start(a.tracing.Extract(r.Context(), r.Header), "a2a serve "+b, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("agentadaptor.binding", b)))
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(rw, r)
		d := rw.latency
		if d == 0 {
			d = time.Since(rw.start)
		}
		code := rw.statusCode()
		a.latency.WithLabelValues(b, strconv.Itoa(code)).Observe(d.Seconds())
		if span != nil {
			span.SetAttributes(attribute.Int("http.response.status_code", code))
			if code >= 500 {
				span.SetStatus(codes.Error, http.StatusText(code))
			}
			span.End()
		}
	})
}

// firstByte records when a response's header went out.
type firstByte struct {
	http.ResponseWriter
	start   time.Time
	latency time.Duration
	code    int
}

func (f *firstByte) statusCode() int {
	if f.code == 0 {
		return http.StatusOK
	}
	return f.code
}

func (f *firstByte) WriteHeader(code int) {
	if f.code == 0 && code >= 200 {
		f.code, f.latency = code, time.Since(f.start)
	}
	f.ResponseWriter.WriteHeader(code)
}

func (f *firstByte) Write(p []byte) (int, error) {
	if f.code == 0 {
		f.code, f.latency = http.StatusOK, time.Since(f.start)
	}
	return f.ResponseWriter.Write(p)
}

// Flush lets handlers that look for http.Flusher stream through the wrapper.
func (f *firstByte) Flush() {
	if f.code == 0 {
		f.code, f.latency = http.StatusOK, time.Since(f.start)
	}
	_ = http.NewResponseController(f.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (f *firstByte) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// stateLabel names a task state as a bounded label value.
func stateLabel(s a2a.TaskState) string {
	switch s {
	case a2a.TaskStateCompleted:
		return "completed"
	case a2a.TaskStateFailed:
		return "failed"
	case a2a.TaskStateCanceled:
		return "canceled"
	case a2a.TaskStateRejected:
		return "rejected"
	case a2a.TaskStateInputRequired:
		return "input_required"
	case a2a.TaskStateAuthRequired:
		return "auth_required"
	}
	return "other"
}

// OnRefused is the bridge's refusal hook (a2abridge.Config.OnRefused): it
// counts the messages refused for the active-task bound.
func (a *A2AServe) OnRefused() func(context.Context) {
	return func(context.Context) { a.refused.Inc() }
}

// TurnObserver is the bridge's a2abridge.TurnObserver: each task turn gets
// a span "agentadaptor.a2a.turn" (a child of its request's span, with the
// task and context ids), the agent CLI gets it as TRACEPARENT, and the turn
// is counted by the state it left the task in.
func (a *A2AServe) TurnObserver() a2abridge.TurnObserver {
	return func(ctx context.Context, t a2abridge.TurnInfo) (context.Context, []agentadaptor.RunOption, func(a2a.TaskState)) {
		start := time.Now()
		a.activeTurns.Inc()
		var span trace.Span
		var opts []agentadaptor.RunOption
		if a.tracing.Enabled() {
			ctx, span = a.tracing.tracer.Start(ctx, "agentadaptor.a2a.turn", trace.WithAttributes(
				attribute.String("agentadaptor.remote_task_id", sanitize.Truncate(t.TaskID, 128)),
				attribute.String("agentadaptor.remote_context_id", sanitize.Truncate(t.ContextID, 128)),
				attribute.Bool("agentadaptor.follow_up", t.FollowUp)))
			opts = append(opts, agentadaptor.WithEnv(map[string]string{EnvTraceparent: a.tracing.Traceparent(ctx)}))
		}
		return ctx, opts, func(state a2a.TaskState) {
			s := stateLabel(state)
			a.activeTurns.Dec()
			a.turns.WithLabelValues(s).Inc()
			a.turnTime.Observe(time.Since(start).Seconds())
			if span != nil {
				span.SetAttributes(attribute.String("agentadaptor.state", s))
				if s == "failed" || s == "rejected" {
					span.SetStatus(codes.Error, s)
				}
				span.End()
			}
		}
	}
}
