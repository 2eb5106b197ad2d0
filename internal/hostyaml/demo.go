package hostyaml

import (
	"context"
	_ "embed"
	"fmt"
	"net"
	"net/http"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/httpguard"
	"github.com/seed0634/agentadaptor/internal/telemetry"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

//go:embed demo/research.yaml
var demoResearch []byte

// demoRemote serves the embedded "research" agent over real A2A on a
// loopback port, the way `agentadaptor a2a serve --adapter scripted` does.
type demoRemote struct {
	srv     *http.Server
	bridge  *a2abridge.Server
	tracing *telemetry.Tracing // its own exporter, when the host traces
	done    chan struct{}
	url     string
}

// startDemoRemote starts the demo's research agent; env is the parents'
// environment policy, which its local CLI gets too (no host secret reaches
// it), and maxConns bounds its listener like every listener of the host.
func startDemoRemote(ctx context.Context, opts Options, env []agentadaptor.RunOption, maxConns int) (*demoRemote, error) {
	ad, err := scripted.New(scripted.Config{Executable: opts.Executable, ScenarioData: demoResearch, StateDir: opts.StateDir})
	if err != nil {
		return nil, err
	}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(ad.Named("research")), agentadaptor.WithLogger(opts.Logger), agentadaptor.WithRunDefaults(env...))
	if err != nil {
		return nil, err
	}
	// The demo's agent continues the host's traces like a2a serve does (its
	// metrics are not served: it is part of the demo, not of the host).
	var tracing *telemetry.Tracing
	if opts.Tracing.Enabled() {
		if tracing, err = telemetry.NewTracing(ctx, "agentadaptor-serve"); err != nil {
			return nil, fmt.Errorf("demo research agent: %w", err)
		}
	}
	r := &demoRemote{tracing: tracing, done: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = tracing.Shutdown(ctx)
		return nil, fmt.Errorf("demo research agent: %w", err)
	}
	r.url = "http://" + ln.Addr().String()
	tel := telemetry.NewA2AServe(tracing)
	r.bridge, err = a2abridge.NewServer(a2abridge.Config{
		SDK: sdk, Adapter: "research", Logger: opts.Logger, RunOptions: []agentadaptor.RunOption{agentadaptor.WithStreaming()}, Observer: tel.TurnObserver(),
		Card: a2abridge.CardOptions{Name: "Research Agent", Description: "Scripted demo research agent", BaseURL: r.url},
	})
	if err != nil {
		ln.Close()
		_ = tracing.Shutdown(ctx)
		return nil, err
	}
	// The demo agent runs a local agent too: a web page must not reach it
	// any more than the host (Host allowlist, no cross-origin requests).
	guard, err := httpguard.New(httpguard.Config{Addr: ln.Addr().String()})
	if err != nil {
		ln.Close()
		_ = tracing.Shutdown(ctx)
		return nil, err
	}
	r.srv = &http.Server{Handler: guard.Handler(tel.Middleware(r.bridge.Handler())), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute}
	go func() { defer close(r.done); _ = r.srv.Serve(httpguard.LimitListener(ln, maxConns)) }()
	return r, nil
}

// spec is the demo agent's registry entry.
func (r *demoRemote) spec() registry.RemoteAgentSpec {
	return registrySpecs(demoAgents(r.url + a2abridge.PathAgentCard))[0]
}

// close stops the demo agent, bounded by ctx.
func (r *demoRemote) close(ctx context.Context) {
	_ = r.bridge.Close(ctx)
	_ = r.srv.Shutdown(ctx)
	<-r.done
	_ = r.tracing.Shutdown(ctx)
}

// demoAgents is the demo's registry: its research agent, as a config
// would name it.
func demoAgents(cardURL string) []hostconfig.Agent {
	return []hostconfig.Agent{{
		Key: "research", DisplayName: "Research Agent", Protocol: "a2a", AgentCardURL: cardURL,
		Description: "Researches a question and reports with notes.",
	}}
}
