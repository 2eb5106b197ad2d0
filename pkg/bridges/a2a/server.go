package a2a

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	agentadaptor "github.com/seed0634/agentadaptor"
	"google.golang.org/grpc"
)

// DefaultMaxRequestBytes bounds a request body unless
// Config.MaxRequestBytes says otherwise.
const DefaultMaxRequestBytes = 8 << 20

// Config configures a [Server].
type Config struct {
	// SDK, Adapter, RunOptions, Exposure, Logger and Observer configure the
	// executor; see [ExecutorConfig].
	SDK        *agentadaptor.SDK
	Adapter    string
	RunOptions []agentadaptor.RunOption
	Exposure   Exposure
	Logger     *slog.Logger
	Observer   TurnObserver
	// MaxActiveTasks and OnRefused bound the task turns in progress at
	// once; see [ExecutorConfig]. 0 sets no bound.
	MaxActiveTasks int
	OnRefused      func(context.Context)
	// Card describes the agent; Card.BaseURL is required.
	Card CardOptions
	// Principal returns the principal an authentication layer in front of
	// the server admitted a request as ("" when none), read from the
	// request's context. A task belongs to the principal that created it:
	// only that principal gets, lists, cancels or subscribes to it. nil, or
	// "", is the single [LocalUser].
	Principal func(context.Context) string
	// MaxRequestBytes bounds every request body (default
	// [DefaultMaxRequestBytes]).
	MaxRequestBytes int64
	// HandlerOptions are passed to a2asrv.NewHandler after the bridge's own
	// (capability checks, logger, the call policy), e.g. a2asrv.WithTaskStore.
	// A replacement task store must scope tasks by user (see
	// a2asrv.NewTaskStoreAuthenticator) for Principal to isolate them.
	HandlerOptions []a2asrv.RequestHandlerOption
}

// Server exposes one adapter as an A2A agent: the Agent Card, the JSON-RPC
// and HTTP+JSON bindings of A2A 1.0 and 0.3 on one http.Handler, and the
// gRPC binding for a grpc.Server the caller runs ([Server.RegisterGRPC]).
//
// It performs no authentication and no Host or Origin checks: put the
// admission layer of the process in front of it and pass the principal it
// established as Config.Principal (docs/design.md#secrets).
type Server struct {
	exec    *Executor
	cfg     Config
	adapter string
	card    *a2a.AgentCard
	cardV1  []byte
	rh      *requestHandler
	handler http.Handler
}

// NewServer builds a Server. It fails with an *agentadaptor.ConfigError
// when cfg.SDK is nil, cfg.Adapter is not registered, or cfg.Card.BaseURL
// is missing or not an http(s) URL.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Card.BaseURL == "" {
		return nil, &agentadaptor.ConfigError{Field: "a2a bridge Card.BaseURL",
			Reason: "required: the URL clients reach the server at (interface URLs are never taken from a request's Host header)"}
	}
	if err := checkBaseURL(cfg.Card.BaseURL); err != nil {
		return nil, &agentadaptor.ConfigError{Field: "a2a bridge Card.BaseURL", Reason: err.Error()}
	}
	exec, err := NewExecutor(ExecutorConfig{
		SDK: cfg.SDK, Adapter: cfg.Adapter, RunOptions: cfg.RunOptions,
		Exposure: cfg.Exposure, Logger: cfg.Logger, Observer: cfg.Observer,
		MaxActiveTasks: cfg.MaxActiveTasks, OnRefused: cfg.OnRefused,
	})
	if err != nil {
		return nil, err
	}
	adapter := cfg.Adapter
	if adapter == "" {
		adapter = cfg.SDK.DefaultAdapter()
	}
	s := &Server{exec: exec, cfg: cfg, adapter: adapter, card: BuildCard(cfg.Card, adapter, cfg.Card.BaseURL)}
	doc, err := cardDocument(s.card)
	if err == nil {
		s.cardV1, err = cardV1Document(s.card)
	}
	if err != nil {
		_ = exec.Close(context.Background())
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	caps := a2a.AgentCapabilities{Streaming: true}
	opts := append([]a2asrv.RequestHandlerOption{
		a2asrv.WithCapabilityChecks(&caps),
		a2asrv.WithLogger(logger),
		a2asrv.WithCallInterceptors(callPolicy{principal: cfg.Principal}),
	}, cfg.HandlerOptions...)
	s.rh = &requestHandler{RequestHandler: a2asrv.NewHandler(exec, opts...), exec: exec}

	started := time.Now()
	mux := http.NewServeMux()
	mux.Handle(PathAgentCard, cardHandler(doc, s.cardV1, started))
	mux.Handle(PathLegacyAgentCard, cardHandler(doc, s.cardV1, started))
	rpc := versionRouter{v1: a2asrv.NewJSONRPCHandler(s.rh), v03: a2av0.NewJSONRPCHandler(s.rh), legacy: legacyJSONRPC, exec: exec}
	mux.Handle(PathJSONRPC, rpc)
	mux.Handle(PathJSONRPC+"/{$}", rpc) // clients that append a slash to the card's URL
	rest := versionRouter{v1: a2asrv.NewRESTHandler(s.rh), v03: a2av0.NewRESTHandler(s.rh), legacy: legacyREST, rest: true, exec: exec}
	mux.Handle(PathREST+"/", http.StripPrefix(PathREST, rest))
	limit := cfg.MaxRequestBytes
	if limit <= 0 {
		limit = DefaultMaxRequestBytes
	}
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		mux.ServeHTTP(&charsetWriter{ResponseWriter: w}, r)
	})
	return s, nil
}

// Card returns the server's Agent Card (the 1.0 view; the served document
// adds the 0.3 fields). Callers must not modify it.
func (s *Server) Card() *a2a.AgentCard { return s.card }

// Handler returns the http.Handler serving the card at [PathAgentCard] and
// [PathLegacyAgentCard], JSON-RPC at [PathJSONRPC] (also with a trailing
// slash) and HTTP+JSON under [PathREST].
func (s *Server) Handler() http.Handler { return s.handler }

// RegisterGRPC registers the A2A 1.0 gRPC service (a2a-go's a2agrpc, with
// the specification's status codes: UNIMPLEMENTED for an unsupported
// A2A-Version, push notifications and unsupported operations) with g. It
// shares the tasks of the HTTP bindings. Authentication is g's
// interceptors' job; they pass the principal the way Config.Principal
// reads it.
func (s *Server) RegisterGRPC(g *grpc.Server) {
	a2apb.RegisterA2AServiceServer(g, grpcService{a2agrpc.NewHandler(s.rh)})
}

// Close cancels every running turn and waits for their children to stop or
// ctx to end; subscriptions waiting on idle tasks end. Call it after the
// HTTP server stopped accepting requests.
func (s *Server) Close(ctx context.Context) error { return s.exec.Close(ctx) }

// versionRouter sends a request to the A2A 1.0 or 0.3 handler of one
// binding by its A2A-Version header: 0.3 to the compatibility layer
// (a2av0), 1.0 and every other value to the 1.0 handler (whose call policy
// refuses unsupported versions with VersionNotSupported in the 1.0 wire
// format). Without the header a request is 0.3 by the spec; one that uses
// 1.0 method names or paths is served as 1.0, so that 1.0 clients that
// omit the header still work. Every response goes through preStream.
type versionRouter struct {
	v1, v03 http.Handler
	// legacy reports whether a request without A2A-Version uses the 0.3
	// names of the binding.
	legacy func(*http.Request) bool
	rest   bool
	// exec admits messages (its MaxActiveTasks) before a2a-go reads them.
	exec *Executor
}

func (vr versionRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v03 := false
	switch wireOf(strings.TrimSpace(r.Header.Get(a2a.SvcParamVersion))) {
	case wireV03:
		v03 = true
	case wireUnspecified:
		v03 = vr.legacy(r)
	}
	r, release, ok := vr.exec.admitHTTP(w, r, vr.rest, v03)
	if !ok {
		return
	}
	defer release()
	h := vr.v1
	switch {
	case v03:
		h = vr.v03
	case !vr.rest:
		protoFieldNames(r)
	}
	if v03 && vr.rest && strings.Contains(r.URL.Path, "/pushNotificationConfigs") {
		// No push notifications here: say so before a2a-go parses the body
		// (it does not read @a2a-js/sdk 0.3's config body, and would answer
		// a parse error instead).
		h := w.Header()
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(V03ErrorBody(-32003, "push notifications are not supported by this agent", nil))
		return
	}
	out := w
	var legacy *v03REST
	if v03 && vr.rest {
		legacy = &v03REST{w: w}
		out = legacy
	}
	ps := &preStream{w: out, rest: vr.rest}
	h.ServeHTTP(ps, r)
	ps.finish()
	if legacy != nil {
		legacy.finish()
	}
}

// legacyREST: the 0.3 HTTP+JSON paths start with /v1/.
func legacyREST(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, a2av0.RESTPathPrefix+"/") }
