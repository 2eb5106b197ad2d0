package acp

import (
	"context"
	"fmt"
	"path"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/internal/clibase"
)

// Name is the adapter's default registry name.
const Name = "acp"

// DefaultSetupTimeout bounds the start of a conversation (initialize,
// authenticate, session/new or session/load) when Config.SetupTimeout is 0.
const DefaultSetupTimeout = 2 * time.Minute

// Config configures the ACP adapter.
type Config struct {
	// Name is the registry name (default "acp").
	Name string
	// Binary is the agent executable: a path, or a name looked up on PATH.
	// Required: ACP is spoken by many agents.
	Binary string
	// Args are the agent's arguments, e.g. ["--experimental-acp"] for
	// Gemini CLI. Argv is world-readable: never put a secret here.
	Args []string
	// Permissions answer the agent's session/request_permission
	// (docs/design.md#acp-permissions).
	Permissions Permissions
	// StdioBridge reaches an HTTP MCP server of the run over stdio, for
	// agents whose mcpCapabilities do not include http. Without it such a
	// run fails with invalid_config.
	StdioBridge *StdioBridge
	// AuthMethod, when set, is sent with authenticate after initialize
	// (e.g. "gemini-api-key"); by default the agent's own configuration
	// decides.
	AuthMethod string
	// SetupTimeout bounds initialize, authenticate and the session's
	// creation or loading (default DefaultSetupTimeout). The prompt itself
	// is bounded by the run's timeout.
	SetupTimeout time.Duration
}

// Permissions is the host's policy for the agent's permission requests.
// Tools of the run's own MCP servers (the host's tools, such as the
// delegation tool) are always allowed. Every other request is matched
// against Deny, then Allow; a request neither matches is denied. Never a
// hang: every request is answered at once.
//
// A rule is a path.Match pattern matched against the tool's name as the
// adapter reports it (e.g. "mcp__github__create_issue", or the agent's
// title such as "Shell"), or "kind:<kind>" matched against the ACP tool
// kind (read, edit, delete, move, search, execute, think, fetch, other).
type Permissions struct {
	Allow []string
	Deny  []string
}

// StdioBridge is a command that serves an HTTP MCP server over stdio. The
// adapter runs Command with Args followed by "--url", the server's URL,
// and, when the server takes a bearer token, "--bearer-env", the name of
// the variable it sets to the token in the bridge's environment (never in
// argv). cmd/agentadaptor's hidden "mcp-stdio-bridge" command is one.
type StdioBridge struct {
	Command string
	Args    []string
}

// Adapter drives any Agent Client Protocol agent over its stdio.
type Adapter struct{ cfg Config }

// New returns an ACP adapter, or a *agentadaptor.ConfigError.
func New(cfg Config) (*Adapter, error) {
	if cfg.Binary == "" {
		return nil, &agentadaptor.ConfigError{Field: "acp.Config.Binary", Reason: "is required: name the ACP agent to run (e.g. gemini with --experimental-acp)"}
	}
	if cfg.SetupTimeout < 0 {
		return nil, &agentadaptor.ConfigError{Field: "acp.Config.SetupTimeout", Reason: "must not be negative"}
	}
	if cfg.Name == "" {
		cfg.Name = Name
	}
	for i, r := range append(append([]string(nil), cfg.Permissions.Allow...), cfg.Permissions.Deny...) {
		if _, err := path.Match(r, ""); err != nil || r == "" {
			return nil, &agentadaptor.ConfigError{Field: fmt.Sprintf("acp.Config.Permissions[%d]", i), Reason: fmt.Sprintf("%q is not a valid pattern", r)}
		}
	}
	if cfg.StdioBridge != nil && cfg.StdioBridge.Command == "" {
		return nil, &agentadaptor.ConfigError{Field: "acp.Config.StdioBridge.Command", Reason: "is required"}
	}
	return &Adapter{cfg: cfg}, nil
}

// Name implements agentadaptor.Adapter.
func (a *Adapter) Name() string { return a.cfg.Name }

// Binary returns the agent executable, or a *agentadaptor.ConfigError
// saying why it cannot be found: hosts call it at startup.
func (a *Adapter) Binary() (string, error) {
	return clibase.ResolveBinary(a.cfg.Binary, "", "acp.Config.Binary")
}

// TempDirOnDemand implements agentadaptor.TempDirOnDemand: the adapter
// writes no file.
func (a *Adapter) TempDirOnDemand() {}

// Prepare implements agentadaptor.Adapter. The command line is the binary
// and Config.Args only: the prompt, the MCP servers and their secrets
// travel over the child's stdin (session/new, session/prompt), never on
// argv or into a file.
func (a *Adapter) Prepare(_ context.Context, req *agentadaptor.AdapterRequest) (*agentadaptor.Invocation, error) {
	bin, err := a.Binary()
	if err != nil {
		return nil, err
	}
	servers, err := planMCP(req.MCPServers, req.Env)
	if err != nil {
		return nil, err
	}
	setup := a.cfg.SetupTimeout
	if setup == 0 {
		setup = DefaultSetupTimeout
	}
	c := &conversation{
		cfg: a.cfg, prompt: req.Prompt, cwd: req.WorkDir, resume: req.ResumeSessionID,
		servers: servers, setupTimeout: setup,
		interrupt: make(chan struct{}),
	}
	return &agentadaptor.Invocation{Path: bin, Args: append([]string(nil), a.cfg.Args...), Conversation: c}, nil
}
