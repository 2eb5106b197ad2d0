package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/httpguard"
	"github.com/seed0634/agentadaptor/internal/telemetry"
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

// newBus makes a host's delegation event bus. Tests replace it (through
// export_test.go) to hold events back, as a lagging bus would.
var newBus = func() delegation.EventBus { return delegation.NewMemoryBus() }

// Host is a running delegation host: a parent agent behind the AG-UI
// endpoint, its remote agents, the delegation MCP endpoint, the stream
// hub. Serve its [Host.Handler] (or call [Host.Serve]) and stop it with
// [Host.Shutdown]. Its methods are safe for concurrent use.
type Host struct {
	cfg         Config
	log         *slog.Logger
	sdk         *agentadaptor.SDK
	registry    *sse.Registry
	bus         delegation.EventBus
	hub         *subagentstream.Hub
	deleg       *delegator.Delegator
	tools       *mcptool.Server
	audit       audit.Store
	mux         *http.ServeMux
	guard       *httpguard.Guard
	owners      *owners
	tel         *telemetry.Host
	closeHTTP   []func() // the connectors' shared transports (with tracing)
	cl          clustered
	admission   *admission
	ids         *runIDs // the SDK run id -> the client's runId, for logs and audit
	shutdown    sync.Once
	shutdownErr error
	shutdownEnd chan struct{} // closed when the first Shutdown returns

	hooksMu sync.Mutex
	hooks   []func(context.Context)
}

// New builds and starts a host from cfg: its parent adapter, registry,
// delegation service and MCP endpoint (on a loopback port of its own), and
// with a Cluster its NATS connection. Agents marked for a startup card
// fetch are fetched before New returns, bounded by ctx. On error nothing
// is left running.
func New(ctx context.Context, cfg Config) (_ *Host, err error) {
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	h := &Host{cfg: cfg, log: cfg.Logger, registry: sse.NewRegistry(), mux: http.NewServeMux(), owners: newOwners(),
		admission: newAdmission(), ids: newRunIDs(), shutdownEnd: make(chan struct{})}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, fmt.Errorf("listen address %q (--addr or the config's addr) must be host:port, e.g. 127.0.0.1:8080 or localhost:8080", cfg.Addr)
	}
	if h.guard, err = newGuard(cfg, h.log); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			h.closeServices(context.Background(), false)
		}
	}()
	protocols := map[string]string{}
	for _, a := range cfg.Agents {
		protocols[a.Key] = a.Protocol
	}
	h.tel = telemetry.NewHost(telemetry.HostConfig{Tracing: cfg.Tracing.telemetry(), Adapter: cfg.Parent.Name(), Agents: protocols})
	// With tracing, every request to a remote carries its span
	// (traceparent) through a transport the connectors share.
	a2aHTTP, closeA2A := h.tel.HTTPClient("a2a")
	aguiHTTP, closeAGUI := h.tel.HTTPClient("agui")
	if closeA2A != nil {
		h.closeHTTP = append(h.closeHTTP, closeA2A, closeAGUI)
	}
	reg, err := registry.New(registry.Options{Connectors: []remote.Connector{a2aremote.New(a2aremote.Options{HTTPClient: a2aHTTP}), aguiremote.New(aguiremote.Options{HTTPClient: aguiHTTP})}},
		cfg.Agents...)
	if err != nil {
		return nil, err
	}
	// Delegation events never leave this process (docs/design.md#scale-out).
	h.bus = newBus()
	if err := h.openCluster(ctx, cfg.Cluster); err != nil {
		return nil, err
	}
	clAudit, artifacts, contexts := h.cl.stores()
	if h.audit = cfg.Audit; h.audit == nil {
		if h.audit = clAudit; h.audit == nil {
			h.audit = audit.NewMemory(audit.Options{Logger: h.log})
		}
	}
	// The delegation packages know a run by its SDK id only: what they log
	// and audit is named in the client's terms here (docs/design.md#observability).
	sdkLog := slog.New(h.ids.handler(h.log.Handler()))
	// An agent marked fetch_card: startup whose card cannot be fetched or
	// is malformed fails the start, with the reason: it is configured to be
	// checked before the tool is offered.
	h.deleg, err = delegator.New(ctx, delegator.Config{Registry: reg, Bus: h.bus, Audit: h.ids.audit(h.audit), Artifacts: artifacts, Logger: sdkLog,
		FailOnCardError: true, Observer: h.tel, Contexts: contexts, CancelClaim: h.cl.cancelClaim()})
	if err != nil {
		return nil, startupAgentError(err, cfg.Agents)
	}
	if h.tools, err = mcptool.New(mcptool.Config{Delegator: h.deleg, Logger: sdkLog, MaxConnections: cfg.MaxConnections}); err != nil {
		return nil, err
	}
	runDefaults := append([]agentadaptor.RunOption{agentadaptor.WithRawStreamLimit(ParentRawStreamLimit),
		agentadaptor.WithRuntimeServices(h.tools.RuntimeService()), agentadaptor.WithEnvDeny(CredentialEnv...)}, cfg.RunOptions...)
	h.sdk, err = agentadaptor.New(agentadaptor.WithAdapters(cfg.Parent), agentadaptor.WithRunDefaults(runDefaults...), agentadaptor.WithLogger(sdkLog))
	if err != nil {
		return nil, err
	}
	h.hub = subagentstream.NewHub(h.bus, h.cl.hubOptions(subagentstream.HubOptions{
		ReconnectGrace: cfg.ReconnectGrace,
		AllowedOrigins: cfg.AllowedOrigins,
		Owner:          principal,
		Logger:         h.log,
		Stream:         subagentstream.Options{Observer: h.tel},
	}))
	h.routes()
	if err := h.startCluster(); err != nil {
		return nil, err
	}
	return h, nil
}

// routes registers the host's HTTP routes on its mux.
func (h *Host) routes() {
	chat := sse.NewHandler(h.sdk,
		sse.WithRegistry(h.registry),
		sse.WithAllowedOrigins(h.cfg.AllowedOrigins...),
		sse.WithLogger(h.log),
		sse.WithSubagentBus(h.hub),
		sse.WithOwner(principal),
		sse.WithSessionKeyFunc(sessionKey),
		sse.WithMaxActiveRuns(h.cfg.MaxActiveRuns),
		sse.WithRunHook(h.runHook(h.tel.RunHook())),
	)
	h.mux.Handle("/agui", h.admission.gate(h.admitRun(chat)))
	h.mux.Handle("/agui/runs/{runId}/cancel", h.forwarded(chat.CancelHandler()))
	h.mux.Handle("/agui/runs/{runId}/events", h.hub.EventsHandler())
	h.mux.Handle("GET /agui/runs/{runId}/delegations", h.byAGUIRunID(audit.Handler(h.audit)))
	h.mux.Handle("POST /agui/runs/{runId}/delegations/{delegationId}/input", h.forwarded(h.byAGUIRunID(h.deleg.InputHandler())))
	h.mux.Handle("GET /agui/runs/{runId}/delegations/{delegationId}/artifacts/{artifactId}", h.byAGUIRunID(artifact.Handler(h.deleg.Artifacts())))
	h.mux.Handle("GET /metrics", h.tel.MetricsHandler())
	if h.cfg.UI != nil {
		h.mux.Handle("/", h.cfg.UI)
	}
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		body := map[string]any{"status": "ok", "parent": h.cfg.Parent.Name(), "active_runs": h.registry.Len()}
		if c, ok := h.audit.(audit.Checker); ok && c.Err() != nil {
			// The audit sink fails: the host still serves, but says so.
			body["status"], body["audit"] = "degraded", "the audit file cannot be written; see the host log"
		}
		if h.admission.closed() {
			body["status"] = "stopping"
		}
		h.cl.health(body)
		_ = json.NewEncoder(w).Encode(body)
	})
}

// Handler returns the host's HTTP routes behind its admission guard (Host
// allowlist, cross-origin protection, authentication, JSON bodies). The
// routes are relative to the handler's root: mount it under a prefix with
// http.StripPrefix, e.g.
//
//	mux.Handle("/agents/", http.StripPrefix("/agents", h.Handler()))
//
// Routes: POST /agui (a chat turn: an AG-UI RunAgentInput, answered with
// the run's AG-UI event stream), GET /agui/runs/{runId}/events (resume
// after Last-Event-ID), POST /agui/runs/{runId}/cancel, GET
// /agui/runs/{runId}/delegations (the audit),
// POST /agui/runs/{runId}/delegations/{delegationId}/input, GET
// /agui/runs/{runId}/delegations/{delegationId}/artifacts/{artifactId},
// GET /healthz, GET /metrics, and Config.UI at "/". With Tokens, also the
// browser session routes /login, /logout and /session.
//
// A run's event stream (POST /agui, GET /agui/runs/{runId}/events) over
// plain HTTP/1.1 is written on its connection, hijacked from the server
// (docs/design.md#backpressure): the response ends with Connection: close,
// the server's ConnState reports it StateHijacked, and http.Server.Shutdown
// does not wait for it; Shutdown does. Middleware in front of the handler
// that wraps the ResponseWriter keeps that only if it implements Unwrap;
// otherwise, as over TLS and HTTP/2, the stream goes through the
// ResponseWriter.
func (h *Host) Handler() http.Handler { return h.guard.Handler(h.mux) }

// Addr returns Config.Addr (or [DefaultAddr]): where the host expects to be
// reached.
func (h *Host) Addr() string { return h.cfg.Addr }

// ActiveRuns returns how many parent runs are active.
func (h *Host) ActiveRuns() int { return h.registry.Len() }

// LoginURLs returns a one-time login link per principal of Config.Tokens,
// for the operator to open (base is the host's URL, e.g.
// "http://127.0.0.1:8080"); none without tokens. Each link is valid for 15
// minutes and signs one browser in.
func (h *Host) LoginURLs(base string) map[string]string {
	out := map[string]string{}
	for name := range h.cfg.Tokens {
		if u := h.guard.LoginURL(base, name); u != "" {
			out[name] = u
		}
	}
	return out
}

// RegisterOnShutdown registers f to be called at the end of
// [Host.Shutdown], after everything the host owns has stopped, in the
// order of registration: for what the host's agents depend on, such as a
// loopback agent its registry points at.
func (h *Host) RegisterOnShutdown(f func(ctx context.Context)) {
	h.hooksMu.Lock()
	defer h.hooksMu.Unlock()
	h.hooks = append(h.hooks, f)
}

// Serve serves the host on ln until ctx ends, then shuts down in order
// ([Host.Shutdown], then the HTTP server), bounded by 30 seconds. It
// bounds ln's open connections to Config.MaxConnections and uses
// Config.ReadTimeout, and no write timeout, which would cut the event
// streams. It closes ln. It returns nil after an orderly shutdown, else
// the error that stopped serving.
func (h *Host) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: h.Handler(), ReadHeaderTimeout: min(10*time.Second, h.cfg.ReadTimeout), ReadTimeout: h.cfg.ReadTimeout,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelDebug)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(httpguard.LimitListener(ln, h.cfg.MaxConnections)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Shutdown(sctx); err != nil {
		h.log.Warn("agentadaptor: shutting down the host", "err", err)
	}
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// Shutdown stops the host in order, bounded by ctx
// (docs/design.md#shutdown):
//
//  1. stop admitting: a new POST /agui gets 503 (code shutting_down);
//  2. cancel every active run and wait until it has ended and its stream
//     has written its terminal event;
//  3. release the delegation MCP endpoint and the delegation service,
//     which cancels what still runs remotely and writes the final audit
//     records;
//  4. close the cluster connection;
//  5. flush and close the audit store;
//  6. call the functions of [Host.RegisterOnShutdown].
//
// It does not stop the HTTP server serving [Host.Handler]: stop that
// after Shutdown returns ([Host.Serve] does). Calling Shutdown again waits
// for the first call and returns its result.
func (h *Host) Shutdown(ctx context.Context) error {
	h.shutdown.Do(func() {
		defer close(h.shutdownEnd)
		h.shutdownErr = h.stop(ctx)
	})
	select {
	case <-h.shutdownEnd:
		return h.shutdownErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *Host) stop(ctx context.Context) error {
	// Every run started through the admission gate: cancel each and wait
	// until it has ended.
	runs, err := h.admission.close(ctx)
	for _, rh := range runs {
		if cerr := rh.Cancel(ctx); cerr != nil && err == nil {
			err = fmt.Errorf("run %s: %w", rh.RunID(), cerr)
		}
	}
	if werr := h.hub.Wait(ctx); werr != nil && err == nil {
		err = werr
	}
	h.hub.Close()
	if werr := h.tel.Wait(ctx); werr != nil && err == nil {
		err = werr
	}
	h.closeServices(ctx, true)
	return err
}

// closeServices releases what New built, in the order of Shutdown: the
// MCP endpoint and the delegation service, the connectors' transports,
// the cluster, the audit store (when closeAudit: a New that fails leaves
// the caller's store open), then the registered functions.
func (h *Host) closeServices(ctx context.Context, closeAudit bool) {
	if h.tools != nil {
		_ = h.tools.Close()
	}
	if h.deleg != nil {
		if err := h.deleg.Close(ctx); err != nil {
			h.log.Warn("agentadaptor: closing the delegation service", "err", err)
		}
	}
	for _, c := range h.closeHTTP {
		c()
	}
	if err := h.cl.close(ctx); err != nil {
		h.log.Warn("agentadaptor: closing the cluster connection", "err", err)
	}
	if c, ok := h.cfg.Audit.(io.Closer); ok && closeAudit {
		if err := c.Close(); err != nil {
			h.log.Warn("agentadaptor: closing the audit store", "err", err)
		}
	}
	h.hooksMu.Lock()
	hooks := h.hooks
	h.hooks = nil
	h.hooksMu.Unlock()
	for _, f := range hooks {
		f(ctx)
	}
}
