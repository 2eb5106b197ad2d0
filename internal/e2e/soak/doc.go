// Package soak holds only tests: the load driver behind the soak figures of
// docs/benchmarks.md (1,000 concurrent delegations over 100 parent runs;
// opt-in with AGENTADAPTOR_SOAK=1, see soak_test.go for its knobs) and the
// regression test of the cancel race it found. Nothing imports it.
package soak
