package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationName names the tracer of this module's spans.
const InstrumentationName = "github.com/seed0634/agentadaptor"

// EnvTraceparent is the environment variable that gives a child process
// (the parent CLI, a2a serve's agent) the W3C trace context of its run.
const EnvTraceparent = "TRACEPARENT"

// Tracing is a process's OpenTelemetry tracing. A nil *Tracing, or one
// built with tracing off, starts no spans and propagates nothing. It never
// sets the otel globals.
type Tracing struct {
	tp     *sdktrace.TracerProvider // nil: off
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

// NewTracing configures tracing from the standard environment variables
// (docs/design.md#observability):
//
//   - OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER=none: off;
//   - otherwise it is on when OTEL_TRACES_EXPORTER=otlp or an endpoint is set
//     (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); off
//     when none of them is;
//   - OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL picks
//     OTLP over HTTP (http/protobuf, the default, or http/json) or grpc;
//   - the exporters read their own endpoint, headers, TLS, compression and
//     timeout variables, the SDK its OTEL_TRACES_SAMPLER and OTEL_BSP_*;
//   - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the resource
//     (service.name defaults to service).
//
// The propagator is W3C trace context (traceparent) only. An unsupported
// exporter or protocol is an error naming the variable.
func NewTracing(ctx context.Context, service string) (*Tracing, error) {
	t := &Tracing{tracer: noop.NewTracerProvider().Tracer(InstrumentationName), prop: propagation.TraceContext{}}
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return t, nil
	}
	exporter := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")))
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") + os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	switch {
	case exporter == "none" || (exporter == "" && endpoint == ""):
		return t, nil
	case exporter != "" && exporter != "otlp":
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q is not supported: use otlp (or none)", exporter)
	}
	protocol := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if protocol == "" {
		protocol = strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	var exp sdktrace.SpanExporter
	var err error
	switch protocol {
	case "", "http/protobuf", "http/json":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q is not supported: use http/protobuf, http/json or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", service)), resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t.tracer = t.tp.Tracer(InstrumentationName)
	return t, nil
}

// Enabled reports whether spans are recorded and exported.
func (t *Tracing) Enabled() bool { return t != nil && t.tp != nil }

// Tracer returns the tracer of this module's spans (a no-op one when off).
func (t *Tracing) Tracer() trace.Tracer {
	if !t.Enabled() {
		return noop.NewTracerProvider().Tracer(InstrumentationName)
	}
	return t.tracer
}

// Shutdown flushes the spans not exported yet and stops the exporter,
// bounded by ctx. Servers call it on exit.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Extract returns ctx with the W3C trace context of h (traceparent), when
// tracing is on and h carries a valid one.
func (t *Tracing) Extract(ctx context.Context, h http.Header) context.Context {
	if !t.Enabled() {
		return ctx
	}
	return t.prop.Extract(ctx, propagation.HeaderCarrier(h))
}

// Inject writes ctx's span as traceparent into h (nothing without a span).
func (t *Tracing) Inject(ctx context.Context, h http.Header) {
	if t.Enabled() {
		t.prop.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// Traceparent returns the W3C traceparent of ctx's span ("" without one),
// the value a child process gets as [EnvTraceparent].
func (t *Tracing) Traceparent(ctx context.Context) string {
	if !t.Enabled() || !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	t.prop.Inject(ctx, c)
	return c.Get("traceparent")
}
