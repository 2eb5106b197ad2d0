package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
)

func init() {
	register("a2a serve", "expose a local agent CLI as an A2A agent (card at /.well-known/agent-card.json)", a2aServeCmd)
}

func a2aServeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("a2a serve", "a2a serve --adapter NAME [--addr 127.0.0.1:9001] [--name NAME] [--scenario FILE] [flags]")
	adapterName := fs.String("adapter", "", "adapter to expose: "+strings.Join(adapterNames(), ", ")+" (required)")
	addr := fs.String("addr", "127.0.0.1:9001", "listen address")
	name := fs.String("name", "", "agent name on the card (default agentadaptor-<adapter>)")
	description := fs.String("description", "", "agent description on the card")
	publicURL := fs.String("public-url", "", "origin written into the card's interface URLs (default: http://<listen address>)")
	scenario := fs.String("scenario", "", "scenario file (scripted adapter)")
	model := fs.String("model", "", "model, in the CLI's naming")
	binary := fs.String("binary", "", "the CLI executable (default: the adapter's usual name on PATH)")
	workDir := fs.String("work-dir", "", "working directory of the agent (default: current)")
	timeout := fs.Duration("timeout", 0, "stop each turn after this long (0 = no limit)")
	exposeReasoning := fs.Bool("expose-reasoning", false, "publish reasoning as working status messages")
	exposeTools := fs.Bool("expose-tool-calls", false, "publish tool calls and results as working status messages")
	exposeDiag := fs.Bool("expose-diagnostics", false, "publish diagnostics as working status messages")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "agentadaptor a2a serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *adapterName == "" {
		fmt.Fprintf(stderr, "agentadaptor a2a serve: --adapter is required (one of %s)\n", strings.Join(adapterNames(), ", "))
		return 2
	}
	if *scenario != "" && *adapterName != "scripted" {
		fmt.Fprintln(stderr, "agentadaptor a2a serve: --scenario is for the scripted adapter only")
		return 2
	}
	if *adapterName == "scripted" && *scenario == "" {
		fmt.Fprintln(stderr, "agentadaptor a2a serve: the scripted adapter needs --scenario FILE")
		return 2
	}
	adapter, err := newAdapter(adapterSpec{Name: *adapterName, Scenario: *scenario, Binary: *binary})
	if err != nil {
		fmt.Fprintf(stderr, "agentadaptor a2a serve: %v\n", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(adapter), agentadaptor.WithLogger(logger))
	if err != nil {
		fmt.Fprintf(stderr, "agentadaptor a2a serve: %v\n", err)
		return 2
	}
	var opts []agentadaptor.RunOption
	if *model != "" {
		opts = append(opts, agentadaptor.WithModel(*model))
	}
	if *workDir != "" {
		opts = append(opts, agentadaptor.WithWorkDir(*workDir))
	}
	if *timeout > 0 {
		opts = append(opts, agentadaptor.WithTimeout(*timeout))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "agentadaptor a2a serve: %v\n", err)
		return 1
	}
	defer ln.Close()
	base := strings.TrimRight(*publicURL, "/")
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	bridge, err := a2abridge.NewServer(a2abridge.Config{
		SDK: sdk, Adapter: adapter.Name(), RunOptions: opts, Logger: logger,
		Exposure: a2abridge.Exposure{Reasoning: *exposeReasoning, ToolCalls: *exposeTools, Diagnostics: *exposeDiag},
		Card:     a2abridge.CardOptions{Name: *name, Description: *description, BaseURL: base},
	})
	if err != nil {
		fmt.Fprintf(stderr, "agentadaptor a2a serve: %v\n", err)
		return 2
	}
	srv := &http.Server{Handler: bridge.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "agentadaptor a2a serve: %s agent card at http://%s%s\n", adapter.Name(), ln.Addr(), a2abridge.PathAgentCard)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		// Streams stay open until their turn ends: cancel the turns first.
		_ = bridge.Close(sctx)
		_ = srv.Shutdown(sctx)
		cancel()
		err = <-errc
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "agentadaptor a2a serve: %v\n", err)
		return 1
	}
	fmt.Fprintln(stderr, "agentadaptor a2a serve: stopped")
	return 0
}
