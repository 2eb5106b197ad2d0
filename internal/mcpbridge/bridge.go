// Package mcpbridge serves a streamable-HTTP MCP server over stdio: the
// "agentadaptor mcp-stdio-bridge" command that the ACP adapter hands to an
// agent that cannot reach http MCP servers itself
// (docs/design.md#run-scoped-mcp-context). It forwards every JSON-RPC
// message as is, both ways (requests with their _meta, responses,
// progress notifications), through the official MCP Go SDK's transports,
// and adds the run's bearer token, which it gets from its environment:
// never from argv.
//
// It owns that forwarding only; it knows nothing of the tools behind it.
package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Run forwards MCP messages between stdio (in, out) and the MCP endpoint
// at endpoint, sending "Authorization: Bearer <token>" when token is not
// empty. It returns when in ends (nil), when ctx ends, or when either side
// fails.
func Run(ctx context.Context, endpoint, token string, in io.ReadCloser, out io.WriteCloser) error {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("mcp bridge: %q is not an http(s) URL", endpoint)
	}
	hc := &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}
	remote, err := (&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}).Connect(ctx)
	if err != nil {
		return fmt.Errorf("mcp bridge: connecting to the MCP server: %w", err)
	}
	local, err := (&mcp.IOTransport{Reader: in, Writer: out}).Connect(ctx)
	if err != nil {
		remote.Close()
		return fmt.Errorf("mcp bridge: stdio: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	go func() { errc <- pump(ctx, local, remote) }()
	go func() { errc <- pump(ctx, remote, local) }()
	err = <-errc
	cancel()
	local.Close()
	remote.Close()
	<-errc
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// pump copies messages from src to dst until one side fails.
func pump(ctx context.Context, src, dst mcp.Connection) error {
	for {
		msg, err := src.Read(ctx)
		if err != nil {
			return err
		}
		if err := dst.Write(ctx, msg); err != nil {
			return err
		}
	}
}

// bearer adds the token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token == "" {
		return b.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
