package hostyaml

import (
	"log/slog"
	"path"
	"strings"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
)

// parentEnv is the environment policy of every local agent CLI the host
// starts (docs/design.md#secrets): the variables the config's env:
// references name and parent.env.deny are never inherited (nor, whatever
// the config says, host.CredentialEnv: pkg/host adds it); a
// parent.env.allow list narrows the rest.
func parentEnv(cfg *hostconfig.Config) []agentadaptor.RunOption {
	deny := append(cfg.SecretEnv(), cfg.Parent.Env.Deny...)
	opts := []agentadaptor.RunOption{agentadaptor.WithEnvDeny(deny...)}
	if len(cfg.Parent.Env.Allow) > 0 {
		opts = append(opts, agentadaptor.WithEnvAllowList(cfg.Parent.Env.Allow...))
	}
	return opts
}

// warnNeededSecrets tells the operator when a variable the parent's CLI
// needs (its API key, say) is also a secret the config refers to: the
// parent does not get it.
func warnNeededSecrets(log *slog.Logger, parent agentadaptor.Adapter, cfg *hostconfig.Config) {
	n, ok := parent.(agentadaptor.EnvNeeder)
	if !ok {
		return
	}
	for _, r := range cfg.Refs() {
		name, ok := strings.CutPrefix(r.Ref, "env:")
		if !ok {
			continue
		}
		for _, need := range n.NeededEnv() {
			if m, _ := path.Match(need, name); m || need == name {
				log.Warn("agentadaptor: the parent CLI needs a variable that is a secret of the host; it does not get it", "variable", name, "field", r.Field)
			}
		}
	}
}
