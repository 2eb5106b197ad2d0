// Package layering holds the architecture contract tests of the layering
// (docs/design.md#layering, tested as docs/design.md#testing describes): who
// may import whom, what the core SDK must not grow, and that test support
// stays out of the product. It has no non-test code.
package layering
