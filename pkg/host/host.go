package host

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/seed0634/agentadaptor/internal/httpguard"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/examples/streaming-chat-copilotkit/web"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/telemetry"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/a2aremote"
	"github.com/seed0634/agentadaptor/pkg/delegation/aguiremote"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/mcptool"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

//go:embed demo/parent.yaml
var demoParent []byte

// DefaultAddr is where the host listens when neither the config nor --addr
// says otherwise.
const DefaultAddr = "127.0.0.1:8080"

// Options tune a Host beyond its config.
type Options struct {
	Logger *slog.Logger
	// Executable runs the scripted agent (default: the current binary).
	Executable string
	// StateDir keeps scripted sessions (default: a temp dir).
	StateDir string
	// AdapterFactory builds non-scripted parent adapters; nil means only the
	// scripted parent is available.
	AdapterFactory func(cfg hostconfig.Parent) (agentadaptor.Adapter, error)
	// Addr overrides the config's listen address (the --addr flag). The
	// Host header allowlist and the non-loopback refusal use it.
	Addr string
	// Audit replaces the audit store the config's audit_file selects.
	Audit audit.Store
	// ReadTimeout bounds reading a request's headers and body (default
	// 30s): a client trickling a body cannot hold a connection for longer.
	ReadTimeout time.Duration
	// Tracing exports the host's spans (nil: none); the caller shuts it
	// down after the host (docs/design.md#observability). Metrics are
	// always on, at GET /metrics.
	Tracing *telemetry.Tracing
}

// Host is a configured agentadaptor host.
type Host struct {
	cfg         *hostconfig.Config
	log         *slog.Logger
	sdk         *agentadaptor.SDK
	registry    *sse.Registry
	bus         delegation.EventBus
	hub         *subagentstream.Hub
	deleg       *delegator.Delegator
	tools       *mcptool.Server
	audit       audit.Store
	remote      *demoRemote // the embedded demo's research agent, if any
	mux         *http.ServeMux
	guard       *httpguard.Guard
	ownAudit    bool
	readTimeout time.Duration
	owners      *owners
	addr        string
	tel         *telemetry.Host
	closeHTTP   []func() // the connectors' shared transports (with tracing)
	cl          clustered
}

// New builds a host from cfg. A nil cfg (or one with the scripted parent
// and neither a scenario nor agents) is the embedded demo: the scripted
// parent delegating to a scripted "research" agent that the host serves
// over real A2A on loopback. Agent cards marked fetch_card: startup are
// fetched before New returns, bounded by ctx.
func New(ctx context.Context, cfg *hostconfig.Config, opts Options) (_ *Host, err error) {
	if cfg == nil {
		cfg = &hostconfig.Config{}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Every auth reference resolves now, or the host does not start
	// (docs/design.md#secrets): not at the first delegation that needs it.
	if err := cfg.ResolveRefs(); err != nil {
		return nil, err
	}
	// The demo parent (scripted, no scenario of its own) always comes with
	// the demo's research agent it delegates to.
	demo := cfg.Parent.Adapter == "scripted" && cfg.Parent.Scenario == "" && len(cfg.Agents) == 0
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.StateDir == "" {
		opts.StateDir = os.TempDir() + "/agentadaptor-scripted"
	}
	envPolicy := parentEnv(cfg)
	h := &Host{cfg: cfg, log: opts.Logger, registry: sse.NewRegistry(), mux: http.NewServeMux(), owners: newOwners(),
		addr: cmp.Or(opts.Addr, cfg.Addr, DefaultAddr), readTimeout: cmp.Or(opts.ReadTimeout, 30*time.Second)}
	if _, _, err := net.SplitHostPort(h.addr); err != nil {
		return nil, fmt.Errorf("listen address %q (--addr or the config's addr) must be host:port, e.g. 127.0.0.1:8080 or localhost:8080", h.addr)
	}
	if h.guard, err = newGuard(cfg, h.addr); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			h.closeServices(context.Background())
		}
	}()
	agents := cfg.Agents
	if demo {
		if h.remote, err = startDemoRemote(opts, envPolicy, cfg.MaxConnections); err != nil {
			return nil, err
		}
		agents = []hostconfig.Agent{{
			Key: "research", DisplayName: "Research Agent", Protocol: "a2a", AgentCardURL: h.remote.cardURL(),
			Description: "Researches a question and reports with notes.",
		}}
	}
	parent, err := newParent(cfg.Parent, opts)
	if err != nil {
		return nil, err
	}
	warnNeededSecrets(opts.Logger, parent, cfg)
	protocols := map[string]string{}
	for _, a := range agents {
		protocols[a.Key] = a.Protocol
	}
	h.tel = telemetry.NewHost(telemetry.HostConfig{Tracing: opts.Tracing, Adapter: parent.Name(), Agents: protocols})
	// With tracing, every request to a remote carries its span
	// (traceparent) through a transport the connectors share.
	a2aHTTP, closeA2A := h.tel.HTTPClient("a2a")
	aguiHTTP, closeAGUI := h.tel.HTTPClient("agui")
	if closeA2A != nil {
		h.closeHTTP = append(h.closeHTTP, closeA2A, closeAGUI)
	}
	reg, err := registry.New(registry.Options{Connectors: []remote.Connector{a2aremote.New(a2aremote.Options{HTTPClient: a2aHTTP}), aguiremote.New(aguiremote.Options{HTTPClient: aguiHTTP})}},
		registrySpecs(agents)...)
	if err != nil {
		return nil, err
	}
	// Delegation events never leave this process (docs/design.md#scale-out).
	h.bus = delegation.NewMemoryBus()
	if err := h.openCluster(ctx, cfg.Cluster); err != nil {
		return nil, err
	}
	clAudit, artifacts, contexts := h.cl.stores()
	if opts.Audit == nil && clAudit != nil {
		opts.Audit = clAudit
	}
	if h.audit = opts.Audit; h.audit == nil {
		if h.audit, err = openAudit(cfg, opts.Logger); err != nil {
			return nil, err
		}
		h.ownAudit = true
	}
	// An agent marked fetch_card: startup whose card cannot be fetched or
	// is malformed fails the start, with the reason: it is configured to be
	// checked before the tool is offered.
	h.deleg, err = delegator.New(ctx, delegator.Config{Registry: reg, Bus: h.bus, Audit: h.audit, Artifacts: artifacts, Logger: opts.Logger,
		FailOnCardError: true, Observer: h.tel, Contexts: contexts, CancelClaim: h.cl.cancelClaim()})
	if err != nil {
		return nil, startupAgentError(err, agents)
	}
	if h.tools, err = mcptool.New(mcptool.Config{Delegator: h.deleg, Logger: opts.Logger, MaxConnections: cfg.MaxConnections}); err != nil {
		return nil, err
	}
	runDefaults := append([]agentadaptor.RunOption{agentadaptor.WithRuntimeServices(h.tools.RuntimeService())}, envPolicy...)
	if cfg.Parent.Model != "" {
		runDefaults = append(runDefaults, agentadaptor.WithModel(cfg.Parent.Model))
	}
	if cfg.Parent.WorkDir != "" {
		runDefaults = append(runDefaults, agentadaptor.WithWorkDir(cfg.Parent.WorkDir))
	}
	if cfg.Parent.Timeout > 0 {
		runDefaults = append(runDefaults, agentadaptor.WithTimeout(time.Duration(cfg.Parent.Timeout)))
	}
	if cfg.Parent.Nice != 0 {
		runDefaults = append(runDefaults, agentadaptor.WithNice(cfg.Parent.Nice))
	}
	h.sdk, err = agentadaptor.New(agentadaptor.WithAdapters(parent), agentadaptor.WithRunDefaults(runDefaults...), agentadaptor.WithLogger(opts.Logger))
	if err != nil {
		return nil, err
	}
	h.hub = subagentstream.NewHub(h.bus, h.cl.hubOptions(subagentstream.HubOptions{
		ReconnectGrace: time.Duration(cfg.ReconnectGrace),
		AllowedOrigins: cfg.AllowedOrigins,
		Owner:          principal,
		Logger:         opts.Logger,
		Stream:         subagentstream.Options{Observer: h.tel},
	}))
	chat := sse.NewHandler(h.sdk,
		sse.WithRegistry(h.registry),
		sse.WithAllowedOrigins(cfg.AllowedOrigins...),
		sse.WithLogger(opts.Logger),
		sse.WithSubagentBus(h.hub),
		sse.WithOwner(principal),
		sse.WithSessionKeyFunc(sessionKey),
		sse.WithMaxActiveRuns(cfg.MaxActiveRuns),
		sse.WithRunHook(h.runHook(h.tel.RunHook())),
	)
	h.mux.Handle("/agui", h.admitRun(chat))
	h.mux.Handle("/agui/runs/{runId}/cancel", h.forwarded(chat.CancelHandler()))
	h.mux.Handle("/agui/runs/{runId}/events", h.hub.EventsHandler())
	h.mux.Handle("GET /agui/runs/{runId}/delegations", h.byAGUIRunID(audit.Handler(h.audit)))
	h.mux.Handle("POST /agui/runs/{runId}/delegations/{delegationId}/input", h.forwarded(h.byAGUIRunID(h.deleg.InputHandler())))
	h.mux.Handle("GET /agui/runs/{runId}/delegations/{delegationId}/artifacts/{artifactId}", h.byAGUIRunID(artifact.Handler(h.deleg.Artifacts())))
	h.mux.Handle("GET /metrics", h.tel.MetricsHandler())
	h.mux.Handle("/", web.Handler())
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		body := map[string]any{"status": "ok", "parent": parent.Name(), "active_runs": h.registry.Len()}
		if c, ok := h.audit.(audit.Checker); ok && c.Err() != nil {
			// The audit sink fails: the host still serves, but says so.
			body["status"], body["audit"] = "degraded", "the audit file cannot be written; see the host log"
		}
		h.cl.health(body)
		_ = json.NewEncoder(w).Encode(body)
	})
	if err := h.startCluster(); err != nil {
		return nil, err
	}
	return h, nil
}

func newParent(p hostconfig.Parent, opts Options) (agentadaptor.Adapter, error) {
	if p.Adapter != "scripted" {
		if opts.AdapterFactory == nil {
			return nil, fmt.Errorf("parent adapter %q is not available in this build", p.Adapter)
		}
		return opts.AdapterFactory(p)
	}
	cfg := scripted.Config{Executable: opts.Executable, Scenario: p.Scenario, StateDir: opts.StateDir}
	if cfg.Scenario == "" {
		cfg.ScenarioData = demoParent
	}
	return scripted.New(cfg)
}

// Handler returns the host's HTTP routes behind its admission guard (Host
// allowlist, cross-origin protection, authentication, JSON bodies).
func (h *Host) Handler() http.Handler { return h.guard.Handler(h.mux) }

// Addr returns the listen address: Options.Addr, else the config's, else
// DefaultAddr.
func (h *Host) Addr() string { return h.addr }

// Server returns the *http.Server to serve the host with: its Handler,
// ReadHeaderTimeout, ReadTimeout (Options.ReadTimeout) and IdleTimeout,
// and no WriteTimeout, which would cut the SSE streams.
func (h *Host) Server() *http.Server {
	return &http.Server{Handler: h.Handler(), ReadHeaderTimeout: min(10*time.Second, h.readTimeout), ReadTimeout: h.readTimeout,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelDebug)}
}

// LimitListener bounds the connections open at once through ln to the
// config's max_connections: serve the host's Server on what it returns.
// Beyond the bound a new connection waits to be accepted until another
// closes.
func (h *Host) LimitListener(ln net.Listener) net.Listener {
	return httpguard.LimitListener(ln, h.cfg.MaxConnections)
}

// AuthRequired reports whether the host requires bearer tokens.
func (h *Host) AuthRequired() bool { return h.guard.AuthRequired() }

// ActiveRuns returns how many parent runs are active.
func (h *Host) ActiveRuns() int { return h.registry.Len() }

// Metrics returns the host's telemetry (its metrics registry and hooks).
func (h *Host) Metrics() *telemetry.Host { return h.tel }

// SDK returns the host's SDK.
func (h *Host) SDK() *agentadaptor.SDK { return h.sdk }

// Shutdown cancels every active run and waits for them (bounded by ctx), so
// each stream ends with its terminal event, then stops the stream hub, the
// delegation service (which cancels what is still running remotely) and the
// demo's remote agent.
func (h *Host) Shutdown(ctx context.Context) error {
	err := h.registry.CancelAll(ctx)
	if werr := h.hub.Wait(ctx); werr != nil && err == nil {
		err = werr
	}
	h.hub.Close()
	if werr := h.tel.Wait(ctx); werr != nil && err == nil {
		err = werr
	}
	h.closeServices(ctx)
	return err
}

func (h *Host) closeServices(ctx context.Context) {
	if h.tools != nil {
		_ = h.tools.Close()
	}
	if h.deleg != nil {
		if err := h.deleg.Close(ctx); err != nil {
			h.log.Warn("agentadaptor: closing the delegation service", "err", err)
		}
	}
	if h.remote != nil {
		h.remote.close(ctx)
	}
	if c, ok := h.audit.(interface{ Close() error }); ok && h.ownAudit {
		_ = c.Close()
	}
	for _, c := range h.closeHTTP {
		c()
	}
	if err := h.cl.close(ctx); err != nil {
		h.log.Warn("agentadaptor: closing the cluster connection", "err", err)
	}
}

// openAudit returns the audit store: in memory, or backed by a JSONL file
// (rotated by size with audit_max_bytes) that is read back at startup.
func openAudit(cfg *hostconfig.Config, log *slog.Logger) (audit.Store, error) {
	if cfg.AuditFile == "" {
		return audit.NewMemory(audit.Options{Logger: log}), nil
	}
	return audit.OpenFile(cfg.AuditFile, audit.Options{Logger: log, MaxFileBytes: cfg.AuditMaxBytes, MaxFiles: cfg.AuditMaxFiles})
}

// Serve runs srv until ctx is cancelled, then shuts down in order: cancel
// runs, wait for them, close the server.
func (h *Host) Serve(ctx context.Context, srv *http.Server, listen func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- listen() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Shutdown(sctx); err != nil {
		h.log.Warn("agentadaptor: cancelling runs at shutdown", "err", err)
	}
	err := srv.Shutdown(sctx)
	<-errc
	return err
}
