package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/internal/clibase"
)

// Name is the adapter's registry name.
const Name = "codex"

// Per-run adapter options (agentadaptor.WithAdapterOption) this adapter
// reads. They override the matching Config fields for one run.
const (
	OptionProfile  = "profile"  // --profile
	OptionSandbox  = "sandbox"  // --sandbox (new sessions only)
	OptionProvider = "provider" // -c model_provider=...
)

// DefaultToolTimeout is the tool_timeout_sec given to MCP servers without a
// ToolTimeout.
const DefaultToolTimeout = 10 * time.Minute

// Config configures the Codex adapter. The zero value is usable: it runs
// "codex" from PATH with the user's CODEX_HOME and config.toml.
type Config struct {
	// Binary is the codex executable: a path, or a name looked up on PATH
	// (default "codex").
	Binary string
	// Model is the default -m when the run sets none.
	Model string
	// Profile is passed as --profile (a $CODEX_HOME/<name>.config.toml layer).
	Profile string
	// Provider selects the model provider (-c model_provider="...").
	Provider string
	// Sandbox is passed as --sandbox for new sessions (read-only,
	// workspace-write, danger-full-access).
	Sandbox string
	// ExtraConfig are further `-c key=value` overrides (TOML values), e.g.
	// a self-hosted provider: `model_providers.local={name="local",
	// base_url="http://127.0.0.1:8000/v1", wire_api="responses",
	// env_key="LOCAL_KEY"}`. Argv is world-readable: never put a secret
	// here; name environment variables instead (env_key,
	// bearer_token_env_var).
	ExtraConfig []string
	// Ephemeral passes --ephemeral: no session files, so runs cannot be
	// resumed.
	Ephemeral bool
	// Isolate runs codex with a throwaway CODEX_HOME (and HOME) under the
	// run's TempDir (or IsolateDir), so the user's config.toml, sessions and
	// credentials are not read. Environment API keys still apply.
	Isolate bool
	// IsolateDir, with Isolate, holds the throwaway profile instead of the
	// run's TempDir, so threads survive the run and can be resumed.
	IsolateDir string
	// DefaultToolTimeout is the tool_timeout_sec of servers without a
	// ToolTimeout (default DefaultToolTimeout).
	DefaultToolTimeout time.Duration
	// ExtraArgs are appended before the prompt (never secrets).
	ExtraArgs []string
}

// Adapter runs Codex (`codex exec --json`).
type Adapter struct{ cfg Config }

// New returns a Codex adapter, or a *agentadaptor.ConfigError.
func New(cfg Config) (*Adapter, error) {
	if cfg.DefaultToolTimeout < 0 {
		return nil, &agentadaptor.ConfigError{Field: "codex.Config.DefaultToolTimeout", Reason: "must not be negative"}
	}
	if cfg.IsolateDir != "" && !cfg.Isolate {
		return nil, &agentadaptor.ConfigError{Field: "codex.Config.IsolateDir", Reason: "set only together with Isolate"}
	}
	for i, c := range cfg.ExtraConfig {
		if k, _, ok := strings.Cut(c, "="); !ok || strings.TrimSpace(k) == "" {
			return nil, &agentadaptor.ConfigError{Field: fmt.Sprintf("codex.Config.ExtraConfig[%d]", i), Reason: fmt.Sprintf("%q is not key=value", c)}
		}
	}
	return &Adapter{cfg: cfg}, nil
}

// Name implements agentadaptor.Adapter.
func (a *Adapter) Name() string { return Name }

// Binary returns the codex executable the adapter runs (Config.Binary, or
// "codex" on PATH), or a *agentadaptor.ConfigError saying why it cannot be
// found: hosts call it at startup to fail fast instead of on the first run.
func (a *Adapter) Binary() (string, error) {
	return clibase.ResolveBinary(a.cfg.Binary, "codex", "codex.Config.Binary")
}

// Prepare implements agentadaptor.Adapter. Codex has no MCP config file
// flag: MCP servers go on the command line as -c mcp_servers.<key>={...}
// inline tables that name environment variables for every secret.
func (a *Adapter) Prepare(_ context.Context, req *agentadaptor.AdapterRequest) (*agentadaptor.Invocation, error) {
	bin, err := clibase.ResolveBinary(a.cfg.Binary, "codex", "codex.Config.Binary")
	if err != nil {
		return nil, err
	}
	opt := func(k, def string) string {
		if v, ok := req.Options[k]; ok {
			return v
		}
		return def
	}
	overrides, err := a.mcpOverrides(req.MCPServers)
	if err != nil {
		return nil, err
	}
	args := []string{"exec"}
	if p := opt(OptionProfile, a.cfg.Profile); p != "" {
		args = append(args, "--profile", p)
	}
	resume := req.ResumeSessionID != ""
	if resume {
		args = append(args, "resume")
	}
	args = append(args, "--json", "--skip-git-repo-check")
	if a.cfg.Ephemeral {
		args = append(args, "--ephemeral")
	}
	model := req.Model
	if model == "" {
		model = a.cfg.Model
	}
	if model != "" {
		args = append(args, "--model", model)
	}
	if s := opt(OptionSandbox, a.cfg.Sandbox); s != "" && !resume {
		args = append(args, "--sandbox", s)
	}
	if p := opt(OptionProvider, a.cfg.Provider); p != "" {
		args = append(args, "-c", "model_provider="+tomlString(p))
	}
	for _, c := range a.cfg.ExtraConfig {
		args = append(args, "-c", c)
	}
	for _, o := range overrides {
		args = append(args, "-c", o)
	}
	args = append(args, a.cfg.ExtraArgs...)
	if resume {
		args = append(args, req.ResumeSessionID)
	}
	// "--" ends the options: a prompt starting with '-' stays the prompt.
	args = append(args, "--", req.Prompt)

	env := map[string]string{}
	if a.cfg.Isolate {
		root, home, err := clibase.IsolatedProfile(a.cfg.IsolateDir, req.TempDir, "codex")
		if err != nil {
			return nil, fmt.Errorf("codex: creating the isolated CODEX_HOME: %w", err)
		}
		env["HOME"] = root
		env["CODEX_HOME"] = home
	}
	return &agentadaptor.Invocation{Path: bin, Args: args, Env: env, Parser: NewParser()}, nil
}

// mcpOverrides renders each server as a `mcp_servers.<key>={...}` override.
func (a *Adapter) mcpOverrides(specs []agentadaptor.MCPServerSpec) ([]string, error) {
	def := a.cfg.DefaultToolTimeout
	if def == 0 {
		def = DefaultToolTimeout
	}
	var out []string
	for _, s := range specs {
		field := func(f string) string { return fmt.Sprintf("MCPServerSpec[%s].%s", s.Key, f) }
		var kv []string
		add := func(k, v string) { kv = append(kv, k+"="+v) }
		if s.EffectiveTransport() == agentadaptor.MCPTransportHTTP {
			add("url", tomlString(s.URL))
			literal, fromEnv := map[string]string{}, map[string]string{}
			bearer := s.BearerTokenEnvVar
			for _, h := range sortedKeys(s.Headers) {
				v := s.Headers[h]
				refs := agentadaptor.VarRefs(v)
				switch {
				case len(refs) == 0:
					literal[h] = v
				case v == "${"+refs[0]+"}" && len(refs) == 1:
					fromEnv[h] = refs[0]
				case strings.EqualFold(h, "Authorization") && len(refs) == 1 && v == "Bearer ${"+refs[0]+"}" && bearer == "":
					bearer = refs[0]
				default:
					return nil, &agentadaptor.ConfigError{Field: field("Headers"), Reason: fmt.Sprintf("codex cannot template the value of %q: use exactly ${VAR} (or \"Bearer ${VAR}\" for Authorization, or BearerTokenEnvVar)", h)}
				}
			}
			if bearer != "" {
				add("bearer_token_env_var", tomlString(bearer))
			}
			if len(literal) > 0 {
				add("http_headers", tomlTable(literal))
			}
			if len(fromEnv) > 0 {
				add("env_http_headers", tomlTable(fromEnv))
			}
		} else {
			command, args := s.Command, s.Args
			literal := map[string]string{}
			var forward []string
			var assigns []string
			for _, k := range sortedKeys(s.Env) {
				v := s.Env[k]
				refs := agentadaptor.VarRefs(v)
				switch {
				case len(refs) == 0:
					literal[k] = v
				case len(refs) == 1 && v == "${"+k+"}":
					forward = append(forward, k) // same name: plain forwarding
				default:
					// Codex forwards variables by name only (env_vars): rename
					// or template them in a /bin/sh wrapper that reads the
					// forwarded variables, so no value reaches argv.
					forward = append(forward, refs...)
					assigns = append(assigns, k+"="+shellTemplate(v)+"; export "+k)
				}
			}
			if len(assigns) > 0 {
				script := strings.Join(assigns, "; ") + `; exec "$0" "$@"`
				args = append([]string{"-c", script, command}, args...)
				command = "/bin/sh"
			}
			add("command", tomlString(command))
			if len(args) > 0 {
				add("args", tomlArray(args))
			}
			if len(literal) > 0 {
				add("env", tomlTable(literal))
			}
			if len(forward) > 0 {
				add("env_vars", tomlArray(dedupe(forward)))
			}
		}
		add("default_tools_approval_mode", `"approve"`)
		timeout := s.ToolTimeout
		if timeout == 0 {
			timeout = def
		} else {
			timeout = clibase.WithHeadroom(timeout)
		}
		add("tool_timeout_sec", strconv.FormatInt(int64(math.Ceil(timeout.Seconds())), 10))
		if s.Required {
			add("required", "true")
		}
		out = append(out, "mcp_servers."+s.Key+"={"+strings.Join(kv, ", ")+"}")
	}
	return out, nil
}

// shellTemplate renders a ${VAR} template as a POSIX shell word: literal
// parts single-quoted, references as "$VAR".
func shellTemplate(v string) string {
	var b strings.Builder
	rest := v
	for rest != "" {
		i := strings.Index(rest, "${")
		j := -1
		if i >= 0 {
			j = strings.Index(rest[i:], "}")
		}
		if i < 0 || j < 0 {
			b.WriteString(shellQuote(rest))
			break
		}
		name := rest[i+2 : i+j]
		if len(agentadaptor.VarRefs(rest[i:i+j+1])) != 1 {
			b.WriteString(shellQuote(rest[:i+2]))
			rest = rest[i+2:]
			continue
		}
		if i > 0 {
			b.WriteString(shellQuote(rest[:i]))
		}
		b.WriteString(`"$` + name + `"`)
		rest = rest[i+j+1:]
	}
	if b.Len() == 0 {
		return "''"
	}
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// tomlString renders s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func tomlArray(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// tomlTable renders an inline table; keys are quoted, so any header or
// variable name is safe.
func tomlTable(m map[string]string) string {
	var kv []string
	for _, k := range sortedKeys(m) {
		kv = append(kv, tomlString(k)+"="+tomlString(m[k]))
	}
	return "{" + strings.Join(kv, ", ") + "}"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// mustJSON is used by the parser for raw payloads.
func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
