// Package testenv owns what tests need from the machine they run on: the
// tools some tests depend on (node and the pinned npm packages, the real
// CLIs, Chromium), and bounded waiting for conditions only the operating
// system shows (a process gone from /proc, a count no event announces).
//
// A test that needs a missing tool is skipped on a developer machine and
// fails under CI=true, where `make deps` has installed everything: a CI run
// that quietly skipped the interop checks would prove nothing.
//
//	root, err := testenv.NodePackages(testenv.AGUIPackages()...)
//	testenv.Require(t, "the Node AG-UI validator", err) // skip locally, fail in CI
//	...
//	testenv.WaitUntil(t, "the child to exit", func() bool { return gone(pid) })
//
// It is test support: only tests and other test-support packages import it,
// never the product. It imports the standard library only (no package of
// this module), so any test, the root package's own included, can use it.
// It must not grow assertions about timing: [Poll] and [WaitUntil] bound a
// wait, they never measure one.
package testenv
