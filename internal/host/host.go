package host

import (
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
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
}

// Host is a configured agentadaptor host.
type Host struct {
	cfg      *hostconfig.Config
	log      *slog.Logger
	sdk      *agentadaptor.SDK
	registry *sse.Registry
	mux      *http.ServeMux
}

// New builds a host from cfg (a nil cfg is the embedded demo).
func New(cfg *hostconfig.Config, opts Options) (*Host, error) {
	if cfg == nil {
		cfg = &hostconfig.Config{}
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h := &Host{cfg: cfg, log: opts.Logger, registry: sse.NewRegistry(), mux: http.NewServeMux()}
	parent, err := newParent(cfg.Parent, opts)
	if err != nil {
		return nil, err
	}
	runDefaults := []agentadaptor.RunOption{}
	if cfg.Parent.Model != "" {
		runDefaults = append(runDefaults, agentadaptor.WithModel(cfg.Parent.Model))
	}
	if cfg.Parent.WorkDir != "" {
		runDefaults = append(runDefaults, agentadaptor.WithWorkDir(cfg.Parent.WorkDir))
	}
	if cfg.Parent.Timeout > 0 {
		runDefaults = append(runDefaults, agentadaptor.WithTimeout(time.Duration(cfg.Parent.Timeout)))
	}
	h.sdk, err = agentadaptor.New(agentadaptor.WithAdapters(parent), agentadaptor.WithRunDefaults(runDefaults...), agentadaptor.WithLogger(opts.Logger))
	if err != nil {
		return nil, err
	}
	chat := sse.NewHandler(h.sdk,
		sse.WithRegistry(h.registry),
		sse.WithAllowedOrigins(cfg.AllowedOrigins...),
		sse.WithLogger(opts.Logger),
	)
	h.mux.Handle("/agui", chat)
	h.mux.Handle("/agui/runs/{runId}/cancel", chat.CancelHandler())
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"ok","parent":%q,"active_runs":%d}`+"\n", parent.Name(), h.registry.Len())
	})
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
	if cfg.StateDir == "" {
		cfg.StateDir = os.TempDir() + "/agentadaptor-scripted"
	}
	return scripted.New(cfg)
}

// Handler returns the host's HTTP routes.
func (h *Host) Handler() http.Handler { return h.mux }

// Addr returns the configured listen address (DefaultAddr if none).
func (h *Host) Addr() string {
	if h.cfg.Addr != "" {
		return h.cfg.Addr
	}
	return DefaultAddr
}

// SDK returns the host's SDK.
func (h *Host) SDK() *agentadaptor.SDK { return h.sdk }

// Shutdown cancels every active run and waits for them (bounded by ctx), so
// each stream ends with its terminal event.
func (h *Host) Shutdown(ctx context.Context) error {
	return h.registry.CancelAll(ctx)
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
