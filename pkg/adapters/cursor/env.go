package cursor

import agentadaptor "github.com/seed0634/agentadaptor"

var _ agentadaptor.EnvNeeder = (*Adapter)(nil)

// NeededEnv implements agentadaptor.EnvNeeder: the host variables Cursor's agent CLI reads: its API key and settings.
// Under agentadaptor.WithEnvAllowList (the host's parent.env.allow) they
// pass besides the allow list; a denied one never does.
func (a *Adapter) NeededEnv() []string {
	return []string{"CURSOR_*"}
}
