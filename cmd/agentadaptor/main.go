package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
)

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands maps a command line prefix ("serve", "a2a serve") to its command.
var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	commands[name] = command{summary: summary, run: run}
}

func main() {
	scripted.MaybeRunAgent()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == bridgeCommand { // hidden: run by ACP agents, not by people
		return bridgeCmd(ctx, args[1:], os.Stdin, os.Stdout, stderr)
	}
	if args[0] == "--version" || args[0] == "-version" {
		return versionCmd(ctx, nil, stdout, stderr)
	}
	// Longest registered prefix wins ("a2a serve" before "a2a").
	for n := min(2, len(args)); n >= 1; n-- {
		name := strings.Join(args[:n], " ")
		if c, ok := commands[name]; ok {
			return c.run(ctx, args[n:], stdout, stderr)
		}
	}
	// A command group ("a2a"): list its commands.
	if group := groupCommands(args[0]); len(group) > 0 {
		help := len(args) > 1 && (args[1] == "--help" || args[1] == "-h" || args[1] == "help")
		w := stderr
		if help {
			w = stdout
		} else if len(args) > 1 {
			fmt.Fprintf(stderr, "agentadaptor: unknown command %q; the %s commands are:\n", strings.Join(args[:2], " "), args[0])
		}
		fmt.Fprintf(w, "Usage: agentadaptor %s COMMAND [flags]\n\nCommands:\n", args[0])
		for _, n := range group {
			fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
		}
		if help {
			return 0
		}
		return 2
	}
	fmt.Fprintf(stderr, "agentadaptor: unknown command %q; run 'agentadaptor --help'\n", strings.Join(args[:min(2, len(args))], " "))
	return 2
}

// groupCommands lists the commands that start with the word group.
func groupCommands(group string) []string {
	var out []string
	for n := range commands {
		if strings.HasPrefix(n, group+" ") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "agentadaptor runs local agent CLIs and lets them delegate to remote agents as visual subagents.")
	fmt.Fprintln(w, "\nUsage: agentadaptor COMMAND [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'agentadaptor COMMAND --help' for a command's flags.")
}

// parseFlags parses args with fs. It prints help and returns (0, true) for
// --help, and prints a one-line error and returns (2, true) on a usage error.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (int, bool) {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0, true
		}
		fmt.Fprintf(stderr, "agentadaptor %s: %v\n", fs.Name(), err)
		return 2, true
	}
	return 0, false
}

func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: agentadaptor %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}
