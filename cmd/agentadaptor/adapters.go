package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/pkg/adapters/acp"
	"github.com/seed0634/agentadaptor/pkg/adapters/claude"
	"github.com/seed0634/agentadaptor/pkg/adapters/codex"
	"github.com/seed0634/agentadaptor/pkg/adapters/cursor"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
)

// adapterSpec is what the command line or host config says about an adapter.
type adapterSpec struct {
	Name     string
	Scenario string
	Binary   string
	// BinarySetting names where the user sets Binary, for the hint when the
	// CLI is missing ("--binary" on the command line, "parent.binary" in a
	// host config).
	BinarySetting string
	// PermissionMode and AllowedTools configure a Claude parent.
	PermissionMode string
	AllowedTools   []string
	// Args and Permissions configure an ACP agent.
	Args        []string
	Permissions acp.Permissions
}

// adapterFactories builds each adapter the binary offers.
var adapterFactories = map[string]func(adapterSpec) (agentadaptor.Adapter, error){
	"claude": func(s adapterSpec) (agentadaptor.Adapter, error) {
		return claude.New(claude.Config{Binary: s.Binary, PermissionMode: s.PermissionMode, AllowedTools: s.AllowedTools})
	},
	"codex": func(s adapterSpec) (agentadaptor.Adapter, error) {
		return codex.New(codex.Config{Binary: s.Binary})
	},
	"cursor": func(s adapterSpec) (agentadaptor.Adapter, error) {
		return cursor.New(cursor.Config{Binary: s.Binary})
	},
	"acp": func(s adapterSpec) (agentadaptor.Adapter, error) {
		if s.Binary == "" {
			return nil, fmt.Errorf("the acp adapter needs the agent's executable: --binary PATH (parent.binary in a host config), e.g. gemini with --arg=--experimental-acp")
		}
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("locating this binary for the MCP stdio bridge: %w", err)
		}
		return acp.New(acp.Config{Binary: s.Binary, Args: s.Args, Permissions: s.Permissions,
			StdioBridge: &acp.StdioBridge{Command: exe, Args: []string{bridgeCommand}}})
	},
	"scripted": func(s adapterSpec) (agentadaptor.Adapter, error) {
		return scripted.New(scripted.Config{Scenario: s.Scenario, StateDir: filepath.Join(os.TempDir(), "agentadaptor-scripted")})
	},
}

func adapterNames() []string {
	names := make([]string, 0, len(adapterFactories))
	for n := range adapterFactories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// installHints say how to get each CLI when it is missing.
var installHints = map[string]string{
	"claude": "install Claude Code (npm install -g @anthropic-ai/claude-code)",
	"codex":  "install Codex (npm install -g @openai/codex)",
	"cursor": "install the Cursor CLI (https://cursor.com/cli)",
	"acp":    "install the ACP agent (e.g. npm install -g @google/gemini-cli)",
}

// newAdapter builds the named adapter and checks, for the real CLIs, that
// its executable exists: a missing CLI is a configuration error at startup,
// not a failure of the first run.
func newAdapter(s adapterSpec) (agentadaptor.Adapter, error) {
	f, ok := adapterFactories[s.Name]
	if !ok {
		return nil, fmt.Errorf("unknown adapter %q (want one of %v)", s.Name, adapterNames())
	}
	a, err := f(s)
	if err != nil {
		return nil, err
	}
	if b, ok := a.(interface{ Binary() (string, error) }); ok {
		if _, err := b.Binary(); err != nil {
			setting := s.BinarySetting
			if setting == "" {
				setting = "--binary"
			}
			return nil, fmt.Errorf("the %s CLI was not found: %v; %s or point %s at it", s.Name, err, installHints[s.Name], setting)
		}
	}
	return a, nil
}

// parentAdapter builds a host's parent adapter from its config.
func parentAdapter(p hostconfig.Parent) (agentadaptor.Adapter, error) {
	return newAdapter(adapterSpec{Name: p.Adapter, Scenario: p.Scenario, Binary: p.Binary, BinarySetting: "parent.binary in the config",
		PermissionMode: p.PermissionMode, AllowedTools: p.AllowedTools,
		Args: p.Args, Permissions: acp.Permissions{Allow: p.Permissions.Allow, Deny: p.Permissions.Deny}})
}
