package host

import (
	"log/slog"
	"path"
	"strings"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
)

// CredentialEnv are the host's own environment variables that carry
// credentials whatever the configuration says: the OTLP exporter's headers
// (OTEL_EXPORTER_OTLP_HEADERS and the per-signal
// OTEL_EXPORTER_OTLP_{TRACES,METRICS,LOGS}_HEADERS), which hold the
// tracing backend's API key. No agent CLI inherits them ('*' as in
// agentadaptor.WithEnvDeny).
var CredentialEnv = []string{"OTEL_EXPORTER_OTLP_*HEADERS"}

// parentEnv is the environment policy of every local agent CLI the host
// starts (docs/design.md#secrets): the variables the config's env:
// references name, the host's credential variables and parent.env.deny
// are never inherited; a parent.env.allow list narrows the rest.
func parentEnv(cfg *hostconfig.Config) []agentadaptor.RunOption {
	deny := append(append(cfg.SecretEnv(), CredentialEnv...), cfg.Parent.Env.Deny...)
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
