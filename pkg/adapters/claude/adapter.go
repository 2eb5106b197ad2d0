package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/internal/clibase"
	"github.com/seed0634/agentadaptor/pkg/adapters/internal/mcpjson"
)

// Name is the adapter's registry name.
const Name = "claude"

// Per-run adapter options (agentadaptor.WithAdapterOption) this adapter
// reads. They override the matching Config fields for one run.
const (
	OptionAppendSystemPrompt = "append_system_prompt" // --append-system-prompt
	OptionMaxTurns           = "max_turns"            // --max-turns (positive integer)
	OptionPermissionMode     = "permission_mode"      // --permission-mode
	OptionAllowedTools       = "allowed_tools"        // extra --allowedTools entries, comma-separated
)

// DefaultToolTimeout is the MCP_TOOL_TIMEOUT floor used when a run has an MCP
// server without a ToolTimeout.
const DefaultToolTimeout = 10 * time.Minute

// MCPConfigFile is the name of the per-run MCP configuration file written in
// the run's TempDir.
const MCPConfigFile = "claude-mcp.json"

// Config configures the Claude Code adapter. The zero value is usable: it runs
// "claude" from PATH with the user's own configuration and credentials.
type Config struct {
	// Binary is the claude executable: a path, or a name looked up on PATH
	// (default "claude").
	Binary string
	// Model is the default --model when the run sets none.
	Model string
	// AppendSystemPrompt is passed as --append-system-prompt.
	AppendSystemPrompt string
	// MaxTurns, when positive, is passed as --max-turns.
	MaxTurns int
	// PermissionMode, when set, is passed as --permission-mode.
	PermissionMode string
	// AllowedTools are granted with --allowedTools in addition to the
	// mcp__<key> grant of every MCP server of the run.
	AllowedTools []string
	// InheritUserMCP keeps the user's own MCP servers (from their Claude
	// configuration) next to the run's. By default --strict-mcp-config makes
	// the run see exactly its own MCP set.
	InheritUserMCP bool
	// Isolate runs claude with a throwaway profile: HOME and
	// CLAUDE_CONFIG_DIR point into the run's TempDir (or IsolateDir), so the
	// user's settings, sessions and credentials files are not read. API keys
	// and base URLs in the environment still apply.
	Isolate bool
	// IsolateDir, with Isolate, holds the throwaway profile instead of the
	// run's TempDir, so sessions survive the run and can be resumed.
	IsolateDir string
	// DefaultToolTimeout is the MCP_TOOL_TIMEOUT floor when some server of
	// the run has no ToolTimeout (default DefaultToolTimeout).
	DefaultToolTimeout time.Duration
	// ExtraArgs are appended to the command line before the prompt. Never
	// put secrets here: argv is world-readable.
	ExtraArgs []string
}

// Adapter runs Claude Code (`claude -p --output-format stream-json`).
type Adapter struct{ cfg Config }

// New returns a Claude Code adapter. It fails with a *agentadaptor.ConfigError
// for invalid settings; the binary itself is resolved at each run.
func New(cfg Config) (*Adapter, error) {
	if cfg.MaxTurns < 0 {
		return nil, &agentadaptor.ConfigError{Field: "claude.Config.MaxTurns", Reason: "must not be negative"}
	}
	if cfg.DefaultToolTimeout < 0 {
		return nil, &agentadaptor.ConfigError{Field: "claude.Config.DefaultToolTimeout", Reason: "must not be negative"}
	}
	if cfg.IsolateDir != "" && !cfg.Isolate {
		return nil, &agentadaptor.ConfigError{Field: "claude.Config.IsolateDir", Reason: "set only together with Isolate"}
	}
	return &Adapter{cfg: cfg}, nil
}

// Name implements agentadaptor.Adapter.
func (a *Adapter) Name() string { return Name }

// Binary returns the claude executable the adapter runs (Config.Binary, or
// "claude" on PATH), or a *agentadaptor.ConfigError saying why it cannot
// be found: hosts call it at startup to fail fast instead of on the first run.
func (a *Adapter) Binary() (string, error) {
	return clibase.ResolveBinary(a.cfg.Binary, "claude", "claude.Config.Binary")
}

// Prepare implements agentadaptor.Adapter: it writes the run's MCP
// configuration to TempDir/claude-mcp.json (secrets stay ${VAR}), builds the
// command line and the per-run environment, and returns the parser.
func (a *Adapter) Prepare(_ context.Context, req *agentadaptor.AdapterRequest) (*agentadaptor.Invocation, error) {
	bin, err := clibase.ResolveBinary(a.cfg.Binary, "claude", "claude.Config.Binary")
	if err != nil {
		return nil, err
	}
	opt := func(k, def string) string {
		if v, ok := req.Options[k]; ok {
			return v
		}
		return def
	}
	maxTurns := a.cfg.MaxTurns
	if v, ok := req.Options[OptionMaxTurns]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, &agentadaptor.ConfigError{Field: "claude option " + OptionMaxTurns, Reason: fmt.Sprintf("%q is not a non-negative integer", v)}
		}
		maxTurns = n
	}

	mcpPath := filepath.Join(req.TempDir, MCPConfigFile)
	data, err := json.MarshalIndent(BuildMCPConfig(req.MCPServers), "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(mcpPath, data, 0o600); err != nil {
		return nil, fmt.Errorf("claude: writing the MCP config: %w", err)
	}

	args := []string{"-p", "--output-format", "stream-json", "--verbose"}
	if req.Streaming {
		args = append(args, "--include-partial-messages")
	}
	args = append(args, "--mcp-config="+mcpPath)
	if !a.cfg.InheritUserMCP {
		args = append(args, "--strict-mcp-config")
	}
	var allowed []string
	for _, s := range req.MCPServers {
		allowed = append(allowed, "mcp__"+s.Key)
	}
	allowed = append(allowed, a.cfg.AllowedTools...)
	if v := opt(OptionAllowedTools, ""); v != "" {
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				allowed = append(allowed, t)
			}
		}
	}
	if len(allowed) > 0 {
		args = append(args, "--allowedTools="+strings.Join(allowed, ","))
	}
	model := req.Model
	if model == "" {
		model = a.cfg.Model
	}
	if model != "" {
		args = append(args, "--model="+model)
	}
	if v := opt(OptionAppendSystemPrompt, a.cfg.AppendSystemPrompt); v != "" {
		args = append(args, "--append-system-prompt="+v)
	}
	if maxTurns > 0 {
		args = append(args, "--max-turns="+strconv.Itoa(maxTurns))
	}
	if v := opt(OptionPermissionMode, a.cfg.PermissionMode); v != "" {
		args = append(args, "--permission-mode="+v)
	}
	switch {
	case req.ResumeSessionID != "":
		args = append(args, "--resume="+req.ResumeSessionID)
	case req.SessionKey != "":
		args = append(args, "--session-id="+clibase.NewUUID())
	}
	args = append(args, a.cfg.ExtraArgs...)
	// "--" ends the options: a prompt starting with '-' stays the prompt.
	args = append(args, "--", req.Prompt)

	env := map[string]string{}
	if len(req.MCPServers) > 0 {
		env["MCP_TOOL_TIMEOUT"] = strconv.FormatInt(a.toolTimeout(req.MCPServers).Milliseconds(), 10)
	}
	if a.cfg.Isolate {
		root, cfgDir, err := clibase.IsolatedProfile(a.cfg.IsolateDir, req.TempDir, ".claude")
		if err != nil {
			return nil, fmt.Errorf("claude: creating the isolated profile: %w", err)
		}
		env["HOME"] = root
		env["CLAUDE_CONFIG_DIR"] = cfgDir
	}
	required := map[string]bool{}
	for _, s := range req.MCPServers {
		if s.Required {
			required[s.Key] = true
		}
	}
	return &agentadaptor.Invocation{Path: bin, Args: args, Env: env, Parser: NewParser(required)}, nil
}

// toolTimeout is the MCP_TOOL_TIMEOUT for a run: above the longest
// ToolTimeout, at least the default when some server has none, and never
// below a larger MCP_TOOL_TIMEOUT the user already set.
func (a *Adapter) toolTimeout(specs []agentadaptor.MCPServerSpec) time.Duration {
	def := a.cfg.DefaultToolTimeout
	if def == 0 {
		def = DefaultToolTimeout
	}
	var longest time.Duration
	missing := false
	for _, s := range specs {
		if s.ToolTimeout == 0 {
			missing = true
		}
		longest = max(longest, s.ToolTimeout)
	}
	d := time.Duration(0)
	if longest > 0 {
		d = clibase.WithHeadroom(longest) // headroom above the server's own bound
	}
	if missing {
		d = max(d, def)
	}
	if ms, err := strconv.ParseInt(os.Getenv("MCP_TOOL_TIMEOUT"), 10, 64); err == nil && time.Duration(ms)*time.Millisecond > d {
		d = time.Duration(ms) * time.Millisecond
	}
	return d
}

// MCPConfig is Claude Code's --mcp-config document.
type MCPConfig = mcpjson.Config

// MCPServer is one server of an MCPConfig. Header and env values may hold
// ${VAR} references, which Claude Code expands from its environment.
type MCPServer = mcpjson.Server

// BuildMCPConfig converts the run's MCP set into Claude's shape. A
// BearerTokenEnvVar becomes an "Authorization: Bearer ${VAR}" header.
func BuildMCPConfig(specs []agentadaptor.MCPServerSpec) MCPConfig { return mcpjson.Build(specs) }
