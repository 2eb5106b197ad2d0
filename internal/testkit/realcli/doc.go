// Package realcli locates the real agent CLI binaries that the repository's
// npm dependencies install (node_modules/.bin/claude, node_modules/.bin/codex),
// for end-to-end tests. It never downloads or installs anything: the project's
// deps script does (npm ci, then node node_modules/@anthropic-ai/claude-code/install.cjs).
//
// Tests call [Require]: a missing binary skips the test locally and fails it
// when the environment variable CI is "true" (internal/testkit/testenv's rule), so CI
// never skips silently.
package realcli
