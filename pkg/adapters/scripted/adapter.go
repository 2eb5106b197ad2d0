package scripted

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/internal/clibase"
	"github.com/seed0634/agentadaptor/pkg/adapters/internal/mcpjson"
)

// Name is the adapter's registry name.
const Name = "scripted"

// Per-run adapter options (agentadaptor.WithAdapterOption) the scripted
// adapter reads.
const (
	// OptionScenario overrides the scenario file for one run.
	OptionScenario = "scenario"
)

// Config configures the scripted adapter.
type Config struct {
	// Executable is the binary that runs the agent when started with
	// AgentEnv=1 (see MaybeRunAgent). Default: the current executable.
	Executable string
	// Scenario is the path of the default scenario file.
	Scenario string
	// ScenarioData is an inline scenario (YAML or JSON), used when Scenario
	// is empty.
	ScenarioData []byte
	// StateDir keeps session state between turns (default
	// $TMPDIR/agentadaptor-scripted). Sessions are what `ask` resumes.
	StateDir string
}

// Adapter runs the scripted agent as a real child process.
type Adapter struct {
	cfg  Config
	name string
}

// New returns a scripted adapter. It validates the default scenario now, so a
// bad file is reported (with file, step index and reason) before any run.
func New(cfg Config) (*Adapter, error) {
	if cfg.Scenario != "" {
		if _, err := LoadScenario(cfg.Scenario); err != nil {
			return nil, err
		}
	} else if len(cfg.ScenarioData) > 0 {
		if _, err := ParseScenario("", cfg.ScenarioData); err != nil {
			return nil, err
		}
	}
	return &Adapter{cfg: cfg, name: Name}, nil
}

// Named returns a copy of a registered under another name, so one SDK can
// hold several scripted agents (for example a parent and a remote).
func (a *Adapter) Named(name string) *Adapter {
	c := *a
	c.name = name
	return &c
}

// Name implements agentadaptor.Adapter.
func (a *Adapter) Name() string { return a.name }

// Prepare implements agentadaptor.Adapter: it validates the run's scenario,
// writes it and the MCP configuration into the run's temp dir and builds the
// agent's command line. No secret is written: MCP headers keep ${VAR}.
func (a *Adapter) Prepare(_ context.Context, req *agentadaptor.AdapterRequest) (*agentadaptor.Invocation, error) {
	exe := a.cfg.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, &agentadaptor.ConfigError{Field: "scripted.Config.Executable", Reason: "not set and the current executable is unknown", Err: err}
		}
	}
	scenarioPath := req.Options[OptionScenario]
	if scenarioPath == "" {
		scenarioPath = a.cfg.Scenario
	}
	if scenarioPath != "" {
		if _, err := LoadScenario(scenarioPath); err != nil {
			return nil, &agentadaptor.ConfigError{Field: "scripted scenario", Reason: "invalid", Err: err}
		}
	} else {
		if len(a.cfg.ScenarioData) == 0 {
			return nil, &agentadaptor.ConfigError{Field: "scripted.Config.Scenario", Reason: "no scenario: set Config.Scenario, Config.ScenarioData or the run option \"scenario\""}
		}
		if _, err := ParseScenario("", a.cfg.ScenarioData); err != nil {
			return nil, &agentadaptor.ConfigError{Field: "scripted scenario", Reason: "invalid", Err: err}
		}
		scenarioPath = filepath.Join(req.TempDir, "scenario.yaml")
		if err := os.WriteFile(scenarioPath, a.cfg.ScenarioData, 0o600); err != nil {
			return nil, err
		}
	}
	mcpPath := filepath.Join(req.TempDir, "mcp.json")
	data, err := json.MarshalIndent(mcpjson.Build(req.MCPServers), "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(mcpPath, data, 0o600); err != nil {
		return nil, err
	}
	args := []string{"--scenario", scenarioPath, "--mcp-config", mcpPath, "--prompt", req.Prompt}
	if req.Streaming {
		args = append(args, "--stream")
	}
	if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	if a.cfg.StateDir != "" {
		args = append(args, "--state-dir", a.cfg.StateDir)
	}
	switch {
	case req.ResumeSessionID != "":
		args = append(args, "--resume", req.ResumeSessionID)
	case req.SessionKey != "":
		args = append(args, "--session-id", clibase.NewUUID())
	}
	// On SIGINT the agent cancels its in-flight tools/call; deliver
	// notifications/cancelled before returning (as real CLIs do) rather than
	// in the background of a process that is about to exit.
	env := map[string]string{AgentEnv: "1", "MCPGODEBUG": "blockingcancelnotify=1"}
	if os.Getenv("GORACE") == "" {
		// A race-enabled host binary (tests) would otherwise make every
		// agent process sleep a second at exit.
		env["GORACE"] = "atexit_sleep_ms=0"
	}
	return &agentadaptor.Invocation{
		Path:   exe,
		Args:   args,
		Env:    env,
		Parser: newParser(req.MCPServers),
	}, nil
}
