package cursor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// Name is the adapter's registry name.
const Name = "cursor"

// Per-run adapter options (agentadaptor.WithAdapterOption) this adapter reads.
const (
	OptionForce = "force" // "false" drops --force for one run
)

// Config configures the Cursor CLI adapter. The zero value runs
// "cursor-agent" (or "agent" when only that is on PATH) with the user's own
// login and configuration.
type Config struct {
	// Binary is the Cursor CLI: a path or a name on PATH. Default
	// "cursor-agent", falling back to "agent".
	Binary string
	// Model is the default --model when the run sets none.
	Model string
	// NoForce drops --force (by default tool calls run without prompting,
	// as a headless run cannot answer prompts).
	NoForce bool
	// NoApproveMCPs drops --approve-mcps, which the adapter passes when the
	// run has MCP servers (a headless run cannot approve them).
	NoApproveMCPs bool
	// ExtraArgs are appended before the prompt (never secrets).
	ExtraArgs []string
}

// Adapter runs the Cursor CLI (`cursor-agent -p --output-format stream-json`).
type Adapter struct{ cfg Config }

// New returns a Cursor adapter.
func New(cfg Config) (*Adapter, error) { return &Adapter{cfg: cfg}, nil }

// Name implements agentadaptor.Adapter.
func (a *Adapter) Name() string { return Name }

// Binary returns the Cursor CLI executable the adapter runs (Config.Binary,
// or cursor-agent / agent on PATH), or a *agentadaptor.ConfigError saying
// why it cannot be found: hosts call it at startup to fail fast.
func (a *Adapter) Binary() (string, error) { return resolveBinary(a.cfg.Binary) }

// Prepare implements agentadaptor.Adapter. The run's MCP servers are merged
// into <WorkDir>/.cursor/mcp.json (the user's file is backed up and restored
// by the Invocation's Cleanup; a crashed run's leftovers are restored first).
func (a *Adapter) Prepare(_ context.Context, req *agentadaptor.AdapterRequest) (*agentadaptor.Invocation, error) {
	bin, err := resolveBinary(a.cfg.Binary)
	if err != nil {
		return nil, err
	}
	args := []string{"-p", "--output-format", "stream-json"}
	if req.Streaming {
		args = append(args, "--stream-partial-output")
	}
	model := req.Model
	if model == "" {
		model = a.cfg.Model
	}
	if model != "" {
		args = append(args, "--model", model)
	}
	if req.ResumeSessionID != "" {
		args = append(args, "--resume", req.ResumeSessionID)
	}
	force := !a.cfg.NoForce
	if v, ok := req.Options[OptionForce]; ok {
		force = v != "false"
	}
	if force {
		args = append(args, "--force")
	}
	var cleanup func() error
	if len(req.MCPServers) > 0 {
		if !a.cfg.NoApproveMCPs {
			args = append(args, "--approve-mcps")
		}
		ws := newWorkspace(req.WorkDir, req.RunID)
		if err := ws.install(BuildMCPServers(req.MCPServers)); err != nil {
			return nil, err
		}
		cleanup = ws.restore
	} else if err := Recover(req.WorkDir); err != nil {
		return nil, err
	}
	args = append(args, a.cfg.ExtraArgs...)
	if strings.HasPrefix(req.Prompt, "-") {
		args = append(args, "--")
	}
	args = append(args, req.Prompt)
	return &agentadaptor.Invocation{Path: bin, Args: args, Parser: NewParser(req.Streaming), Cleanup: cleanup}, nil
}

// BuildMCPServers converts the run's MCP set into Cursor's mcp.json server
// entries. ${VAR} references become Cursor's ${env:VAR} interpolation, so
// secrets stay in the environment.
func BuildMCPServers(specs []agentadaptor.MCPServerSpec) map[string]any {
	out := map[string]any{}
	for _, s := range specs {
		if s.EffectiveTransport() == agentadaptor.MCPTransportHTTP {
			h := map[string]any{}
			for k, v := range s.Headers {
				h[k] = envRefs(v)
			}
			if s.BearerTokenEnvVar != "" {
				h["Authorization"] = envRefs(s.AuthorizationHeader())
			}
			entry := map[string]any{"url": envRefs(s.URL)}
			if len(h) > 0 {
				entry["headers"] = h
			}
			out[s.Key] = entry
			continue
		}
		entry := map[string]any{"command": s.Command}
		if len(s.Args) > 0 {
			entry["args"] = s.Args
		}
		if len(s.Env) > 0 {
			env := map[string]any{}
			for k, v := range s.Env {
				env[k] = envRefs(v)
			}
			entry["env"] = env
		}
		out[s.Key] = entry
	}
	return out
}

// envRefs rewrites ${VAR} as ${env:VAR}.
func envRefs(s string) string {
	vars := map[string]string{}
	for _, n := range agentadaptor.VarRefs(s) {
		vars[n] = "${env:" + n + "}"
	}
	return agentadaptor.ExpandVars(s, vars)
}

func resolveBinary(bin string) (string, error) {
	candidates := []string{bin}
	if bin == "" {
		candidates = []string{"cursor-agent", "agent"}
	}
	for _, c := range candidates {
		if strings.ContainsRune(c, os.PathSeparator) {
			if _, err := os.Stat(c); err == nil {
				return c, nil
			}
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", &agentadaptor.ConfigError{Field: "cursor.Config.Binary", Reason: fmt.Sprintf("none of %q found", candidates)}
}
