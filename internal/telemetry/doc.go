// Package telemetry is the observability of `agentadaptor serve` and
// `agentadaptor a2a serve` (docs/design.md#observability): Prometheus
// metrics (client_golang, one registry per server with the Go runtime and
// process collectors) and OpenTelemetry traces configured by the standard
// OTEL_* environment variables (OTLP over HTTP or gRPC; off when none is
// set).
//
// It is the only package that imports otel or Prometheus. The product
// packages take part through small hooks they define themselves
// (subagentstream.Observer, sse.RunHook, delegator.Observer,
// a2a.TurnObserver, an http.Client for the connectors); this package
// implements them ([Host], [A2AServe]) and gives a2a serve's grpc.Server
// its interceptors ([A2AServe.GRPCServerOptions]).
//
// What it must not do: record a secret, prompt or remote text in a metric
// label or span attribute (labels are registry keys, protocols, statuses and
// failure codes; attributes are ids, statuses and codes), set the otel or
// Prometheus globals (two servers can run in one process) but otel's error
// handler and internal logger, which [HandleErrors] routes to slog when a
// command asks, or put a span on anything per chunk (spans are per run,
// delegation, remote call, request and turn).
package telemetry
