package scripted

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

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
	// checked remembers the scenario files that validated, by identity
	// (path, size, modification time), so that a run re-reads a file only
	// when it changed.
	checked *scenarioCache
}

type scenarioCache struct {
	mu    sync.Mutex
	files map[string]fileStamp
}

type fileStamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func stampOf(fi os.FileInfo) fileStamp {
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st
}

// validate loads the scenario at path unless the same file validated
// before.
func (c *scenarioCache) validate(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		_, err = LoadScenario(path)
		return err
	}
	st := stampOf(fi)
	c.mu.Lock()
	known, ok := c.files[path]
	c.mu.Unlock()
	if ok && known == st {
		return nil
	}
	if _, err := LoadScenario(path); err != nil {
		return err
	}
	c.mu.Lock()
	if len(c.files) >= 64 {
		clear(c.files)
	}
	c.files[path] = st
	c.mu.Unlock()
	return nil
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
	return &Adapter{cfg: cfg, name: Name, checked: &scenarioCache{files: map[string]fileStamp{}}}, nil
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

// TempDirOnDemand implements agentadaptor.TempDirOnDemand: a run needs a
// temp dir only for an inline scenario.
func (a *Adapter) TempDirOnDemand() {}

// Prepare implements agentadaptor.Adapter: it validates the run's scenario
// (a file only when it changed since it last validated), writes an inline
// scenario into the run's temp dir and builds the agent's command line,
// which carries the MCP configuration as JSON, as Claude Code's
// --mcp-config accepts it. No secret is written: MCP headers keep ${VAR}.
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
		if err := a.checked.validate(scenarioPath); err != nil {
			return nil, &agentadaptor.ConfigError{Field: "scripted scenario", Reason: "invalid", Err: err}
		}
	} else {
		if len(a.cfg.ScenarioData) == 0 {
			return nil, &agentadaptor.ConfigError{Field: "scripted.Config.Scenario", Reason: "no scenario: set Config.Scenario, Config.ScenarioData or the run option \"scenario\""}
		}
		if _, err := ParseScenario("", a.cfg.ScenarioData); err != nil {
			return nil, &agentadaptor.ConfigError{Field: "scripted scenario", Reason: "invalid", Err: err}
		}
		dir, err := req.MakeTempDir()
		if err != nil {
			return nil, err
		}
		scenarioPath = filepath.Join(dir, "scenario.yaml")
		if err := os.WriteFile(scenarioPath, a.cfg.ScenarioData, 0o600); err != nil {
			return nil, err
		}
	}
	data, err := json.Marshal(mcpjson.Build(req.MCPServers))
	if err != nil {
		return nil, err
	}
	args := []string{"--scenario", scenarioPath, "--mcp-config", string(data), "--prompt", req.Prompt}
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
