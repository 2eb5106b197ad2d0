package claude

import agentadaptor "github.com/seed0634/agentadaptor"

var _ agentadaptor.EnvNeeder = (*Adapter)(nil)

// NeededEnv implements agentadaptor.EnvNeeder: the host variables Claude Code reads: its configuration directory, its own settings, the Anthropic API key, token and base URL, the MCP timeouts.
// Under agentadaptor.WithEnvAllowList (the host's parent.env.allow) they
// pass besides the allow list; a denied one never does.
func (a *Adapter) NeededEnv() []string {
	return []string{"CLAUDE_CONFIG_DIR", "CLAUDE_CODE_*", "ANTHROPIC_*", "MCP_TIMEOUT", "MCP_TOOL_TIMEOUT"}
}
