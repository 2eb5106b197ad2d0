package hostconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

// Config is the host configuration file.
type Config struct {
	// Addr is the listen address (default 127.0.0.1:8080; --addr wins).
	Addr string `yaml:"addr"`
	// Parent selects the local agent that drives the chat.
	Parent Parent `yaml:"parent"`
	// Agents is the registry of remote agents; the model sees only keys.
	Agents []Agent `yaml:"agents"`
	// AllowedOrigins lists browser origins allowed to call the host (CORS).
	AllowedOrigins []string `yaml:"allowed_origins"`
	// ReconnectGrace is how long a run keeps going after its last browser
	// disconnected, waiting for a reconnect with Last-Event-ID, before it is
	// cancelled (default 30s).
	ReconnectGrace Duration `yaml:"reconnect_grace"`
	// AuditFile, when set, keeps the delegation audit in this append-only
	// JSONL file too (a line when a delegation begins and when it ends); it
	// is read back at startup, so the HTTP route still serves earlier runs.
	AuditFile string `yaml:"audit_file"`
	// Auth configures who may use the host (docs/design.md#secrets).
	// Without tokens the host serves loopback only.
	Auth Auth `yaml:"auth"`
	// MaxActiveRuns bounds the chat runs (parent CLI processes) at once:
	// beyond it POST /agui answers 429 with Retry-After (default 32).
	MaxActiveRuns int `yaml:"max_active_runs"`
	// Cluster, with a NATS URL, makes this host one replica of several
	// sharing runs, audit and artifacts over NATS JetStream (README
	// "Running several replicas"). Without one the host is one process,
	// in memory.
	Cluster Cluster `yaml:"cluster"`
	// MaxConnections bounds the open connections of every listener the
	// host runs (its HTTP listener, the delegation MCP endpoint, the demo's
	// research agent); beyond it a new connection waits to be accepted
	// until another closes (default 1024).
	MaxConnections int `yaml:"max_connections"`
	// AuditMaxBytes, with AuditFile, rotates the audit file before a
	// record would take it past this size (0, the default: never). A
	// record is never split across files.
	AuditMaxBytes int64 `yaml:"audit_max_bytes"`
	// AuditMaxFiles is how many rotated audit files are kept besides the
	// one being written; older ones are deleted (0, the default: all).
	AuditMaxFiles int `yaml:"audit_max_files"`
	// LogFormat is the format of serve's log records on stderr: text
	// (key=value, the default) or json (one JSON object per line);
	// --log-format wins.
	LogFormat string `yaml:"log_format"`
}

// DefaultMaxConnections is MaxConnections when the config leaves it 0.
const DefaultMaxConnections = 1024

// Cluster configures scale-out over NATS JetStream
// (docs/design.md#scale-out).
type Cluster struct {
	// NATSURL is the NATS server (nats://host:4222; a comma-separated list
	// for a NATS cluster). Empty (the default): one process, in memory.
	NATSURL string `yaml:"nats_url"`
	// Replica names this replica (default: hostname-pid): 1-64 letters,
	// digits, '-' or '_'; unique among the replicas.
	Replica string `yaml:"replica"`
	// Lease is how long a replica's runs outlive its last sign of life
	// before another replica ends them (default 10s; at least 1s).
	Lease Duration `yaml:"lease"`
	// CredsRef refers to NATS credentials as env:NAME or file:/path; never
	// inline: a user nkey seed (SU..., for a server that lists the user's
	// public nkey, as the README's configuration does) or a .creds file's
	// content (user JWT and nkey seed, operator mode). Without it serve
	// warns at startup.
	CredsRef string `yaml:"creds_ref"`
}

// DefaultLease is Cluster.Lease when the config leaves it 0.
const DefaultLease = Duration(10 * time.Second)

var replicaPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// validate checks the cluster block and fills its defaults (but the
// replica name, which depends on the process).
func (c *Cluster) validate() error {
	if c.NATSURL == "" {
		if c.Replica != "" || c.Lease != 0 || c.CredsRef != "" {
			return &Error{Field: "cluster.nats_url", Reason: "is required when other cluster fields are set (without it the host is one process)"}
		}
		return nil
	}
	for raw := range strings.SplitSeq(c.NATSURL, ",") {
		u, err := url.Parse(strings.TrimSpace(raw))
		switch {
		case err != nil || u.Host == "":
			return &Error{Field: "cluster.nats_url", Reason: fmt.Sprintf("%q is not a URL such as nats://127.0.0.1:4222", raw)}
		case u.User != nil:
			return &Error{Field: "cluster.nats_url", Reason: "must not carry credentials: give them as creds_ref (env:NAME or file:/path)"}
		case u.Scheme != "nats" && u.Scheme != "tls":
			return &Error{Field: "cluster.nats_url", Reason: fmt.Sprintf("scheme %q is not nats or tls", u.Scheme)}
		}
	}
	if c.Replica != "" && !replicaPattern.MatchString(c.Replica) {
		return &Error{Field: "cluster.replica", Reason: fmt.Sprintf("%q must be 1-64 letters, digits, '-' or '_'", c.Replica)}
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.Lease < Duration(time.Second) {
		return &Error{Field: "cluster.lease", Reason: "must be at least 1s"}
	}
	if c.CredsRef != "" && !credentials.IsRef(c.CredsRef) {
		return &Error{Field: "cluster.creds_ref", Reason: "must be env:NAME or file:/path (never the credentials themselves)"}
	}
	return nil
}

// Auth is the host's access control.
type Auth struct {
	// Tokens are the principals allowed to use the host, each with a bearer
	// token given by an auth reference (env:NAME or file:/path; never the
	// token itself). With tokens, every route but /healthz requires
	// "Authorization: Bearer" (or the cookie of a login link), and a run
	// belongs to the principal that started it.
	Tokens []Token `yaml:"tokens"`
	// AllowedHosts are Host names accepted besides the loopback names and
	// the listen address's host (DNS rebinding protection), e.g. the name
	// of a reverse proxy in front of the host.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// SessionTTL is how long a browser session lasts (a login link's or
	// the sign-in page's; default 12h): past it the cookie is refused.
	// POST /logout ends one sooner.
	SessionTTL Duration `yaml:"session_ttl"`
}

// Token is one principal of Auth.
type Token struct {
	Name     string `yaml:"name"`
	TokenRef string `yaml:"token_ref"`
}

// DefaultMaxActiveRuns is MaxActiveRuns when the config leaves it 0.
const DefaultMaxActiveRuns = 32

// Parent configures the parent adapter.
type Parent struct {
	// Adapter is claude, codex, cursor, acp (any Agent Client Protocol
	// agent: set binary and args) or scripted (default scripted).
	Adapter string `yaml:"adapter"`
	// Model is passed to the CLI; empty means the CLI's default.
	Model string `yaml:"model"`
	// Scenario is a scenario file for the scripted adapter only.
	Scenario string `yaml:"scenario"`
	// Binary overrides the CLI executable (claude, codex, cursor-agent);
	// for acp it is required: the ACP agent to run (e.g. gemini).
	Binary string `yaml:"binary"`
	// Args are the ACP agent's arguments (acp only), e.g.
	// ["--experimental-acp"]. Never secrets: argv is world-readable.
	Args []string `yaml:"args"`
	// Permissions answer the ACP agent's permission requests (acp only):
	// the host's own tools are allowed, then deny, then allow rules
	// (a tool name pattern, or kind:<ACP tool kind>); default deny.
	Permissions Permissions `yaml:"permissions"`
	// WorkDir is the parent's working directory (default: the host's).
	WorkDir string `yaml:"work_dir"`
	// Timeout bounds one parent run (Go duration, e.g. 10m; 0 = none).
	Timeout Duration `yaml:"timeout"`
	// Nice runs each parent CLI, with every process and thread it spawns,
	// at this Unix nice value: 0 (the default) leaves the priority as
	// inherited, 1..19 lowers it (agentadaptor.WithNice). Under CPU
	// contention the relay to the browser stays responsive while the
	// parents themselves, their own text stream included, slow down; an
	// idle machine sees no difference. Negative values (which need
	// privilege) and values above 19 are errors.
	Nice int `yaml:"nice"`
	// PermissionMode is Claude Code's --permission-mode (claude only), e.g.
	// "default", "acceptEdits", "plan" or "bypassPermissions".
	PermissionMode string `yaml:"permission_mode"`
	// AllowedTools are granted to Claude Code with --allowedTools (claude
	// only), besides the delegation tool, e.g. ["Read", "Bash(git diff:*)"].
	AllowedTools []string `yaml:"allowed_tools"`
	// Env narrows the environment the parent CLIs inherit from the host
	// (docs/design.md#secrets). Whatever it says, the variables the
	// config's env: references name, and the host's credential-carrying
	// OTEL_EXPORTER_OTLP_*HEADERS, never reach a parent.
	Env ParentEnv `yaml:"env"`
}

// ParentEnv is the parent CLIs' environment policy. Names may hold '*'
// for any run of characters ("ANTHROPIC_*").
type ParentEnv struct {
	// Allow, when not empty, passes only these host variables, plus PATH,
	// HOME and those the adapter needs (its configuration directory, API
	// key and base URL variables), plus the run's own variables (the run
	// token of the delegation MCP endpoint).
	Allow []string `yaml:"allow"`
	// Deny removes these host variables (and wins over Allow).
	Deny []string `yaml:"deny"`
}

var envPattern = lazyRegexp(`^[A-Za-z0-9_*]+$`)

func (p ParentEnv) validate() error {
	for field, list := range map[string][]string{"parent.env.allow": p.Allow, "parent.env.deny": p.Deny} {
		for i, n := range list {
			if !envPattern().MatchString(n) {
				return &Error{Field: fmt.Sprintf("%s[%d]", field, i), Reason: fmt.Sprintf("%q is not a variable name (letters, digits, '_', and '*' for any run of characters)", n)}
			}
		}
	}
	return nil
}

// Permissions are an ACP parent's permission rules: path.Match patterns
// on the tool's name (mcp__<server>__<tool> for MCP tools, else the
// agent's title) or kind:<kind> (read, edit, delete, move, search,
// execute, think, fetch, other).
type Permissions struct {
	Allow []string `yaml:"allow"`
	Deny  []string `yaml:"deny"`
}

// validateACP checks the fields only an acp parent takes.
func (p *Parent) validateACP() error {
	if p.Adapter != "acp" {
		if len(p.Args) > 0 || len(p.Permissions.Allow) > 0 || len(p.Permissions.Deny) > 0 {
			return &Error{Field: "parent.args", Reason: "args and permissions configure an acp parent only"}
		}
		return nil
	}
	if p.Binary == "" {
		return &Error{Field: "parent.binary", Reason: "is required for an acp parent: the ACP agent to run, e.g. gemini (with args: [--experimental-acp])"}
	}
	if p.Model != "" {
		return &Error{Field: "parent.model", Reason: "an acp parent takes its model in args (e.g. [--experimental-acp, --model, NAME])"}
	}
	for i, r := range append(append([]string(nil), p.Permissions.Allow...), p.Permissions.Deny...) {
		if _, err := path.Match(r, ""); err != nil || r == "" {
			return &Error{Field: fmt.Sprintf("parent.permissions[%d]", i), Reason: fmt.Sprintf("%q is not a valid pattern", r)}
		}
	}
	return nil
}

// Agent is one registry entry.
type Agent struct {
	Key          string `yaml:"key"`
	DisplayName  string `yaml:"display_name"`
	Description  string `yaml:"description"`
	Protocol     string `yaml:"protocol"` // a2a | agui
	AgentCardURL string `yaml:"agent_card_url"`
	EndpointURL  string `yaml:"endpoint_url"`
	// AuthRef refers to a credential held by the host (env:NAME or
	// file:/path); the secret itself never appears in the file.
	AuthRef string `yaml:"auth_ref"`
	// Auth, for a2a agents, replaces AuthRef: a bearer token, an API key
	// header or OAuth2 client credentials (exclusive with AuthRef).
	Auth *AgentAuth `yaml:"auth"`
	// Tenant is sent with every A2A request to this agent.
	Tenant string `yaml:"tenant"`
	// Shortcut names an optional dedicated tool (delegate_to_<name>).
	Shortcut string `yaml:"shortcut"`
	// FetchCard is "startup" (fetch and fingerprint before the tool is
	// exposed) or "first_call" (default).
	FetchCard string `yaml:"fetch_card"`
	// InterfaceOrigins are origins (scheme://host[:port]) the agent's card
	// may send tasks to besides its own origin (default: none; https never
	// downgrades to http).
	InterfaceOrigins []string `yaml:"interface_origins"`
	Policy           Policy   `yaml:"policy"`
}

// AgentAuth is how the host authenticates to an A2A agent
// (docs/design.md#secrets). Every secret is an auth reference (env:NAME or
// file:/path), never inline; the agent card's securitySchemes fill what is
// left empty (the API key header, the OAuth2 token URL and scopes).
type AgentAuth struct {
	// Scheme is bearer, api_key or oauth2.
	Scheme string `yaml:"scheme"`
	// TokenRef refers to the bearer token or the API key.
	TokenRef string `yaml:"token_ref"`
	// Header is the API key's request header ("": from the card).
	Header string `yaml:"header"`
	// ClientID is the OAuth2 client id (not a secret).
	ClientID string `yaml:"client_id"`
	// ClientSecretRef refers to the OAuth2 client secret.
	ClientSecretRef string `yaml:"client_secret_ref"`
	// TokenURL is the OAuth2 token endpoint, https (http on loopback only);
	// "": the card's clientCredentials flow.
	TokenURL string `yaml:"token_url"`
	// Scopes are the OAuth2 scopes ("": those the card requires).
	Scopes []string `yaml:"scopes"`
}

var headerPattern = lazyRegexp(`^[A-Za-z0-9!#$%&'*+.^_` + "`" + `|~-]{1,64}$`)

// validateAuth checks an agent's auth block; f names a field of the agent.
func validateAuth(a *Agent, f func(string) string) error {
	au := a.Auth
	bad := func(field, format string, args ...any) error {
		return &Error{Field: f("auth." + field), Reason: fmt.Sprintf(format, args...)}
	}
	ref := func(field, v string) error {
		switch {
		case v == "":
			return bad(field, "is required for scheme %s", au.Scheme)
		case !credentials.IsRef(v):
			return bad(field, "must be env:NAME or file:/path (never the secret itself)")
		}
		return nil
	}
	switch {
	case a.AuthRef != "":
		return bad("scheme", "auth and auth_ref are exclusive (auth_ref is auth with scheme bearer)")
	case a.Protocol != "a2a":
		return bad("scheme", "auth is supported for a2a agents; use auth_ref for agui")
	}
	switch au.Scheme {
	case "bearer", "api_key":
		if err := ref("token_ref", au.TokenRef); err != nil {
			return err
		}
		if au.ClientID != "" || au.ClientSecretRef != "" || au.TokenURL != "" || len(au.Scopes) > 0 {
			return bad("scheme", "%s takes token_ref (and, for api_key, header) only", au.Scheme)
		}
		if au.Header != "" && au.Scheme == "bearer" {
			return bad("header", "is for scheme api_key only")
		}
		if au.Header != "" && !headerPattern().MatchString(au.Header) {
			return bad("header", "%q is not an HTTP header name", au.Header)
		}
	case "oauth2":
		if au.TokenRef != "" || au.Header != "" {
			return bad("scheme", "oauth2 takes client_id, client_secret_ref, token_url and scopes only")
		}
		if strings.TrimSpace(au.ClientID) == "" {
			return bad("client_id", "is required for scheme oauth2")
		}
		if err := ref("client_secret_ref", au.ClientSecretRef); err != nil {
			return err
		}
		if au.TokenURL != "" {
			u, err := url.Parse(au.TokenURL)
			host := ""
			if err == nil {
				host = u.Hostname()
			}
			ip := net.ParseIP(host)
			switch {
			case err != nil || u.Host == "" || u.User != nil:
				return bad("token_url", "must be an absolute URL without credentials")
			case u.Scheme == "https":
			case u.Scheme == "http" && (host == "localhost" || (ip != nil && ip.IsLoopback())):
			default:
				return bad("token_url", "must be https (http only on a loopback host): the client secret travels to it")
			}
		}
	case "":
		return bad("scheme", "is required (bearer, api_key or oauth2)")
	default:
		return bad("scheme", "%q is not bearer, api_key or oauth2", au.Scheme)
	}
	return nil
}

// Policy is an agent's delegation policy (docs/design.md#registry-and-policy).
type Policy struct {
	AllowedTenants   []string `yaml:"allowed_tenants"`
	MaxTimeout       Duration `yaml:"max_timeout"`
	MaxArtifactBytes int64    `yaml:"max_artifact_bytes"`
	// MaxReadBytes bounds everything one delegation reads from the remote
	// (default 64 MiB); beyond it the delegation fails at once.
	MaxReadBytes        int64 `yaml:"max_read_bytes"`
	MaxConcurrentPerRun int   `yaml:"max_concurrent_per_run"`
	MaxConcurrentGlobal int   `yaml:"max_concurrent_global"`
	AllowInputRequired  *bool `yaml:"allow_input_required"`
	// InputRequired is what a delegation does when the remote asks for
	// input: surface (show it, block the tool call for the UI's answer;
	// the host default), fail, or return (return the question to the parent
	// model, which continues the delegation with the tool's continue
	// input). It wins over allow_input_required, which must not contradict
	// it when both are set.
	InputRequired        string `yaml:"input_required"`
	AllowRemoteArtifacts *bool  `yaml:"allow_remote_artifacts"`
	RequireStreaming     bool   `yaml:"require_streaming"`
	// Context is the context policy (docs/design.md#context-policies):
	// ephemeral (default), sticky_per_parent_thread_agent or
	// sticky_per_run_agent.
	Context    string `yaml:"context"`
	AuditLevel string `yaml:"audit_level"`
}

// Duration is a time.Duration written as a Go duration string ("180s").
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a duration such as 180s or 10m", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// Error reports an invalid configuration; Field names the offending field.
type Error struct {
	File   string
	Field  string
	Reason string
}

func (e *Error) Error() string {
	prefix := "config"
	if e.File != "" {
		prefix += " " + e.File
	}
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", prefix, e.Reason)
	}
	return fmt.Sprintf("%s: %s: %s", prefix, e.Field, e.Reason)
}

// Load reads and validates a config file. Relative file paths in it
// resolve against the file's directory ([Config.ResolvePaths]).
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Reason: err.Error()}
	}
	c, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	if err := c.ResolvePaths(filepath.Dir(path)); err != nil {
		return nil, &Error{File: path, Reason: err.Error()}
	}
	return c, nil
}

var (
	unknownField = lazyRegexp(`line (\d+): field (\S+) not found in type (\S+)`)
	keyPattern   = lazyRegexp(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	toolPattern  = lazyRegexp(`^[a-zA-Z_][a-zA-Z0-9_]{0,63}$`)
)

// Parse decodes and validates config data; name is used in errors.
func Parse(name string, data []byte) (*Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		msg := err.Error()
		if m := unknownField().FindStringSubmatch(msg); m != nil {
			return nil, &Error{File: name, Field: m[2], Reason: fmt.Sprintf("unknown field at line %s (in %s)", m[1], strings.TrimPrefix(m[3], "hostconfig."))}
		}
		if !strings.HasPrefix(msg, "yaml: line ") {
			return nil, &Error{File: name, Reason: strings.TrimPrefix(msg, "yaml: ")}
		}
		return nil, &Error{File: name, Reason: syntaxError(data, msg)}
	}
	if err := c.Validate(); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.File = name
		}
		return nil, err
	}
	return &c, nil
}

// Validate checks the configuration and fills defaults.
func (c *Config) Validate() error {
	switch c.Parent.Adapter {
	case "":
		c.Parent.Adapter = "scripted"
	case "claude", "codex", "cursor", "scripted", "acp":
	default:
		return &Error{Field: "parent.adapter", Reason: fmt.Sprintf("%q is not claude, codex, cursor, acp or scripted", c.Parent.Adapter)}
	}
	if err := c.Parent.validateACP(); err != nil {
		return err
	}
	if c.Parent.Scenario != "" && c.Parent.Adapter != "scripted" {
		return &Error{Field: "parent.scenario", Reason: "only the scripted adapter takes a scenario"}
	}
	if (c.Parent.PermissionMode != "" || len(c.Parent.AllowedTools) > 0) && c.Parent.Adapter != "claude" {
		return &Error{Field: "parent.permission_mode", Reason: "permission_mode and allowed_tools configure a claude parent only"}
	}
	switch {
	case c.Parent.Nice < 0:
		return &Error{Field: "parent.nice", Reason: fmt.Sprintf("%d is negative: raising the parents' priority needs privilege and is not offered (0 leaves it unchanged, 19 is the lowest)", c.Parent.Nice)}
	case c.Parent.Nice > 19:
		return &Error{Field: "parent.nice", Reason: fmt.Sprintf("%d is above 19, the lowest priority", c.Parent.Nice)}
	}
	if c.MaxActiveRuns < 0 {
		return &Error{Field: "max_active_runs", Reason: "must not be negative"}
	}
	if c.MaxActiveRuns == 0 {
		c.MaxActiveRuns = DefaultMaxActiveRuns
	}
	if err := c.Parent.Env.validate(); err != nil {
		return err
	}
	switch {
	case c.MaxConnections < 0:
		return &Error{Field: "max_connections", Reason: "must not be negative"}
	case c.MaxConnections == 0:
		c.MaxConnections = DefaultMaxConnections
	}
	switch {
	case c.AuditMaxBytes < 0 || c.AuditMaxFiles < 0:
		return &Error{Field: "audit_max_bytes", Reason: "audit_max_bytes and audit_max_files must not be negative"}
	case c.AuditMaxBytes > 0 && c.AuditFile == "":
		return &Error{Field: "audit_max_bytes", Reason: "rotates the audit file: set audit_file too"}
	case c.AuditMaxFiles > 0 && c.AuditMaxBytes == 0:
		return &Error{Field: "audit_max_files", Reason: "keeps rotated audit files: set audit_max_bytes too (without it the file never rotates)"}
	}
	switch c.LogFormat {
	case "", "text", "json":
	default:
		return &Error{Field: "log_format", Reason: fmt.Sprintf("%q is not text or json", c.LogFormat)}
	}
	if err := c.Cluster.validate(); err != nil {
		return err
	}
	if c.Cluster.NATSURL != "" && c.AuditFile != "" {
		return &Error{Field: "audit_file", Reason: "a cluster keeps its audit in JetStream: remove audit_file or cluster.nats_url"}
	}
	names := map[string]bool{}
	for i, tk := range c.Auth.Tokens {
		f := func(name string) string { return fmt.Sprintf("auth.tokens[%d].%s", i, name) }
		if !keyPattern().MatchString(tk.Name) {
			return &Error{Field: f("name"), Reason: fmt.Sprintf("%q must be 1-64 lower-case letters, digits, '-' or '_'", tk.Name)}
		}
		if names[tk.Name] {
			return &Error{Field: f("name"), Reason: fmt.Sprintf("duplicate principal %q", tk.Name)}
		}
		names[tk.Name] = true
		if !credentials.IsRef(tk.TokenRef) {
			return &Error{Field: f("token_ref"), Reason: "must be env:NAME or file:/path (never the token itself)"}
		}
	}
	if c.Auth.SessionTTL != 0 && c.Auth.SessionTTL < Duration(time.Minute) {
		return &Error{Field: "auth.session_ttl", Reason: "must be at least 1m (0 or absent: 12h)"}
	}
	for i, h := range c.Auth.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/@ ") {
			return &Error{Field: fmt.Sprintf("auth.allowed_hosts[%d]", i), Reason: fmt.Sprintf("%q must be a host name or IP address, without scheme or path", h)}
		}
	}
	seen := map[string]bool{}
	for i := range c.Agents {
		a := &c.Agents[i]
		f := func(name string) string { return fmt.Sprintf("agents[%d].%s", i, name) }
		if !keyPattern().MatchString(a.Key) {
			return &Error{Field: f("key"), Reason: fmt.Sprintf("%q must be 1-64 lower-case letters, digits, '-' or '_'", a.Key)}
		}
		if seen[a.Key] {
			return &Error{Field: f("key"), Reason: fmt.Sprintf("duplicate key %q", a.Key)}
		}
		seen[a.Key] = true
		switch a.Protocol {
		case "":
			a.Protocol = "a2a"
		case "a2a", "agui":
		default:
			return &Error{Field: f("protocol"), Reason: fmt.Sprintf("%q is not a2a or agui", a.Protocol)}
		}
		if a.Protocol == "a2a" && a.AgentCardURL == "" && a.EndpointURL == "" {
			return &Error{Field: f("agent_card_url"), Reason: "an a2a agent needs agent_card_url (or endpoint_url)"}
		}
		if a.Protocol == "agui" && a.EndpointURL == "" {
			return &Error{Field: f("endpoint_url"), Reason: "an agui agent needs endpoint_url"}
		}
		if a.AuthRef != "" && !credentials.IsRef(a.AuthRef) {
			return &Error{Field: f("auth_ref"), Reason: "must be env:NAME or file:/path (never the secret itself)"}
		}
		if a.Auth != nil {
			if err := validateAuth(a, f); err != nil {
				return err
			}
		}
		if a.Shortcut != "" && !toolPattern().MatchString(a.Shortcut) {
			return &Error{Field: f("shortcut"), Reason: fmt.Sprintf("%q is not a valid tool name", a.Shortcut)}
		}
		switch a.FetchCard {
		case "", "first_call", "startup":
		default:
			return &Error{Field: f("fetch_card"), Reason: fmt.Sprintf("%q is not startup or first_call", a.FetchCard)}
		}
		switch a.Policy.Context {
		case "", "ephemeral", "sticky_per_parent_thread_agent", "sticky_per_run_agent":
		default:
			return &Error{Field: f("policy.context"), Reason: fmt.Sprintf("%q is not ephemeral, sticky_per_parent_thread_agent or sticky_per_run_agent", a.Policy.Context)}
		}
		switch ir, allow := a.Policy.InputRequired, a.Policy.AllowInputRequired; {
		case ir != "" && ir != "surface" && ir != "fail" && ir != "return":
			return &Error{Field: f("policy.input_required"), Reason: fmt.Sprintf("%q is not surface, fail or return", ir)}
		case allow != nil && ir != "" && *allow != (ir != "fail"):
			return &Error{Field: f("policy.input_required"), Reason: fmt.Sprintf("%q contradicts allow_input_required: %v (set only input_required)", ir, *allow)}
		}
		if a.Policy.MaxArtifactBytes < 0 || a.Policy.MaxConcurrentPerRun < 0 || a.Policy.MaxConcurrentGlobal < 0 || a.Policy.MaxReadBytes < 0 {
			return &Error{Field: f("policy"), Reason: "limits must not be negative"}
		}
	}
	// A secret of the host never reaches the parent: listing one in the
	// allow list is a contradiction, not a wish to honour.
	for _, r := range c.Refs() {
		name, ok := strings.CutPrefix(r.Ref, "env:")
		if !ok {
			continue
		}
		for i, a := range c.Parent.Env.Allow {
			if a == name {
				return &Error{Field: fmt.Sprintf("parent.env.allow[%d]", i), Reason: fmt.Sprintf("%s is the variable of %s, a secret of the host, which never reaches the parent", name, r.Field)}
			}
		}
	}
	if c.Parent.Adapter == "scripted" && c.Parent.Scenario == "" && len(c.Agents) > 0 {
		return &Error{Field: "parent.scenario", Reason: "the scripted parent needs a scenario when agents are configured (without agents and scenario, serve runs the embedded demo)"}
	}
	return nil
}

// lazyRegexp compiles expr on first use: a process that never uses a
// pattern (the scripted agent re-executing this binary, a CLI command)
// does not pay for it at start.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
