package agentadaptor

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sort"
)

// SDK runs agent CLIs through registered adapters. It is safe for concurrent
// use; create one per host and share it.
type SDK struct {
	adapters       map[string]Adapter
	defaultAdapter string
	defaultMCP     []MCPServerSpec
	defaults       []RunOption
	sessions       SessionStore
	logger         *slog.Logger
	cfg            sdkConfig
}

// New returns an SDK with the given adapters and defaults. It fails with a
// *ConfigError on duplicate adapter names, an unknown default adapter, an
// invalid default MCP server, a default WithNice out of range or a default
// WithEnvAllowList or WithEnvDeny entry that is not a variable name.
func New(opts ...SDKOption) (*SDK, error) {
	cfg := sdkConfig{releaseTimeout: DefaultReleaseTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	s := &SDK{adapters: map[string]Adapter{}, sessions: cfg.sessions, logger: cfg.logger, cfg: cfg}
	if s.sessions == nil {
		s.sessions = NewMemorySessionStore()
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	for _, a := range cfg.adapters {
		if a == nil || a.Name() == "" {
			return nil, &ConfigError{Field: "WithAdapters", Reason: "an adapter is nil or has no name"}
		}
		if _, dup := s.adapters[a.Name()]; dup {
			return nil, &ConfigError{Field: "WithAdapters", Reason: fmt.Sprintf("adapter %q registered twice", a.Name())}
		}
		s.adapters[a.Name()] = a
		if s.defaultAdapter == "" {
			s.defaultAdapter = a.Name()
		}
	}
	if cfg.defaultAdapter != "" {
		if _, ok := s.adapters[cfg.defaultAdapter]; !ok {
			return nil, &ConfigError{Field: "WithDefaultAdapter", Reason: fmt.Sprintf("%q is not a registered adapter (have %v)", cfg.defaultAdapter, s.AdapterNames())}
		}
		s.defaultAdapter = cfg.defaultAdapter
	}
	for _, m := range cfg.defaultMCP {
		if err := m.Validate(); err != nil {
			return nil, err
		}
	}
	// Run defaults that can be checked without a run fail here, not at
	// every Start.
	rc := defaultRunConfig()
	for _, o := range cfg.defaults {
		o(&rc)
	}
	if err := checkNice(rc.nice); err != nil {
		return nil, err
	}
	if err := checkEnvPatterns("WithEnvAllowList", rc.envAllow); err != nil {
		return nil, err
	}
	if err := checkEnvPatterns("WithEnvDeny", rc.envDeny); err != nil {
		return nil, err
	}
	s.defaultMCP = cfg.defaultMCP
	s.defaults = cfg.defaults
	return s, nil
}

// AdapterNames lists the registered adapters, sorted.
func (s *SDK) AdapterNames() []string { return sortedKeys(s.adapters) }

// DefaultAdapter returns the name of the adapter used when a run selects none.
func (s *SDK) DefaultAdapter() string { return s.defaultAdapter }

// Run starts a run and waits for it to end. It returns an error only when the
// run could not start (a *ConfigError, ErrUnknownAdapter or a *StartError) or
// ctx ended first; a run that started and then failed or was cancelled is
// reported by the result's Status and Failure, and by RunResult.Err. Run keeps
// no stream: use Start to read payloads.
func (s *SDK) Run(ctx context.Context, prompt string, opts ...RunOption) (*RunResult, error) {
	h, err := s.Start(ctx, prompt, append(opts, func(c *runConfig) { c.discard = true })...)
	if err != nil {
		return nil, err
	}
	return h.Wait(ctx)
}

func newID(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return prefix + hex.EncodeToString(b)
}

func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func sortedEnv(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+m[k])
	}
	return out
}
