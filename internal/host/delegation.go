package host

import (
	"context"
	_ "embed"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/httpguard"
	"github.com/seed0634/agentadaptor/internal/telemetry"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

//go:embed demo/research.yaml
var demoResearch []byte

// registrySpecs converts the config's agents into host-curated specs.
func registrySpecs(agents []hostconfig.Agent) []registry.RemoteAgentSpec {
	var specs []registry.RemoteAgentSpec
	for _, a := range agents {
		p := registry.DefaultPolicy()
		p.AllowInputRequired = true
		if a.Policy.AllowInputRequired != nil {
			p.AllowInputRequired = *a.Policy.AllowInputRequired
		}
		if a.Policy.InputRequired != "" {
			p.InputRequired = a.Policy.InputRequired
			p.AllowInputRequired = a.Policy.InputRequired != registry.InputRequiredFail
		}
		if a.Policy.AllowRemoteArtifacts != nil {
			p.AllowRemoteArtifacts = *a.Policy.AllowRemoteArtifacts
		}
		if a.Policy.MaxTimeout > 0 {
			p.MaxTimeout = time.Duration(a.Policy.MaxTimeout)
		}
		if a.Policy.MaxArtifactBytes > 0 {
			p.MaxArtifactBytes = a.Policy.MaxArtifactBytes
		}
		if a.Policy.MaxReadBytes > 0 {
			p.MaxReadBytes = a.Policy.MaxReadBytes
		}
		if a.Policy.MaxConcurrentPerRun > 0 {
			p.MaxConcurrentPerRun = a.Policy.MaxConcurrentPerRun
		}
		if a.Policy.MaxConcurrentGlobal > 0 {
			p.MaxConcurrentGlobal = a.Policy.MaxConcurrentGlobal
		}
		if a.Policy.Context != "" {
			p.ContextPolicy = a.Policy.Context
		}
		if a.Policy.AuditLevel != "" {
			p.AuditLevel = a.Policy.AuditLevel
		}
		p.RequireStreaming = a.Policy.RequireStreaming
		p.AllowedTenants = a.Policy.AllowedTenants
		spec := registry.RemoteAgentSpec{
			Key: a.Key, DisplayName: a.DisplayName, Description: a.Description, Protocol: a.Protocol,
			AgentCardURL: a.AgentCardURL, EndpointURL: a.EndpointURL, AuthRef: a.AuthRef, Tenant: a.Tenant,
			Shortcut: a.Shortcut, FetchCard: a.FetchCard, InterfaceOrigins: a.InterfaceOrigins, Policy: p, Provenance: registry.ProvenanceHost,
		}
		if au := a.Auth; au != nil {
			spec.Auth = &credentials.Auth{Scheme: credentials.Scheme(au.Scheme), TokenRef: au.TokenRef, Header: au.Header,
				ClientID: au.ClientID, ClientSecretRef: au.ClientSecretRef, TokenURL: au.TokenURL, Scopes: au.Scopes}
		}
		specs = append(specs, spec)
	}
	return specs
}

// demoRemote serves the embedded "research" agent over real A2A on a
// loopback port, the way `agentadaptor a2a serve --adapter scripted` does.
type demoRemote struct {
	srv    *http.Server
	bridge *a2abridge.Server
	done   chan struct{}
	url    string
}

func startDemoRemote(opts Options, envPolicy []agentadaptor.RunOption, maxConns int) (*demoRemote, error) {
	ad, err := scripted.New(scripted.Config{Executable: opts.Executable, ScenarioData: demoResearch, StateDir: opts.StateDir})
	if err != nil {
		return nil, err
	}
	// The demo's agent is a local CLI too: it gets the parents'
	// environment policy (no host secret reaches it).
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(ad.Named("research")), agentadaptor.WithLogger(opts.Logger), agentadaptor.WithRunDefaults(envPolicy...))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo research agent: %w", err)
	}
	base := "http://" + ln.Addr().String()
	// The demo's agent continues the host's traces like a2a serve does (its
	// metrics are not served: it is part of the demo, not of the host).
	tel := telemetry.NewA2AServe(opts.Tracing)
	bridge, err := a2abridge.NewServer(a2abridge.Config{
		SDK: sdk, Adapter: "research", Logger: opts.Logger, RunOptions: []agentadaptor.RunOption{agentadaptor.WithStreaming()}, Observer: tel.TurnObserver(),
		Card: a2abridge.CardOptions{Name: "Research Agent", Description: "Scripted demo research agent", BaseURL: base},
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	// The demo agent runs a local agent too: a web page must not reach it
	// any more than the host (Host allowlist, no cross-origin requests).
	guard, err := httpguard.New(httpguard.Config{Addr: ln.Addr().String()})
	if err != nil {
		ln.Close()
		return nil, err
	}
	r := &demoRemote{srv: &http.Server{Handler: guard.Handler(tel.Middleware(bridge.Handler())), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute}, bridge: bridge, done: make(chan struct{}), url: base}
	go func() { defer close(r.done); _ = r.srv.Serve(httpguard.LimitListener(ln, maxConns)) }()
	return r, nil
}

func (r *demoRemote) cardURL() string { return r.url + a2abridge.PathAgentCard }

func (r *demoRemote) close(ctx context.Context) {
	_ = r.bridge.Close(ctx)
	_ = r.srv.Shutdown(ctx)
	<-r.done
}

// byAGUIRunID rewrites /agui/runs/{runId}/... from the stream's AG-UI runId
// (the client's) to the SDK run id the delegation service keys on. The
// runId is resolved in the caller's namespace (sse.RunKey): with
// authentication, a run belongs to the principal that started it, and
// other principals (and runs the host does not know) get 404.
func (h *Host) byAGUIRunID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("runId")
		if h.guard.AuthRequired() {
			if e, ok := h.runOwner(principal(r), id); !ok || e.principal != principal(r) {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"error":{"code":"run_not_found","message":"no run with this id for you"}}` + "\n"))
				return
			}
		}
		if sdkID, ok := h.sdkRunID(principal(r), id); ok && sdkID != id {
			r = r.Clone(r.Context())
			r.URL.Path = strings.Replace(r.URL.Path, "/agui/runs/"+id+"/", "/agui/runs/"+sdkID+"/", 1)
			r.URL.RawPath = ""
			r.SetPathValue("runId", sdkID)
		}
		next.ServeHTTP(w, r)
	})
}

// runOwner returns who started a run (the caller's runId) and its SDK id:
// this replica's own runs (by run key), else (scaled out) what the cluster
// knows of another replica's.
func (h *Host) runOwner(principal, aguiRunID string) (ownerEntry, bool) {
	if e, ok := h.owners.get(sse.RunKey(principal, aguiRunID)); ok {
		return e, true
	}
	return h.cl.owner(principal, aguiRunID)
}

func (h *Host) sdkRunID(principal, aguiRunID string) (string, bool) {
	key := sse.RunKey(principal, aguiRunID)
	if e, ok := h.owners.get(key); ok {
		return e.sdkRunID, true
	}
	if st, ok := h.hub.Stream(key); ok {
		return st.SDKRunID(), true
	}
	if hd, ok := h.registry.Lookup(key); ok {
		return hd.RunID(), true
	}
	if e, ok := h.cl.owner(principal, aguiRunID); ok && e.sdkRunID != "" {
		return e.sdkRunID, true
	}
	return "", false
}
