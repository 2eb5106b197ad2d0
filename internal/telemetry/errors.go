package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
)

// ErrorInterval is how often at most an OpenTelemetry error is logged
// (see [HandleErrors]).
const ErrorInterval = 30 * time.Second

// HandleErrors routes OpenTelemetry's own errors (an OTLP export that
// fails, an exporter setting that does not parse) to log instead of the
// standard log package that OpenTelemetry writes to by default
// (docs/design.md#observability). An exporter whose collector is down
// fails every batch: the first error is logged at once, then at most one
// line per [ErrorInterval], saying how many were left out since the last
// one. It sets OpenTelemetry's process-wide error handler and logger
// (otel.SetErrorHandler, otel.SetLogger): the commands call it, once,
// when tracing is on.
func HandleErrors(log *slog.Logger) { handleErrors(log, time.Now) }

func handleErrors(log *slog.Logger, now func() time.Time) {
	otel.SetErrorHandler(NewErrorHandler(log, now))
	// OpenTelemetry's internal logger: its errors and warnings (logr V(1),
	// slog level -1) only; its Info and Debug lines are verbose.
	otel.SetLogger(logr.FromSlogHandler(minLevel{log.Handler(), slog.Level(-1)}))
}

// ErrorHandler is an otel.ErrorHandler that logs through slog, rate
// limited; see [HandleErrors]. Safe for concurrent use.
type ErrorHandler struct {
	log *slog.Logger
	now func() time.Time

	mu      sync.Mutex
	last    time.Time // when the last line was logged (zero: never)
	dropped int       // errors left out since then
}

// NewErrorHandler returns an ErrorHandler logging to log, on the clock now.
func NewErrorHandler(log *slog.Logger, now func() time.Time) *ErrorHandler {
	return &ErrorHandler{log: log, now: now}
}

// Handle logs err, or counts it when a line was logged less than
// ErrorInterval ago.
func (h *ErrorHandler) Handle(err error) {
	h.mu.Lock()
	now := h.now()
	if !h.last.IsZero() && now.Sub(h.last) < ErrorInterval {
		h.dropped++
		h.mu.Unlock()
		return
	}
	dropped := h.dropped
	h.last, h.dropped = now, 0
	h.mu.Unlock()
	attrs := []any{"err", err}
	if dropped > 0 {
		attrs = append(attrs, "left_out", dropped)
	}
	h.log.Warn("telemetry: OpenTelemetry error (traces may be lost); more are left out for "+ErrorInterval.String(), attrs...)
}

// minLevel drops the records below level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.level && m.Handler.Enabled(ctx, l)
}
func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{m.Handler.WithAttrs(as), m.level}
}
func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{m.Handler.WithGroup(name), m.level}
}
