package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/eventqueue"
	agentadaptor "github.com/seed0634/agentadaptor"
)

// Paths the server's handler serves.
const (
	// PathAgentCard is the well-known Agent Card path.
	PathAgentCard = "/.well-known/agent-card.json"
	// PathJSONRPC is the JSON-RPC 2.0 binding (A2A 1.0).
	PathJSONRPC = "/a2a/jsonrpc"
	// PathREST is the prefix of the HTTP+JSON binding (A2A 1.0), e.g.
	// POST /a2a/rest/message:stream, GET /a2a/rest/tasks/{id}.
	PathREST = "/a2a/rest"
)

// CardOptions describe the agent on its Agent Card.
type CardOptions struct {
	// Name is the agent's name (default "agentadaptor-<adapter>").
	Name string
	// Description defaults to a sentence naming the adapter.
	Description string
	// Version is the agent's version (default "1.0.0").
	Version string
	// BaseURL is the externally reachable origin of the server, e.g.
	// "http://127.0.0.1:9001". When empty, interface URLs are built from each
	// card request's Host header (http, or https when the request was TLS).
	BaseURL string
	// Skills are advertised as given; default one generic skill.
	Skills []a2a.AgentSkill
	// Provider is the optional organization behind the agent.
	Provider *a2a.AgentProvider
	// DocumentationURL is optional.
	DocumentationURL string
	// NoHTTPJSON leaves the HTTP+JSON interface off the card (it is still
	// served). By default the card lists JSON-RPC first, then HTTP+JSON.
	NoHTTPJSON bool
}

// BuildCard returns the Agent Card for an agent served at baseURL (an
// origin such as "http://127.0.0.1:9001"): capabilities.streaming=true,
// text in and out, the JSON-RPC interface at baseURL+PathJSONRPC and, unless
// o.NoHTTPJSON, the HTTP+JSON interface at baseURL+PathREST, both A2A 1.0.
// adapter fills the default name and description.
func BuildCard(o CardOptions, adapter, baseURL string) *a2a.AgentCard {
	if adapter == "" {
		adapter = "agent"
	}
	if o.Name == "" {
		o.Name = "agentadaptor-" + adapter
	}
	if o.Description == "" {
		o.Description = "The local " + adapter + " agent CLI exposed over A2A by Agent Adaptor."
	}
	if o.Version == "" {
		o.Version = "1.0.0"
	}
	skills := o.Skills
	if len(skills) == 0 {
		skills = []a2a.AgentSkill{{
			ID: "general", Name: "General agent tasks",
			Description: "Answers questions and performs tasks with the " + adapter + " agent; streams its text as " +
				ArtifactAssistantOutput + " artifacts and ends each turn with an " + ArtifactAgentAdaptorResult + " artifact.",
			Tags:        []string{"agent", adapter},
			InputModes:  []string{"text/plain"},
			OutputModes: []string{"text/plain", "application/json"},
		}}
	}
	base := strings.TrimRight(baseURL, "/")
	card := &a2a.AgentCard{
		Name: o.Name, Description: o.Description, Version: o.Version,
		Provider: o.Provider, DocumentationURL: o.DocumentationURL,
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		Skills:             skills,
		SupportedInterfaces: []*a2a.AgentInterface{
			a2a.NewAgentInterface(base+PathJSONRPC, a2a.TransportProtocolJSONRPC),
		},
	}
	if !o.NoHTTPJSON {
		card.SupportedInterfaces = append(card.SupportedInterfaces, a2a.NewAgentInterface(base+PathREST, a2a.TransportProtocolHTTPJSON))
	}
	return card
}

// Config configures a [Server].
type Config struct {
	// SDK, Adapter, RunOptions, Exposure and Logger configure the executor;
	// see [ExecutorConfig].
	SDK        *agentadaptor.SDK
	Adapter    string
	RunOptions []agentadaptor.RunOption
	Exposure   Exposure
	Logger     *slog.Logger
	// Card describes the agent.
	Card CardOptions
	// HandlerOptions are passed to a2asrv.NewHandler after the bridge's own
	// (capability checks, logger), e.g. a2asrv.WithTaskStore.
	HandlerOptions []a2asrv.RequestHandlerOption
}

// Server exposes one adapter as an A2A agent: the Agent Card, the JSON-RPC
// binding and the HTTP+JSON binding on one http.Handler.
type Server struct {
	exec    *Executor
	cfg     Config
	adapter string
	handler http.Handler
}

// NewServer builds a Server. It fails when cfg.SDK is nil or cfg.Adapter is
// not registered.
func NewServer(cfg Config) (*Server, error) {
	exec, err := NewExecutor(ExecutorConfig{
		SDK: cfg.SDK, Adapter: cfg.Adapter, RunOptions: cfg.RunOptions,
		Exposure: cfg.Exposure, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	adapter := cfg.Adapter
	if adapter == "" {
		adapter = cfg.SDK.DefaultAdapter()
	}
	s := &Server{exec: exec, cfg: cfg, adapter: adapter}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	caps := a2a.AgentCapabilities{Streaming: true}
	opts := append([]a2asrv.RequestHandlerOption{
		a2asrv.WithCapabilityChecks(&caps),
		a2asrv.WithLogger(logger),
	}, cfg.HandlerOptions...)
	rh := cancelRetry{a2asrv.NewHandler(exec, opts...)}

	mux := http.NewServeMux()
	if cfg.Card.BaseURL != "" {
		mux.Handle(PathAgentCard, a2asrv.NewStaticAgentCardHandler(s.Card(cfg.Card.BaseURL)))
	} else {
		mux.HandleFunc(PathAgentCard, s.serveDynamicCard)
	}
	mux.Handle(PathJSONRPC, a2asrv.NewJSONRPCHandler(rh))
	mux.Handle(PathREST+"/", http.StripPrefix(PathREST, a2asrv.NewRESTHandler(rh)))
	s.handler = mux
	return s, nil
}

// Card returns the Agent Card for the server reachable at baseURL (the
// configured Card.BaseURL wins when set).
func (s *Server) Card(baseURL string) *a2a.AgentCard {
	if s.cfg.Card.BaseURL != "" {
		baseURL = s.cfg.Card.BaseURL
	}
	return BuildCard(s.cfg.Card, s.adapter, baseURL)
}

func (s *Server) serveDynamicCard(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	card := s.Card(scheme + "://" + r.Host)
	b, err := json.Marshal(card)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Methods", "GET, OPTIONS")
		w.Header().Set("Access-Control-Allow-Headers", "Content-Type")
		w.WriteHeader(http.StatusOK)
		return
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// Handler returns the http.Handler serving the card at [PathAgentCard],
// JSON-RPC at [PathJSONRPC] and HTTP+JSON under [PathREST].
func (s *Server) Handler() http.Handler { return s.handler }

// Executor returns the server's executor.
func (s *Server) Executor() *Executor { return s.exec }

// Close cancels every running turn and waits for their children to stop or
// ctx to end. Call it after the HTTP server stopped accepting requests.
func (s *Server) Close(ctx context.Context) error { return s.exec.Close(ctx) }

// cancelRetry works around a race in a2a-go's local task manager: a CancelTask
// that arrives while the execution of a turn that just ended in input-required
// is still unregistering is attached to that execution and resolves to its
// result (or, when the execution's queue closed meanwhile, fails with
// eventqueue.ErrQueueClosed), so it fails although the task is idle. The
// retry happens once a2a-go has unregistered the execution (a few
// milliseconds), when the cancel goes to the idle task and succeeds.
type cancelRetry struct{ a2asrv.RequestHandler }

const (
	cancelRetries    = 100
	cancelRetryPause = 10 * time.Millisecond
)

func (h cancelRetry) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	for attempt := 0; ; attempt++ {
		task, err := h.RequestHandler.CancelTask(ctx, req)
		if err == nil || attempt >= cancelRetries ||
			!(errors.Is(err, a2a.ErrTaskNotCancelable) || errors.Is(err, eventqueue.ErrQueueClosed)) {
			return task, err
		}
		cur, gerr := h.RequestHandler.GetTask(ctx, &a2a.GetTaskRequest{ID: req.ID, Tenant: req.Tenant})
		if gerr != nil || (cur.Status.State != a2a.TaskStateInputRequired && cur.Status.State != a2a.TaskStateAuthRequired) {
			return task, err
		}
		t := time.NewTimer(cancelRetryPause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return task, err
		}
	}
}
