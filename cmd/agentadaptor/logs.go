package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/seed0634/agentadaptor/internal/telemetry"
)

// Log formats of --log-format (and the host config's log_format).
const (
	logText = "text"
	logJSON = "json"
)

// newLogger returns the logger of a server command: slog records to w as
// text (key=value) or JSON lines, with the trace and span ids of the
// record's span. The command's own status lines (listening on ..., the
// card URL) are not log records: they stay plain text whatever the format.
func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "", logText:
		return slog.New(telemetry.LogHandler(slog.NewTextHandler(w, nil))), nil
	case logJSON:
		return slog.New(telemetry.LogHandler(slog.NewJSONHandler(w, nil))), nil
	}
	return nil, fmt.Errorf("--log-format %q: must be text or json", format)
}
