// Package host assembles the `agentadaptor serve` HTTP host from a host
// configuration: the SDK with the configured parent adapter, the AG-UI/SSE
// chat endpoint, run cancellation and health. It owns the host's HTTP routes
// and its shutdown order (cancel runs, wait for them, then close the server);
// the behaviour behind each route belongs to the bridges it wires.
package host
