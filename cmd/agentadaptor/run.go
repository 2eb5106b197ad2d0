package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
)

func init() {
	register("run", "perform one run and print its payloads as JSON lines", runCmd)
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", "run --adapter NAME [--stream] [--scenario FILE] [flags] PROMPT")
	adapterName := fs.String("adapter", "", "adapter: "+strings.Join(adapterNames(), ", ")+" (required)")
	stream := fs.Bool("stream", false, "ask the CLI for partial output (text deltas)")
	scenario := fs.String("scenario", "", "scenario file (scripted adapter)")
	model := fs.String("model", "", "model, in the CLI's naming")
	binary := fs.String("binary", "", "the CLI executable (default: the adapter's usual name on PATH; required for acp)")
	var agentArgs stringList
	fs.Var(&agentArgs, "arg", "an argument of the agent (acp adapter, repeatable), e.g. --arg=--experimental-acp")
	sessionKey := fs.String("session-key", "", "session key; runs with the same key resume the CLI session, across invocations")
	stateDir := fs.String("state-dir", defaultStateDir(), "where --session-key remembers sessions")
	workDir := fs.String("work-dir", "", "working directory of the agent (default: current)")
	timeout := fs.Duration("timeout", 0, "stop the run after this long (0 = no limit)")
	result := fs.Bool("result", false, "print the RunResult as a final JSON line")
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprintf(fs.Output(), "\nExit codes: 0 completed, 1 failed or cancelled, 2 usage or configuration error, %d input_required (the agent asks; answer in a next run with the same --session-key).\n", ExitInputRequired)
	}
	prompt, code, done := parseInterspersed(fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(prompt) != 1 {
		fmt.Fprintf(stderr, "agentadaptor run: want exactly one PROMPT argument, got %d: %q (quote a prompt of several words)\n", len(prompt), prompt)
		return 2
	}
	if *adapterName == "" {
		fmt.Fprintf(stderr, "agentadaptor run: --adapter is required (one of %s)\n", strings.Join(adapterNames(), ", "))
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
	if len(agentArgs) > 0 && *adapterName != "acp" {
		fmt.Fprintln(stderr, "agentadaptor run: --arg is for the acp adapter only")
		return 2
	}
	adapter, err := newAdapter(adapterSpec{Name: *adapterName, Scenario: *scenario, Binary: *binary, Args: agentArgs})
	if err != nil {
		fmt.Fprintf(stderr, "agentadaptor run: %v\n", err)
		return 2
	}
	sdkOpts := []agentadaptor.SDKOption{agentadaptor.WithAdapters(adapter)}
	if *sessionKey != "" {
		sdkOpts = append(sdkOpts, agentadaptor.WithSessionStore(agentadaptor.NewFileSessionStore(filepath.Join(*stateDir, "sessions.json"))))
	}
	sdk, err := agentadaptor.New(sdkOpts...)
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
	h, err := sdk.Start(ctx, prompt[0], opts...)
	if err != nil {
		fmt.Fprintf(stderr, "agentadaptor run: %v\n", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	question, asked := "", false
	for p := range h.StreamEvents() {
		if p.Name == scripted.PayloadInputRequired {
			asked = true
			question, _ = p.Raw["text"].(string)
		}
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
	if asked {
		// The turn ended waiting for the user: not an answer, not a failure.
		resume := "run again with the same --session-key and the answer as PROMPT"
		if *sessionKey == "" {
			resume = "give --session-key KEY to answer it in a next run"
		}
		fmt.Fprintf(stderr, "agentadaptor run: run %s input_required: the agent asks %q; %s\n", res.RunID, question, resume)
		return ExitInputRequired
	}
	return 0
}

// ExitInputRequired is run's exit code when the run ended waiting for the
// user's input (a scripted ask: step): the turn is over without an answer.
const ExitInputRequired = 3

// parseInterspersed parses flags that may come before or after the
// positional arguments ("run PROMPT --stream" as well as "run --stream
// PROMPT"); "--" ends the flags. It returns the positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (positional []string, code int, done bool) {
	for {
		if code, done := parseFlags(fs, args, stdout, stderr); done {
			return nil, code, true
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, 0, false
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), 0, false
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// defaultStateDir is $XDG_STATE_HOME/agentadaptor, else
// ~/.local/state/agentadaptor, else a directory under the temp dir.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "agentadaptor")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "agentadaptor")
	}
	return filepath.Join(os.TempDir(), "agentadaptor-state")
}
