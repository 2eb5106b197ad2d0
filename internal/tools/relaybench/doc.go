// Package relaybench is the end-to-end relay benchmark of bench/e2e (see its
// README and docs/benchmarks.md): one A2A remote (@a2a-js/sdk, Node) that
// streams timestamped chunks, three systems relaying it as AG-UI over SSE —
// the project (`agentadaptor serve` with a scripted parent calling
// delegate_to_agent), a bare Go relay (read the A2A SSE stream, decode,
// re-encode, write one SSE frame, flush) and the peer (@ag-ui/a2a served over
// HTTP, Node) — and one Go load client that drives each system at the same
// concurrency levels and measures relay latency, time to first chunk,
// throughput, CPU per chunk and RSS per active delegation from /proc.
//
// It is a benchmark harness, not product code: nothing in the product imports
// it. Timing is reported, never asserted: its smoke test (smoke_test.go)
// checks only that every system delivered every chunk and every terminal
// event.
package relaybench
