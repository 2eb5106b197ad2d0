// Package contract holds the architecture contract tests of DESIGN §1 and
// SPEC §20.2: who may import whom, and what the core SDK must not grow. It
// has no non-test code.
package contract
