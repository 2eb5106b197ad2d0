package mcptool

import "github.com/modelcontextprotocol/go-sdk/mcp"

// ToolHandler exposes the tool handler to the external tests, to call it
// the way a misconfigured server (without the bearer middleware) would.
func (s *Server) ToolHandler(fixedAgent string) mcp.ToolHandler { return s.toolHandler(fixedAgent) }
