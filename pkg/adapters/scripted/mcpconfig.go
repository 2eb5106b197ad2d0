package scripted

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// mcpConfig is the MCP configuration file the scripted agent reads, in the
// same shape as Claude Code's --mcp-config: header and env values keep
// ${VAR} references, which the agent expands from its own environment.
type mcpConfig struct {
	MCPServers map[string]mcpServer `json:"mcpServers"`
}

type mcpServer struct {
	Type    string            `json:"type"` // "http" or "stdio"
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

func buildMCPConfig(specs []agentadaptor.MCPServerSpec) mcpConfig {
	cfg := mcpConfig{MCPServers: map[string]mcpServer{}}
	for _, s := range specs {
		if s.EffectiveTransport() == agentadaptor.MCPTransportHTTP {
			h := map[string]string{}
			for k, v := range s.Headers {
				h[k] = v
			}
			if s.BearerTokenEnvVar != "" {
				h["Authorization"] = s.AuthorizationHeader()
			}
			cfg.MCPServers[s.Key] = mcpServer{Type: "http", URL: s.URL, Headers: h}
		} else {
			cfg.MCPServers[s.Key] = mcpServer{Type: "stdio", Command: s.Command, Args: s.Args, Env: s.Env}
		}
	}
	return cfg
}

func readMCPConfig(path string) (mcpConfig, error) {
	var cfg mcpConfig
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return cfg, fmt.Errorf("mcp config %s: %w", path, err)
	}
	return cfg, nil
}

// expandEnv replaces ${VAR} with the value from lookup, the way CLIs expand
// their MCP configuration. Unset variables expand to "".
func expandEnv(s string, lookup func(string) string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	vars := map[string]string{}
	for _, name := range agentadaptor.VarRefs(s) {
		vars[name] = lookup(name)
	}
	return agentadaptor.ExpandVars(s, vars)
}
