package codex

import agentadaptor "github.com/seed0634/agentadaptor"

var _ agentadaptor.EnvNeeder = (*Adapter)(nil)

// NeededEnv implements agentadaptor.EnvNeeder: the host variables Codex reads: its home (config.toml, credentials) and the OpenAI API key and base URL.
// Under agentadaptor.WithEnvAllowList (the host's parent.env.allow) they
// pass besides the allow list; a denied one never does.
func (a *Adapter) NeededEnv() []string {
	return []string{"CODEX_HOME", "OPENAI_*"}
}
