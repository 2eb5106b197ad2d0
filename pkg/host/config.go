package host

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// DefaultAddr is Config.Addr when it is left empty.
const DefaultAddr = "127.0.0.1:8080"

// Defaults of the limits of a Config left 0.
const (
	DefaultMaxActiveRuns  = 32
	DefaultMaxConnections = 1024
	DefaultReadTimeout    = 30 * time.Second
)

// ParentRawStreamLimit is how many bytes of a parent run's stdout and of
// its stderr the host keeps in the run's agentadaptor.RunResult.RawStreams
// (the SDK's default is 1 MiB each): the host reads neither, and a chat
// turn's stream-json can be megabytes held until the run ends. A
// agentadaptor.WithRawStreamLimit in Config.RunOptions takes precedence.
const ParentRawStreamLimit = 8 << 10

// CredentialEnv are the host process's own environment variables that
// carry credentials whatever the configuration says: the OTLP exporter's
// headers (OTEL_EXPORTER_OTLP_HEADERS and the per-signal
// OTEL_EXPORTER_OTLP_{TRACES,METRICS,LOGS}_HEADERS), which hold the tracing
// backend's API key. No parent CLI inherits them ('*' as in
// agentadaptor.WithEnvDeny).
var CredentialEnv = []string{"OTEL_EXPORTER_OTLP_*HEADERS"}

// Config configures a [Host]. Only Parent is required: the zero value of
// every other field is a working default (a loopback host without
// authentication, without remote agents, everything in memory).
//
// A Config holds secrets (Tokens): the host never logs or shows them.
type Config struct {
	// Parent is the local agent CLI that drives the chat, e.g. an adapter
	// of pkg/adapters/claude or pkg/adapters/codex (required).
	Parent agentadaptor.Adapter
	// RunOptions apply to every parent run: agentadaptor.WithModel,
	// WithWorkDir, WithTimeout, WithNice, WithEnvDeny, WithEnvAllowList...
	// The host adds its delegation MCP server to each run and keeps
	// [CredentialEnv] from the parent whatever they say, and keeps
	// [ParentRawStreamLimit] bytes of its output unless they say otherwise.
	RunOptions []agentadaptor.RunOption
	// Agents are the remote agents the parent may delegate to: the
	// registry (docs/design.md#registry-and-policy). The model sees only
	// their keys; their URLs and credentials stay with the host. A zero
	// policy field takes the registry's default. An agent whose FetchCard
	// is registry.FetchCardStartup must answer with a valid card before
	// New returns.
	Agents []registry.RemoteAgentSpec
	// Addr is the host:port clients reach the host at (default
	// [DefaultAddr]). Its host is accepted in the Host header (DNS
	// rebinding protection); without authentication (no Tokens, no
	// Authenticator) it must be a loopback address. [Host.Serve] serves on
	// whatever listener it is given.
	Addr string
	// AllowedHosts are further Host names the host answers to, e.g. the
	// name your server or a reverse proxy is reached at.
	AllowedHosts []string
	// AllowedOrigins are the browser origins (scheme://host[:port])
	// allowed to call the host cross-origin (CORS).
	AllowedOrigins []string
	// Tokens maps principal names (as an Authenticator's principals: 1-256
	// bytes of printable UTF-8 without '/'; the same name is the same
	// principal) to their bearer tokens: the secrets themselves, at least
	// 16 characters each. With tokens, every route but /healthz requires
	// "Authorization: Bearer <token>" or the session cookie of a login link
	// ([Host.LoginURLs]) or of the sign-in page.
	Tokens map[string]string
	// Authenticator identifies the requests that carry neither a token of
	// Tokens nor a session cookie, with your own scheme (instead of tokens
	// or besides them). With an Authenticator or Tokens, a run, its
	// stream, its delegations and its artifacts belong to the principal
	// that started it. The Host header and cross-origin checks come first,
	// whatever it says.
	Authenticator Authenticator
	// SessionTTL bounds a browser session begun with a token (default 12h).
	SessionTTL time.Duration
	// ReconnectGrace is how long a run whose every client disconnected
	// keeps running, waiting for a reconnect, before it is cancelled
	// (default 30s).
	ReconnectGrace time.Duration
	// MaxActiveRuns bounds the parent runs at once (default
	// [DefaultMaxActiveRuns]): beyond it POST /agui answers 429 with
	// Retry-After.
	MaxActiveRuns int
	// MaxConnections bounds the open connections of every listener the host
	// runs: [Host.Serve]'s, the delegation MCP endpoint's (default
	// [DefaultMaxConnections]). Beyond it a new connection waits to be
	// accepted until another closes.
	MaxConnections int
	// ReadTimeout bounds reading a request's headers and body on
	// [Host.Serve]'s server (default [DefaultReadTimeout]).
	ReadTimeout time.Duration
	// Audit keeps the delegations' audit records, served at
	// GET /agui/runs/{runId}/delegations (nil: in memory, or the cluster's
	// with a Cluster). [Host.Shutdown] closes it last, when it has a
	// Close() error method: after every delegation's final record.
	Audit audit.Store
	// Cluster, with a NATS URL, makes this host one replica of several
	// (docs/design.md#scale-out); the zero value is one process.
	Cluster Cluster
	// UI serves the pages at "/" and any path no route of the host takes,
	// e.g. the example web UI (examples/streaming-chat-copilotkit/web),
	// which expects the host at the root of its origin. nil: no pages.
	UI http.Handler
	// Logger receives the host's logs (default slog.Default()). A record
	// about a run carries run_id, the run's id as its client knows it
	// (the AG-UI runId), and sdk_run_id, the SDK's id of the run.
	Logger *slog.Logger
	// Tracing exports the host's spans (nil: none); see [NewTracing]. The
	// caller shuts it down after the host.
	Tracing *Tracing
}

// Cluster configures scale-out over NATS JetStream
// (docs/design.md#scale-out): several hosts sharing runs, audit and
// artifacts, behind one load balancer.
type Cluster struct {
	// NATSURL is the NATS server (nats://host:4222; a comma-separated list
	// for a NATS cluster). Empty: one process, in memory.
	NATSURL string
	// Replica names this replica (default: hostname-pid): 1-64 letters,
	// digits, '-' or '_', unique among the replicas.
	Replica string
	// Lease is how long a replica's runs outlive its last sign of life
	// before another replica ends them (default 10s).
	Lease time.Duration
	// CredsRef refers to the NATS credentials as env:NAME or file:/path
	// (an nkey seed or a .creds file's content). Without it the host warns
	// at startup: anyone who reaches the NATS server reads every run.
	CredsRef string
}

// Authenticator identifies who a request acts for: its principal, which
// owns the runs the request starts. Implementations must be safe for
// concurrent use and must not read the request body.
type Authenticator interface {
	// Authenticate returns the principal of r, or an error when r is not
	// authenticated (the host answers 401 and never shows the error). A
	// principal is 1-256 bytes of printable UTF-8 without '/'; anything
	// else is refused like an error.
	Authenticate(r *http.Request) (principal string, err error)
}

// AuthenticatorFunc adapts a function to [Authenticator].
type AuthenticatorFunc func(r *http.Request) (string, error)

// Authenticate calls f(r).
func (f AuthenticatorFunc) Authenticate(r *http.Request) (string, error) { return f(r) }

// ErrInsecureAddr is returned by New for a non-loopback Addr without
// authentication: anyone who reaches the port could run the local agent,
// which edits files and runs commands.
var ErrInsecureAddr = errors.New("refusing to serve a non-loopback address without authentication")

// withDefaults validates c and fills its defaults.
func (c Config) withDefaults() (Config, error) {
	if c.Parent == nil {
		return c, errors.New("host: Config.Parent is required: the local agent adapter that drives the chat")
	}
	for name, v := range map[string]int{"MaxActiveRuns": c.MaxActiveRuns, "MaxConnections": c.MaxConnections} {
		if v < 0 {
			return c, fmt.Errorf("host: Config.%s %d must not be negative (0 takes the default)", name, v)
		}
	}
	if c.SessionTTL < 0 || c.ReconnectGrace < 0 || c.ReadTimeout < 0 {
		return c, errors.New("host: Config durations must not be negative (0 takes the default)")
	}
	for name := range c.Tokens {
		if err := validPrincipal(name); err != nil {
			return c, fmt.Errorf("host: Config.Tokens: %w", err)
		}
	}
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.MaxActiveRuns == 0 {
		c.MaxActiveRuns = DefaultMaxActiveRuns
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
