// Package clibase owns the small pieces of product code that more than one
// CLI adapter runs the same way: resolving the configured binary (a path, or
// a name on PATH), creating the throwaway profile directory of an isolated
// run, the headroom a CLI's MCP tool timeout gets above a server's own
// ToolTimeout, a new random session id, and turning a CLI's event type into a
// safe payload name (with the line's JSON as its Raw map). It knows nothing of
// any CLI's flags, files or stream format, and must not learn them: what is
// one CLI's stays in that CLI's adapter. It imports the core SDK and the
// standard library only.
package clibase
