package host

import (
	"context"
	"log/slog"

	"github.com/seed0634/agentadaptor/internal/telemetry"
)

// Tracing is the host's OpenTelemetry tracing: a span per run, delegation,
// remote call and request, W3C traceparent to the parent CLI and the
// remote agents (docs/design.md#observability). A nil *Tracing traces
// nothing.
type Tracing struct{ t *telemetry.Tracing }

// NewTracing configures tracing from the standard OTEL_* environment
// variables (OTLP over HTTP or gRPC; off, and free, when none is set);
// service names the spans' service (service.name). With tracing on,
// OpenTelemetry's own errors, such as a failed export, go to log at most
// once every 30 seconds with the count of those left out: this sets
// OpenTelemetry's process-wide error handler and logger (otel.SetErrorHandler).
func NewTracing(ctx context.Context, service string, log *slog.Logger) (*Tracing, error) {
	t, err := telemetry.NewTracing(ctx, service)
	if err != nil {
		return nil, err
	}
	if t.Enabled() {
		telemetry.HandleErrors(log)
	}
	return &Tracing{t: t}, nil
}

// Enabled reports whether spans are recorded and exported.
func (t *Tracing) Enabled() bool { return t != nil && t.t.Enabled() }

// Shutdown flushes the spans not exported yet and stops the exporter,
// bounded by ctx: call it after the host's Shutdown.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.t.Shutdown(ctx)
}

func (t *Tracing) telemetry() *telemetry.Tracing {
	if t == nil {
		return nil
	}
	return t.t
}
