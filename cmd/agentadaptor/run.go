package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
)

func init() {
	register("run", "perform one run and print its payloads as JSON lines", runCmd)
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", "run --adapter NAME [--stream] [--scenario FILE] [flags] PROMPT")
	adapterName := fs.String("adapter", "scripted", "adapter: "+strings.Join(adapterNames(), ", "))
	stream := fs.Bool("stream", false, "ask the CLI for partial output (text deltas)")
	scenario := fs.String("scenario", "", "scenario file (scripted adapter)")
	model := fs.String("model", "", "model, in the CLI's naming")
	binary := fs.String("binary", "", "the CLI executable (default: the adapter's usual name on PATH)")
	sessionKey := fs.String("session-key", "", "host session key; runs with the same key resume the CLI session")
	workDir := fs.String("work-dir", "", "working directory of the agent (default: current)")
	timeout := fs.Duration("timeout", 0, "stop the run after this long (0 = no limit)")
	result := fs.Bool("result", false, "print the RunResult as a final JSON line")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "agentadaptor run: want exactly one PROMPT argument, got %d (quote the prompt)\n", fs.NArg())
		return 2
	}
	if *scenario != "" && *adapterName != "scripted" {
		fmt.Fprintln(stderr, "agentadaptor run: --scenario is for the scripted adapter only")
		return 2
	}
	if *adapterName == "scripted" && *scenario == "" {
		fmt.Fprintln(stderr, "agentadaptor run: the scripted adapter needs --scenario FILE")
		return 2
	}
	adapter, err := newAdapter(adapterSpec{Name: *adapterName, Scenario: *scenario, Binary: *binary})
	if err != nil {
		fmt.Fprintf(stderr, "agentadaptor run: %v\n", err)
		return 2
	}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(adapter))
	if err != nil {
		fmt.Fprintf(stderr, "agentadaptor run: %v\n", err)
		return 2
	}
	opts := []agentadaptor.RunOption{}
	if *stream {
		opts = append(opts, agentadaptor.WithStreaming())
	}
	if *model != "" {
		opts = append(opts, agentadaptor.WithModel(*model))
	}
	if *sessionKey != "" {
		opts = append(opts, agentadaptor.WithSessionKey(*sessionKey))
	}
	if *workDir != "" {
		opts = append(opts, agentadaptor.WithWorkDir(*workDir))
	}
	if *timeout > 0 {
		opts = append(opts, agentadaptor.WithTimeout(*timeout))
	}
	h, err := sdk.Start(ctx, fs.Arg(0), opts...)
	if err != nil {
		fmt.Fprintf(stderr, "agentadaptor run: %v\n", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	for p := range h.StreamEvents() {
		if err := enc.Encode(p); err != nil {
			fmt.Fprintf(stderr, "agentadaptor run: writing output: %v\n", err)
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = h.Cancel(cctx)
			cancel()
			break
		}
	}
	res, err := h.Wait(context.Background())
	if err != nil {
		fmt.Fprintf(stderr, "agentadaptor run: %v\n", err)
		return 1
	}
	if *result {
		_ = enc.Encode(res)
	}
	if res.Status != agentadaptor.StatusCompleted {
		fmt.Fprintf(stderr, "agentadaptor run: run %s %s: %v\n", res.RunID, res.Status, res.Failure)
		return 1
	}
	return 0
}
