package hostyaml

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	"github.com/seed0634/agentadaptor/pkg/credentials"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/host"
)

//go:embed demo/parent.yaml
var demoParent []byte

// Options are what the configuration file does not say.
type Options struct {
	// Logger receives the host's logs (default slog.Default()).
	Logger *slog.Logger
	// Executable runs the scripted agent (default: the current binary).
	Executable string
	// StateDir keeps scripted sessions (default: a directory under the
	// system's temporary directory).
	StateDir string
	// AdapterFactory builds non-scripted parent adapters; nil means only
	// the scripted parent is available.
	AdapterFactory func(cfg hostconfig.Parent) (agentadaptor.Adapter, error)
	// Addr overrides the config's listen address (the --addr flag).
	Addr string
	// Audit replaces the audit store the config's audit_file selects.
	Audit audit.Store
	// ReadTimeout bounds reading a request's headers and body (default
	// host.DefaultReadTimeout).
	ReadTimeout time.Duration
	// Tracing exports the host's spans (nil: none); the caller shuts it
	// down after the host.
	Tracing *host.Tracing
	// UI serves the web UI at "/" (nil: none).
	UI http.Handler
}

// Demo reports whether cfg is the embedded demo: the scripted parent
// without a scenario of its own, and no agents (a nil cfg is too).
func Demo(cfg *hostconfig.Config) bool {
	return cfg == nil || (cmp.Or(cfg.Parent.Adapter, "scripted") == "scripted" && cfg.Parent.Scenario == "" && len(cfg.Agents) == 0)
}

// New builds the host cfg describes (a nil cfg is the embedded demo: the
// scripted parent delegating to a scripted "research" agent that the host
// serves over real A2A on loopback, stopped by the host's Shutdown). The
// config is validated and its auth references resolved first: a reference
// that does not resolve stops the start, naming it (never its value).
// With audit_file, the host closes the file at the end of its Shutdown.
func New(ctx context.Context, cfg *hostconfig.Config, opts Options) (*host.Host, error) {
	if cfg == nil {
		cfg = &hostconfig.Config{}
	}
	hc, err := Config(cfg, opts)
	if err != nil {
		return nil, err
	}
	var demo *demoRemote
	if Demo(cfg) {
		env := append(parentEnv(cfg), agentadaptor.WithEnvDeny(host.CredentialEnv...))
		if demo, err = startDemoRemote(ctx, opts, env, hc.MaxConnections); err != nil {
			return nil, err
		}
		hc.Agents = []registry.RemoteAgentSpec{demo.spec()}
	}
	var file *audit.File
	if hc.Audit == nil && cfg.AuditFile != "" {
		if file, err = audit.OpenFile(cfg.AuditFile, audit.Options{Logger: hc.Logger, MaxFileBytes: cfg.AuditMaxBytes, MaxFiles: cfg.AuditMaxFiles}); err != nil {
			if demo != nil {
				demo.close(context.Background())
			}
			return nil, err
		}
		hc.Audit = file
	}
	h, err := host.New(ctx, hc)
	if err != nil {
		if file != nil {
			_ = file.Close()
		}
		if demo != nil {
			demo.close(context.Background())
		}
		return nil, err
	}
	if demo != nil {
		h.RegisterOnShutdown(demo.close)
	}
	return h, nil
}

// Config converts cfg into the host's Config (without the demo's agent,
// which New starts): it validates cfg, resolves its auth references (the
// principals' tokens), builds the parent adapter and the registry's specs.
func Config(cfg *hostconfig.Config, opts Options) (host.Config, error) {
	if err := cfg.Validate(); err != nil {
		return host.Config{}, err
	}
	// Every auth reference resolves now, or the host does not start
	// (docs/design.md#secrets): not at the first delegation that needs it.
	if err := cfg.ResolveRefs(); err != nil {
		return host.Config{}, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.StateDir == "" {
		opts.StateDir = filepath.Join(os.TempDir(), "agentadaptor-scripted")
	}
	parent, err := newParent(cfg.Parent, opts)
	if err != nil {
		return host.Config{}, err
	}
	warnNeededSecrets(opts.Logger, parent, cfg)
	tokens, err := resolveTokens(cfg.Auth.Tokens)
	if err != nil {
		return host.Config{}, err
	}
	hc := host.Config{
		Parent:         parent,
		RunOptions:     parentEnv(cfg),
		Agents:         registrySpecs(cfg.Agents),
		Addr:           cmp.Or(opts.Addr, cfg.Addr),
		AllowedHosts:   cfg.Auth.AllowedHosts,
		AllowedOrigins: cfg.AllowedOrigins,
		Tokens:         tokens,
		SessionTTL:     time.Duration(cfg.Auth.SessionTTL),
		ReconnectGrace: time.Duration(cfg.ReconnectGrace),
		MaxActiveRuns:  cfg.MaxActiveRuns,
		MaxConnections: cfg.MaxConnections,
		ReadTimeout:    opts.ReadTimeout,
		Audit:          opts.Audit,
		Cluster: host.Cluster{NATSURL: cfg.Cluster.NATSURL, Replica: cfg.Cluster.Replica, Lease: time.Duration(cfg.Cluster.Lease),
			CredsRef: cfg.Cluster.CredsRef},
		UI:      opts.UI,
		Logger:  opts.Logger,
		Tracing: opts.Tracing,
	}
	p := cfg.Parent
	if p.Model != "" {
		hc.RunOptions = append(hc.RunOptions, agentadaptor.WithModel(p.Model))
	}
	if p.WorkDir != "" {
		hc.RunOptions = append(hc.RunOptions, agentadaptor.WithWorkDir(p.WorkDir))
	}
	if p.Timeout > 0 {
		hc.RunOptions = append(hc.RunOptions, agentadaptor.WithTimeout(time.Duration(p.Timeout)))
	}
	if p.Nice != 0 {
		hc.RunOptions = append(hc.RunOptions, agentadaptor.WithNice(p.Nice))
	}
	return hc, nil
}

func newParent(p hostconfig.Parent, opts Options) (agentadaptor.Adapter, error) {
	if p.Adapter != "scripted" {
		if opts.AdapterFactory == nil {
			return nil, fmt.Errorf("parent adapter %q is not available in this build", p.Adapter)
		}
		return opts.AdapterFactory(p)
	}
	cfg := scripted.Config{Executable: opts.Executable, Scenario: p.Scenario, StateDir: opts.StateDir}
	if cfg.Scenario == "" {
		cfg.ScenarioData = demoParent
	}
	return scripted.New(cfg)
}

// resolveTokens reads the principals' tokens from their auth references.
func resolveTokens(tokens []hostconfig.Token) (map[string]string, error) {
	out := map[string]string{}
	for i, t := range tokens {
		c, err := credentials.Resolve(t.TokenRef)
		if err != nil {
			return nil, fmt.Errorf("auth.tokens[%d] (%s): %w", i, t.Name, err)
		}
		out[t.Name] = credentials.Secret(c)
	}
	return out, nil
}

// registrySpecs converts the config's agents into host-curated specs.
func registrySpecs(agents []hostconfig.Agent) []registry.RemoteAgentSpec {
	var specs []registry.RemoteAgentSpec
	for _, a := range agents {
		p := registry.DefaultPolicy()
		p.AllowInputRequired = true
		if a.Policy.AllowInputRequired != nil {
			p.AllowInputRequired = *a.Policy.AllowInputRequired
		}
		if a.Policy.InputRequired != "" {
			p.InputRequired = a.Policy.InputRequired
			p.AllowInputRequired = a.Policy.InputRequired != registry.InputRequiredFail
		}
		if a.Policy.AllowRemoteArtifacts != nil {
			p.AllowRemoteArtifacts = *a.Policy.AllowRemoteArtifacts
		}
		if a.Policy.MaxTimeout > 0 {
			p.MaxTimeout = time.Duration(a.Policy.MaxTimeout)
		}
		if a.Policy.MaxArtifactBytes > 0 {
			p.MaxArtifactBytes = a.Policy.MaxArtifactBytes
		}
		if a.Policy.MaxReadBytes > 0 {
			p.MaxReadBytes = a.Policy.MaxReadBytes
		}
		if a.Policy.MaxConcurrentPerRun > 0 {
			p.MaxConcurrentPerRun = a.Policy.MaxConcurrentPerRun
		}
		if a.Policy.MaxConcurrentGlobal > 0 {
			p.MaxConcurrentGlobal = a.Policy.MaxConcurrentGlobal
		}
		if a.Policy.Context != "" {
			p.ContextPolicy = a.Policy.Context
		}
		if a.Policy.AuditLevel != "" {
			p.AuditLevel = a.Policy.AuditLevel
		}
		p.RequireStreaming = a.Policy.RequireStreaming
		p.AllowedTenants = a.Policy.AllowedTenants
		spec := registry.RemoteAgentSpec{
			Key: a.Key, DisplayName: a.DisplayName, Description: a.Description, Protocol: a.Protocol,
			AgentCardURL: a.AgentCardURL, EndpointURL: a.EndpointURL, AuthRef: a.AuthRef, Tenant: a.Tenant,
			Shortcut: a.Shortcut, FetchCard: a.FetchCard, InterfaceOrigins: a.InterfaceOrigins, Policy: p, Provenance: registry.ProvenanceHost,
		}
		if au := a.Auth; au != nil {
			spec.Auth = &credentials.Auth{Scheme: credentials.Scheme(au.Scheme), TokenRef: au.TokenRef, Header: au.Header,
				ClientID: au.ClientID, ClientSecretRef: au.ClientSecretRef, TokenURL: au.TokenURL, Scopes: au.Scopes}
		}
		specs = append(specs, spec)
	}
	return specs
}
