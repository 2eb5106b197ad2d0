package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// At most one line per ErrorInterval, each saying how many errors were
// left out since the previous one.
func TestErrorHandlerIsRateLimited(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	h := NewErrorHandler(slog.New(slog.NewJSONHandler(&buf, nil)), func() time.Time { return now })
	for i := range 5 {
		h.Handle(errors.New("export failed " + string(rune('a'+i))))
	}
	now = now.Add(ErrorInterval - time.Millisecond)
	h.Handle(errors.New("still within the interval"))
	now = now.Add(time.Millisecond)
	h.Handle(errors.New("export failed again"))
	var lines []map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	if lines[0]["err"] != "export failed a" || lines[0]["left_out"] != nil || lines[0]["level"] != "WARN" {
		t.Errorf("first line %v", lines[0])
	}
	if lines[1]["err"] != "export failed again" || lines[1]["left_out"] != float64(5) {
		t.Errorf("second line %v", lines[1])
	}
}

// childEnv marks the process TestOTLPExportErrorsGoThroughSlog runs as
// its child: OpenTelemetry's default error handler is process-wide, and
// writes with a standard log.Logger bound to the process's stderr at
// start, so only a process of its own shows what reaches its stderr.
const childEnv = "AGENTADAPTOR_TELEMETRY_OTLP_CHILD"

// A failing OTLP export becomes a slog record (here JSON on stdout), and
// nothing reaches stderr, where the standard log package's default
// OpenTelemetry handler writes; the failures after the first are left
// out (the clock is frozen: all of them fall in one interval).
func TestOTLPExportErrorsGoThroughSlog(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		otlpChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOTLPExportErrorsGoThroughSlog$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("the child wrote to stderr (the standard log package?):\n%s", stderr.String())
	}
	var records []map[string]any
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("{")) {
			continue // the test framework's PASS
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		records = append(records, m)
	}
	if len(records) != 1 || !strings.Contains(records[0]["msg"].(string), "OpenTelemetry error") ||
		!strings.Contains(records[0]["err"].(string), "400") {
		t.Fatalf("records %v, want one about the failed export:\n%s", records, stdout.String())
	}
}

// otlpChild exports spans to a collector that refuses every batch (400)
// until it has refused three, with the errors handled by handleErrors on
// a frozen clock.
func otlpChild(t *testing.T) {
	var refused atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		refused.Add(1)
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer srv.Close()
	clearEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
	frozen := time.Unix(1000, 0)
	handleErrors(slog.New(slog.NewJSONHandler(os.Stdout, nil)), func() time.Time { return frozen })
	tr, err := NewTracing(context.Background(), "child")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for refused.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the collector refused %d batches in a minute", refused.Load())
		}
		_, span := tr.Tracer().Start(context.Background(), "work")
		span.End()
		time.Sleep(20 * time.Millisecond)
	}
}
