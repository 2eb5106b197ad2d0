package mcpjson

import (
	"maps"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// Config is the --mcp-config document.
type Config struct {
	MCPServers map[string]Server `json:"mcpServers"`
}

// Server is one server of a Config.
type Server struct {
	Type    string            `json:"type"` // "http" or "stdio"
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// Build converts a run's MCP set into the document. A BearerTokenEnvVar
// becomes an "Authorization: Bearer ${VAR}" header.
func Build(specs []agentadaptor.MCPServerSpec) Config {
	cfg := Config{MCPServers: map[string]Server{}}
	for _, s := range specs {
		if s.EffectiveTransport() == agentadaptor.MCPTransportHTTP {
			h := map[string]string{}
			maps.Copy(h, s.Headers)
			if s.BearerTokenEnvVar != "" {
				h["Authorization"] = s.AuthorizationHeader()
			}
			if len(h) == 0 {
				h = nil
			}
			cfg.MCPServers[s.Key] = Server{Type: "http", URL: s.URL, Headers: h}
			continue
		}
		cfg.MCPServers[s.Key] = Server{Type: "stdio", Command: s.Command, Args: s.Args, Env: s.Env}
	}
	return cfg
}
