// Command otlpsink is a local OpenTelemetry trace receiver for measuring
// what exporting traces costs (docs/benchmarks.md#tracing-overhead): it
// accepts OTLP/HTTP protobuf exports on -addr, counts the spans, and prints
// the count every -every and when stopped (SIGINT/SIGTERM).
//
//	go run ./bench/otlpsink -addr 127.0.0.1:4318 &
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 agentadaptor serve ...
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/seed0634/agentadaptor/internal/testkit/otlpsink"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4318", "listen address (OTLP/HTTP: POST /v1/traces)")
	every := flag.Duration("every", 10*time.Second, "how often to print the count (0: only at the end)")
	flag.Parse()
	s, err := otlpsink.Start(*addr, false)
	if err != nil {
		fmt.Fprintln(os.Stderr, "otlpsink:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "otlpsink: listening on %s (OTEL_EXPORTER_OTLP_ENDPOINT=%s)\n", *addr, s.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	var tick <-chan time.Time
	if *every > 0 {
		t := time.NewTicker(*every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-tick:
			spans, exports := s.Count()
			fmt.Fprintf(os.Stderr, "otlpsink: %d spans in %d exports\n", spans, exports)
		case <-sig:
			spans, exports := s.Count()
			fmt.Fprintf(os.Stderr, "otlpsink: %d spans in %d exports; stopping\n", spans, exports)
			_ = s.Close()
			return
		}
	}
}
