package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
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
}

// adapterFactories builds each adapter the binary offers.
var adapterFactories = map[string]func(adapterSpec) (agentadaptor.Adapter, error){
	"claude": func(s adapterSpec) (agentadaptor.Adapter, error) {
		return claude.New(claude.Config{Binary: s.Binary})
	},
	"codex": func(s adapterSpec) (agentadaptor.Adapter, error) {
		return codex.New(codex.Config{Binary: s.Binary})
	},
	"cursor": func(s adapterSpec) (agentadaptor.Adapter, error) {
		return cursor.New(cursor.Config{Binary: s.Binary})
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

func newAdapter(s adapterSpec) (agentadaptor.Adapter, error) {
	f, ok := adapterFactories[s.Name]
	if !ok {
		return nil, fmt.Errorf("unknown adapter %q (want one of %v)", s.Name, adapterNames())
	}
	return f(s)
}

// parentAdapter builds a host's parent adapter from its config.
func parentAdapter(p hostconfig.Parent) (agentadaptor.Adapter, error) {
	return newAdapter(adapterSpec{Name: p.Adapter, Scenario: p.Scenario, Binary: p.Binary})
}
