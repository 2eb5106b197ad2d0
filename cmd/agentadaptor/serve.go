package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/seed0634/agentadaptor/examples/streaming-chat-copilotkit/web"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/hostyaml"
	"github.com/seed0634/agentadaptor/pkg/host"
)

func init() {
	register("serve", "run the host: AG-UI/SSE chat endpoint, web UI, delegation (default: embedded demo)", serveCmd)
}

func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("serve", "serve [--config host.yaml] [--addr 127.0.0.1:8080] [--log-format text|json]")
	configPath := fs.String("config", "", "host configuration file (YAML); none runs the embedded demo")
	addr := fs.String("addr", "", "listen address (default: the config's addr, else "+host.DefaultAddr+")")
	logFormat := fs.String("log-format", "", "log records as text (key=value) or json lines (default: the config's log_format, else text)")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "agentadaptor serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	// Keep the processes we start from reading our environment and memory.
	if err := hideProcess(); err != nil {
		fmt.Fprintf(stderr, "agentadaptor serve: making the process non-dumpable: %v\n", err)
		return 1
	}
	tuneServeGC()
	if _, err := newLogger(io.Discard, *logFormat); err != nil {
		fmt.Fprintf(stderr, "agentadaptor serve: %v\n", err)
		return 2
	}
	var cfg *hostconfig.Config
	if *configPath != "" {
		var err error
		if cfg, err = hostconfig.Load(*configPath); err != nil {
			fmt.Fprintf(stderr, "agentadaptor serve: %v\n", err)
			return 2
		}
		// Every env:/file: reference resolves now or serve stops, naming
		// the reference (never its value).
		if err := cfg.ResolveRefs(); err != nil {
			var ce *hostconfig.Error
			if errors.As(err, &ce) {
				ce.File = *configPath
			}
			fmt.Fprintf(stderr, "agentadaptor serve: %v\n", err)
			return 2
		}
	}
	format := *logFormat
	if format == "" && cfg != nil {
		format = cfg.LogFormat
	}
	logger, err := newLogger(stderr, format)
	if err != nil {
		fmt.Fprintf(stderr, "agentadaptor serve: %v\n", err)
		return 2
	}
	// Traces per the OTEL_* environment (docs/design.md#observability),
	// their exporter's errors in the log; flushed on exit.
	tracing, err := host.NewTracing(ctx, "agentadaptor-serve", logger)
	if err != nil {
		fmt.Fprintf(stderr, "agentadaptor serve: %v\n", err)
		return 2
	}
	defer shutdownTracing(tracing, stderr, "serve")
	h, err := hostyaml.New(ctx, cfg, hostyaml.Options{Logger: logger, AdapterFactory: parentAdapter, Addr: *addr, Tracing: tracing, UI: web.Handler()})
	if err != nil {
		fmt.Fprintf(stderr, "agentadaptor serve: %v\n", err)
		return 2
	}
	ln, err := net.Listen("tcp", h.Addr())
	if err != nil {
		fmt.Fprintf(stderr, "agentadaptor serve: %v\n", err)
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = h.Shutdown(sctx)
		return 1
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(stderr, "agentadaptor serve: listening on %s\n", base)
	for name, link := range h.LoginURLs(base) {
		fmt.Fprintf(stderr, "agentadaptor serve: sign in as %s (one-time link, 15 minutes): %s\n", name, link)
	}
	if err := h.Serve(ctx, ln); err != nil {
		fmt.Fprintf(stderr, "agentadaptor serve: %v\n", err)
		return 1
	}
	fmt.Fprintln(stderr, "agentadaptor serve: stopped")
	return 0
}

// shutdownTracing flushes the spans not exported yet, bounded.
func shutdownTracing(t interface{ Shutdown(context.Context) error }, stderr io.Writer, command string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		fmt.Fprintf(stderr, "agentadaptor %s: flushing traces: %v\n", command, err)
	}
}
