package telemetry

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/trace"

	"github.com/seed0634/agentadaptor/internal/testkit/otlpsink"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
)

// otelEnv lists every variable NewTracing reads; clearEnv empties them so a
// test sees only what it sets.
var otelEnv = []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"}

func clearEnv(t *testing.T) {
	for _, k := range otelEnv {
		t.Setenv(k, "")
	}
}

func TestNewTracingFromEnvironment(t *testing.T) {
	for _, tt := range []struct {
		name    string
		env     map[string]string
		enabled bool
		err     string
	}{
		{"nothing set: off", nil, false, ""},
		{"an endpoint: on (OTLP over HTTP)", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, true, ""},
		{"a traces endpoint: on", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces"}, true, ""},
		{"otlp exporter named: on", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, ""},
		{"traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "bogus", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, true, ""},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{"SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}, false, ""},
		{"unsupported exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, "OTEL_TRACES_EXPORTER"},
		{"unsupported protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"}, false, "OTEL_EXPORTER_OTLP_PROTOCOL"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			tr, err := NewTracing(context.Background(), "test")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one naming %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tr.Shutdown(context.Background()) }()
			if tr.Enabled() != tt.enabled {
				t.Fatalf("Enabled() = %v, want %v", tr.Enabled(), tt.enabled)
			}
			if !tt.enabled {
				// Off: no span, nothing propagated, no TRACEPARENT.
				ctx, span := tr.Tracer().Start(context.Background(), "x")
				span.End()
				h := http.Header{}
				tr.Inject(ctx, h)
				if h.Get("traceparent") != "" || tr.Traceparent(ctx) != "" {
					t.Fatalf("tracing off propagated %q", h.Get("traceparent"))
				}
			}
		})
	}
}

// newSinkTracing starts an OTLP receiver and tracing that exports to it.
func newSinkTracing(t *testing.T) (*Tracing, *otlpsink.Sink) {
	t.Helper()
	clearEnv(t)
	sink, err := otlpsink.Start("", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sink.Close() })
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
	tr, err := NewTracing(context.Background(), "telemetry-test")
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Enabled() {
		t.Fatal("tracing is off with an endpoint set")
	}
	return tr, sink
}

// The client transport starts a span per request under the caller's span,
// sends it as traceparent, and records neither the URL's path nor query;
// a request without a span goes out untouched.
func TestTransportPropagatesTheSpan(t *testing.T) {
	tr, sink := newSinkTracing(t)
	got := make(chan string, 2)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("traceparent")
		_, _ = io.WriteString(w, "data: x\n\n")
	}))
	defer remote.Close()
	client := &http.Client{Transport: tr.Transport(http.DefaultTransport, "a2a")}
	defer client.CloseIdleConnections()

	ctx, parent := tr.Tracer().Start(context.Background(), "agentadaptor.delegation")
	ctx = withCallIDs(ctx, "run-1", "del-1")
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, remote.URL+"/tasks/secret-path?key=secret-query", strings.NewReader("{}"))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	parent.End()
	tp := <-got
	if want := parent.SpanContext().TraceID().String(); !strings.Contains(tp, want) {
		t.Fatalf("traceparent %q does not carry the trace %s", tp, want)
	}
	req, _ = http.NewRequest(http.MethodGet, remote.URL, nil)
	if resp, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if tp := <-got; tp != "" {
		t.Fatalf("a request without a span got traceparent %q", tp)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var call *otlpsink.Span
	spans := sink.Spans()
	for i := range spans {
		if spans[i].Name == "a2a POST" {
			call = &spans[i]
		}
		for k, v := range spans[i].Attrs {
			if strings.Contains(v, "secret") {
				t.Errorf("span %s records %s=%q", spans[i].Name, k, v)
			}
		}
	}
	if call == nil || len(spans) != 2 {
		t.Fatalf("spans: %+v", spans)
	}
	if call.ParentSpanID != parent.SpanContext().SpanID().String() || call.Kind != "SPAN_KIND_CLIENT" ||
		call.Attrs["agentadaptor.delegation_id"] != "del-1" || call.Attrs["agentadaptor.run_id"] != "run-1" || call.Attrs["http.response.status_code"] != "200" {
		t.Fatalf("call span: %+v", call)
	}
	if !strings.HasSuffix(tp, call.SpanID+"-01") {
		t.Fatalf("traceparent %q is not the call span %s", tp, call.SpanID)
	}
}

func TestLogHandlerAddsTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewTextHandler(&buf, nil))).With("component", "test")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled})
	log.InfoContext(trace.ContextWithSpanContext(context.Background(), sc), "with a span")
	log.Info("without")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "trace_id="+sc.TraceID().String()) || !strings.Contains(lines[0], "span_id="+sc.SpanID().String()) ||
		!strings.Contains(lines[0], "component=test") || strings.Contains(lines[1], "trace_id") {
		t.Fatalf("log:\n%s", buf.String())
	}
}

// The mux's hooks are on the streaming path: they allocate nothing.
func TestStreamObserverIsCheapAndCounts(t *testing.T) {
	h := NewHost(HostConfig{Adapter: "scripted", Agents: map[string]string{"research": "a2a"}})
	received := time.Now()
	if n := testing.AllocsPerRun(1000, func() {
		h.Relayed(received)
		h.Dropped(subagentstream.DropMux, 1)
	}); n != 0 {
		t.Fatalf("Relayed+Dropped allocate %v times per call", n)
	}
	h.Dropped(subagentstream.DropSDK, 3)
	h.Dropped("elsewhere", 5) // an unknown stage is ignored, not a new series
	if got := testutil.ToFloat64(h.dropped[subagentstream.DropSDK]); got != 3 {
		t.Fatalf("sdk drops = %v", got)
	}
	if n := testutil.CollectAndCount(h.reg, "agentadaptor_stream_dropped_total"); n != 3 {
		t.Fatalf("%d stream_dropped series, want one per stage", n)
	}
	if n := testutil.CollectAndCount(h.reg, "agentadaptor_relay_latency_seconds"); n != 1 {
		t.Fatalf("relay histogram series: %d", n)
	}
	// The registered agent's series exist before any delegation.
	if err := testutil.GatherAndCompare(h.reg, strings.NewReader(`
# HELP agentadaptor_delegations_total delegate_to_agent calls that returned, by agent (registry key; unregistered for an unknown key), protocol and result status (completed, failed, cancelled, input_required).
# TYPE agentadaptor_delegations_total counter
agentadaptor_delegations_total{agent="research",protocol="a2a",status="cancelled"} 0
agentadaptor_delegations_total{agent="research",protocol="a2a",status="completed"} 0
agentadaptor_delegations_total{agent="research",protocol="a2a",status="failed"} 0
`), "agentadaptor_delegations_total"); err != nil {
		t.Fatal(err)
	}
}

// a2a serve's middleware continues the caller's trace and measures the
// time to the first byte by binding and status.
func TestA2AServeMiddleware(t *testing.T) {
	tr, sink := newSinkTracing(t)
	a := NewA2AServe(tr)
	var inner trace.SpanContext
	srv := httptest.NewServer(a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner = trace.SpanContextFromContext(r.Context())
		w.WriteHeader(http.StatusAccepted)
	})))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/a2a/jsonrpc", strings.NewReader("{}"))
	req.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if inner.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("the handler's span is not in the caller's trace: %v", inner.TraceID())
	}
	if n := testutil.CollectAndCount(a.reg, "agentadaptor_a2a_request_duration_seconds"); n != 1 {
		t.Fatalf("latency series: %d", n)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := sink.Spans()
	if len(spans) != 1 || spans[0].Name != "a2a serve jsonrpc" || spans[0].ParentSpanID != "b7ad6b7169203331" || spans[0].Attrs["http.response.status_code"] != "202" {
		t.Fatalf("spans: %+v", spans)
	}
}

// BenchmarkRelayed is the per-frame cost the relay latency histogram adds
// to the SSE write path.
func BenchmarkRelayed(b *testing.B) {
	h := NewHost(HostConfig{Adapter: "scripted"})
	received := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		h.Relayed(received)
	}
}

// BenchmarkDropped is the cost of counting one dropped delta.
func BenchmarkDropped(b *testing.B) {
	h := NewHost(HostConfig{Adapter: "scripted"})
	b.ReportAllocs()
	for b.Loop() {
		h.Dropped(subagentstream.DropMux, 1)
	}
}
