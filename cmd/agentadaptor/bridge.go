package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/seed0634/agentadaptor/internal/mcpbridge"
)

// bridgeCommand is the hidden command that serves a run's http MCP server
// over stdio for an ACP agent that cannot reach http MCP servers
// (pkg/adapters/acp.StdioBridge). It is not listed in the help: the ACP
// adapter starts it through the agent.
const bridgeCommand = "mcp-stdio-bridge"

// bridgeCmd runs `agentadaptor mcp-stdio-bridge --url URL [--bearer-env
// NAME]`: the bearer token comes from the variable NAME, never from argv.
func bridgeCmd(ctx context.Context, args []string, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) int {
	fs := flag.NewFlagSet(bridgeCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	endpoint := fs.String("url", "", "the MCP server's streamable HTTP endpoint (required)")
	bearerEnv := fs.String("bearer-env", "", "the environment variable holding the bearer token")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *endpoint == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentadaptor %s: usage: --url URL [--bearer-env NAME]\n", bridgeCommand)
		return 2
	}
	token := ""
	if *bearerEnv != "" {
		var ok bool
		if token, ok = os.LookupEnv(*bearerEnv); !ok || token == "" {
			fmt.Fprintf(stderr, "agentadaptor %s: the variable %s holding the bearer token is not set\n", bridgeCommand, *bearerEnv)
			return 2
		}
	}
	if err := mcpbridge.Run(ctx, *endpoint, token, stdin, stdout); err != nil {
		fmt.Fprintf(stderr, "agentadaptor %s: %v\n", bridgeCommand, err)
		return 1
	}
	return 0
}
