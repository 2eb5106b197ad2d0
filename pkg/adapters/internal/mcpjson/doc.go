// Package mcpjson owns the Claude-shaped MCP configuration document
// ({"mcpServers": {...}}) that Claude Code reads with --mcp-config and the
// scripted agent reads the same way. Header and env values keep ${VAR}
// references, which the reading CLI expands from its own environment, so the
// file never holds a secret. It knows nothing of any other CLI's format, and
// must not expand a ${VAR} reference itself: that would write the secret.
package mcpjson
