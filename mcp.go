package agentadaptor

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// MCPTransport is how a CLI reaches an MCP server.
type MCPTransport string

// The supported MCP transports.
const (
	MCPTransportStdio MCPTransport = "stdio" // the CLI spawns Command and speaks MCP over its stdio
	MCPTransportHTTP  MCPTransport = "http"  // streamable HTTP at URL
)

// MCPServerSpec describes one MCP server that a run's CLI should connect to.
// Adapters materialize the effective set of specs in the form their CLI reads
// (Claude's --mcp-config file, Codex's -c mcp_servers.*, Cursor's mcp.json).
//
// Values in Headers, Env and URL may contain ${VAR} references. References to
// plain run variables (AGENT_ADAPTOR_RUN_ID and variables provided by runtime
// services) are expanded by the SDK; references to secrets
// (AGENT_ADAPTOR_RUN_TOKEN and RuntimeServiceRef.SecretEnv) are kept as
// ${VAR} and the secret is placed in the child's environment, so that no per-run
// file or argv ever holds it. Unknown references are left for the CLI.
type MCPServerSpec struct {
	// Key names the server; tools appear to Claude as mcp__<Key>__<tool>.
	// Letters, digits, '-' and '_' only.
	Key string `json:"key"`
	// Transport defaults to stdio when Command is set and http when URL is set.
	Transport MCPTransport `json:"transport,omitempty"`

	Command string            `json:"command,omitempty"` // stdio: the executable
	Args    []string          `json:"args,omitempty"`    // stdio: its arguments (never secrets)
	Env     map[string]string `json:"env,omitempty"`     // stdio: extra environment for the server

	URL     string            `json:"url,omitempty"`     // http: the streamable HTTP endpoint
	Headers map[string]string `json:"headers,omitempty"` // http: extra request headers
	// BearerTokenEnvVar names an environment variable of the child that holds a
	// bearer token for this server; adapters send it as
	// "Authorization: Bearer <token>" without writing the token anywhere.
	BearerTokenEnvVar string `json:"bearer_token_env_var,omitempty"`

	// Required makes a failure of this server to connect a run failure
	// (FailureMCPServer) where the CLI reports server status.
	Required bool `json:"required,omitempty"`
	// ToolTimeout bounds one tool call; adapters raise the CLI's own MCP
	// timeout above the longest ToolTimeout of the run. Zero means the CLI's
	// default.
	ToolTimeout time.Duration `json:"tool_timeout,omitempty"`
}

var (
	mcpKeyPattern  = lazyRegexp(`^[A-Za-z0-9_-]{1,64}$`)
	envNamePattern = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerPattern  = lazyRegexp("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	varRefPattern  = lazyRegexp(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
)

// EffectiveTransport returns Transport, or the transport implied by Command or URL.
func (s MCPServerSpec) EffectiveTransport() MCPTransport {
	if s.Transport != "" {
		return s.Transport
	}
	if s.URL != "" && s.Command == "" {
		return MCPTransportHTTP
	}
	return MCPTransportStdio
}

// Validate checks the spec and returns a *ConfigError naming the bad field.
func (s MCPServerSpec) Validate() error {
	field := func(name string) string { return fmt.Sprintf("MCPServerSpec[%s].%s", s.Key, name) }
	if !mcpKeyPattern().MatchString(s.Key) {
		return &ConfigError{Field: "MCPServerSpec.Key", Reason: fmt.Sprintf("%q must be 1-64 letters, digits, '-' or '_'", s.Key)}
	}
	if s.ToolTimeout < 0 {
		return &ConfigError{Field: field("ToolTimeout"), Reason: "must not be negative"}
	}
	switch s.EffectiveTransport() {
	case MCPTransportStdio:
		if s.Command == "" {
			return &ConfigError{Field: field("Command"), Reason: "required for a stdio server"}
		}
		if s.URL != "" {
			return &ConfigError{Field: field("URL"), Reason: "not allowed for a stdio server"}
		}
		if len(s.Headers) > 0 {
			return &ConfigError{Field: field("Headers"), Reason: "not allowed for a stdio server"}
		}
		if s.BearerTokenEnvVar != "" {
			return &ConfigError{Field: field("BearerTokenEnvVar"), Reason: "not allowed for a stdio server"}
		}
		for _, k := range sortedKeys(s.Env) {
			if !envNamePattern().MatchString(k) {
				return &ConfigError{Field: field("Env"), Reason: fmt.Sprintf("%q is not a valid environment variable name", k)}
			}
		}
	case MCPTransportHTTP:
		if s.URL == "" {
			return &ConfigError{Field: field("URL"), Reason: "required for an http server"}
		}
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 {
			return &ConfigError{Field: field("Command"), Reason: "Command, Args and Env are not allowed for an http server"}
		}
		u, err := url.Parse(varRefPattern().ReplaceAllString(s.URL, "x"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &ConfigError{Field: field("URL"), Reason: fmt.Sprintf("%q is not an absolute http(s) URL", s.URL)}
		}
		for _, k := range sortedKeys(s.Headers) {
			if !headerPattern().MatchString(k) {
				return &ConfigError{Field: field("Headers"), Reason: fmt.Sprintf("%q is not a valid header name", k)}
			}
			if strings.ContainsAny(s.Headers[k], "\r\n") {
				return &ConfigError{Field: field("Headers"), Reason: fmt.Sprintf("value of %q contains a line break", k)}
			}
		}
		if s.BearerTokenEnvVar != "" {
			if !envNamePattern().MatchString(s.BearerTokenEnvVar) {
				return &ConfigError{Field: field("BearerTokenEnvVar"), Reason: fmt.Sprintf("%q is not a valid environment variable name", s.BearerTokenEnvVar)}
			}
			for k := range s.Headers {
				if strings.EqualFold(k, "Authorization") {
					return &ConfigError{Field: field("BearerTokenEnvVar"), Reason: "conflicts with an Authorization header; set one of them"}
				}
			}
		}
	default:
		return &ConfigError{Field: field("Transport"), Reason: fmt.Sprintf("%q is not stdio or http", s.Transport)}
	}
	return nil
}

// Clone returns a deep copy of s.
func (s MCPServerSpec) Clone() MCPServerSpec {
	c := s
	c.Args = append([]string(nil), s.Args...)
	c.Env = cloneMap(s.Env)
	c.Headers = cloneMap(s.Headers)
	return c
}

// AuthorizationHeader returns the Authorization header value the server must
// receive, as a ${VAR} template ("Bearer ${NAME}") when BearerTokenEnvVar is
// set, else the Headers entry, else "".
func (s MCPServerSpec) AuthorizationHeader() string {
	if s.BearerTokenEnvVar != "" {
		return "Bearer ${" + s.BearerTokenEnvVar + "}"
	}
	for k, v := range s.Headers {
		if strings.EqualFold(k, "Authorization") {
			return v
		}
	}
	return ""
}

// ExpandVars replaces ${NAME} in s with vars[NAME] for every NAME present in
// vars and leaves every other reference untouched.
func ExpandVars(s string, vars map[string]string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return varRefPattern().ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		if v, ok := vars[name]; ok {
			return v
		}
		return m
	})
}

// VarRefs returns the names referenced as ${NAME} in s, in order of appearance.
func VarRefs(s string) []string {
	var out []string
	for _, m := range varRefPattern().FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// ExpandMCPServer expands plain run variables in the spec's URL, Headers, Env
// and Args (Option B) and checks that no secret variable is referenced where it
// would end up on a command line or in a URL. Secret references stay as ${VAR}.
func ExpandMCPServer(s MCPServerSpec, vars map[string]string, secrets map[string]bool) (MCPServerSpec, error) {
	out := s.Clone()
	field := func(name string) string { return fmt.Sprintf("MCPServerSpec[%s].%s", s.Key, name) }
	for _, name := range VarRefs(s.URL) {
		if secrets[name] {
			return out, &ConfigError{Field: field("URL"), Reason: "references secret ${" + name + "}; secrets may only appear in Headers, Env or BearerTokenEnvVar"}
		}
	}
	for i, a := range s.Args {
		for _, name := range VarRefs(a) {
			if secrets[name] {
				return out, &ConfigError{Field: field("Args"), Reason: "references secret ${" + name + "}; argv is world-readable, pass it through Env"}
			}
		}
		out.Args[i] = ExpandVars(a, vars)
	}
	out.Command = ExpandVars(s.Command, vars)
	out.URL = ExpandVars(s.URL, vars)
	for k, v := range out.Headers {
		out.Headers[k] = ExpandVars(v, vars)
	}
	for k, v := range out.Env {
		out.Env[k] = ExpandVars(v, vars)
	}
	return out, nil
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	maps.Copy(c, m)
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// lazyRegexp compiles expr on first use: a process that never uses a
// pattern (the scripted agent re-executing this binary, a CLI command)
// does not pay for it at start.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
