package scripted

import (
	"encoding/json"
	"fmt"
	"github.com/seed0634/agentadaptor/pkg/adapters/internal/mcpjson"
	"os"
	"strings"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// The scripted agent reads the same --mcp-config document as Claude Code:
// header and env values keep ${VAR} references, which the agent expands from
// its own environment.
type (
	mcpConfig = mcpjson.Config
	mcpServer = mcpjson.Server
)

// readMCPConfig reads --mcp-config: a file, or (as Claude Code accepts
// it) the JSON document itself.
func readMCPConfig(path string) (mcpConfig, error) {
	var cfg mcpConfig
	if path == "" {
		return cfg, nil
	}
	if strings.HasPrefix(strings.TrimSpace(path), "{") {
		if err := json.Unmarshal([]byte(path), &cfg); err != nil {
			return cfg, fmt.Errorf("mcp config: %w", err)
		}
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
