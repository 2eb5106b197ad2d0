package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/httpguard"
	"github.com/seed0634/agentadaptor/internal/telemetry"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
	"github.com/seed0634/agentadaptor/pkg/credentials"
	"github.com/seed0634/agentadaptor/pkg/host"
	"google.golang.org/grpc"
)

func init() {
	register("a2a serve", "expose a local agent CLI as an A2A agent (card at /.well-known/agent-card.json)", a2aServeCmd)
}

// Timeouts of the a2a serve HTTP server. There is no write timeout: it
// would cut the event streams of long turns.
const (
	a2aReadHeaderTimeout = 10 * time.Second
	a2aReadTimeout       = 60 * time.Second
	a2aIdleTimeout       = 120 * time.Second
	a2aShutdownGrace     = 10 * time.Second
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func a2aServeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("a2a serve", "a2a serve --adapter NAME [--addr 127.0.0.1:9001] [--auth-token env:NAME] [--public-url URL] [flags]")
	adapterName := fs.String("adapter", "", "adapter to expose: "+strings.Join(adapterNames(), ", ")+" (required)")
	addr := fs.String("addr", "127.0.0.1:9001", "listen address; a non-loopback address needs --auth-token")
	grpcAddr := fs.String("grpc-addr", "", "also serve the A2A gRPC binding on this address (off by default)")
	name := fs.String("name", "", "agent name on the card (default agentadaptor-<adapter>)")
	description := fs.String("description", "", "agent description on the card")
	publicURL := fs.String("public-url", "", "URL clients reach this server at, written into the card's interface URLs (default: http://<listen address>)")
	maxConns := fs.Int("max-connections", httpguard.DefaultMaxConnections, "connections served at once on each listener; beyond it a new one waits until another closes")
	var allowedHosts, authTokens stringList
	fs.Var(&allowedHosts, "allowed-host", "a Host name this server answers to besides loopback, the --addr host and the --public-url host (repeatable)")
	fs.Var(&authTokens, "auth-token", "require a bearer token, given as a reference: env:NAME or file:/path, never the token itself (repeatable; each token is its own principal)")
	scenario := fs.String("scenario", "", "scenario file (scripted adapter)")
	model := fs.String("model", "", "model, in the CLI's naming")
	binary := fs.String("binary", "", "the CLI executable (default: the adapter's usual name on PATH; required for acp)")
	var agentArgs stringList
	fs.Var(&agentArgs, "arg", "an argument of the agent (acp adapter, repeatable), e.g. --arg=--experimental-acp")
	workDir := fs.String("work-dir", "", "working directory of the agent (default: current)")
	timeout := fs.Duration("timeout", 0, "stop each turn after this long (0 = no limit)")
	maxActive := fs.Int("max-active-tasks", 8, "task turns (agent CLI processes) running at once; beyond it a new message is refused (HTTP+JSON 429 with Retry-After), running tasks are unaffected")
	exposeReasoning := fs.Bool("expose-reasoning", false, "publish reasoning as working status messages")
	exposeTools := fs.Bool("expose-tool-calls", false, "publish tool calls and results as working status messages")
	exposeDiag := fs.Bool("expose-diagnostics", false, "publish diagnostics as working status messages")
	logFormat := fs.String("log-format", logText, "log records as text (key=value) or json lines")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "agentadaptor a2a serve: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() != 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	if *adapterName == "" {
		return usageErr("--adapter is required (one of %s)", strings.Join(adapterNames(), ", "))
	}
	if *scenario != "" && *adapterName != "scripted" {
		return usageErr("--scenario is for the scripted adapter only")
	}
	if *adapterName == "scripted" && *scenario == "" {
		return usageErr("the scripted adapter needs --scenario FILE")
	}
	if *maxActive < 1 {
		return usageErr("--max-active-tasks %d: must be at least 1", *maxActive)
	}
	logger, err := newLogger(stderr, *logFormat)
	if err != nil {
		return usageErr("%v", err)
	}
	// Keep the processes we start from reading our environment and memory.
	if err := hideProcess(); err != nil {
		fmt.Fprintf(stderr, "agentadaptor a2a serve: making the process non-dumpable: %v\n", err)
		return 1
	}
	if *maxConns <= 0 {
		return usageErr("--max-connections %d: must be at least 1", *maxConns)
	}
	tokens, err := resolveAuthTokens(authTokens)
	if err != nil {
		return usageErr("%v", err)
	}
	for _, a := range []struct{ flag, addr string }{{"--addr", *addr}, {"--grpc-addr", *grpcAddr}} {
		if a.addr == "" {
			continue
		}
		loopback, err := loopbackAddr(a.addr)
		if err != nil {
			return usageErr("%s %q: %v", a.flag, a.addr, err)
		}
		if !loopback && len(tokens) == 0 {
			return usageErr("refusing to serve the local agent on non-loopback %s %s without authentication: export a token (16+ characters) and add --auth-token env:NAME", a.flag, a.addr)
		}
	}
	if *publicURL == "" && unspecifiedHost(*addr) {
		return usageErr("--addr %s listens on every interface: say which URL clients use with --public-url http://HOST:PORT", *addr)
	}
	var public *url.URL
	if *publicURL != "" {
		if public, err = parsePublicURL(*publicURL); err != nil {
			return usageErr("--public-url: %v", err)
		}
	}

	if len(agentArgs) > 0 && *adapterName != "acp" {
		return usageErr("--arg is for the acp adapter only")
	}
	adapter, err := newAdapter(adapterSpec{Name: *adapterName, Scenario: *scenario, Binary: *binary, Args: agentArgs})
	if err != nil {
		return usageErr("%v", err)
	}
	// Traces per the OTEL_* environment (docs/design.md#observability);
	// flushed on exit.
	tracing, err := telemetry.NewTracing(ctx, "agentadaptor-a2a-serve")
	if err != nil {
		return usageErr("%v", err)
	}
	defer shutdownTracing(tracing, stderr, "a2a serve")
	if tracing.Enabled() {
		// The exporter's errors go to the log, rate-limited.
		telemetry.HandleErrors(logger)
	}
	tel := telemetry.NewA2AServe(tracing)
	// The agent CLIs, and everything they run, inherit neither the
	// tokens' variables nor the tracing exporter's credentials.
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(adapter), agentadaptor.WithLogger(logger),
		agentadaptor.WithRunDefaults(agentadaptor.WithEnvDeny(append(envRefNames(authTokens), host.CredentialEnv...)...)))
	if err != nil {
		return usageErr("%v", err)
	}
	var opts []agentadaptor.RunOption
	if *model != "" {
		opts = append(opts, agentadaptor.WithModel(*model))
	}
	if *workDir != "" {
		opts = append(opts, agentadaptor.WithWorkDir(*workDir))
	}
	if *timeout > 0 {
		opts = append(opts, agentadaptor.WithTimeout(*timeout))
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "agentadaptor a2a serve: %v\n", err)
		return 1
	}
	defer ln.Close()
	ln = httpguard.LimitListener(ln, *maxConns)
	if public == nil {
		public = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	}
	var gln net.Listener
	cardGRPC := ""
	if *grpcAddr != "" {
		if gln, err = net.Listen("tcp", *grpcAddr); err != nil {
			fmt.Fprintf(stderr, "agentadaptor a2a serve: --grpc-addr: %v\n", err)
			return 1
		}
		defer gln.Close()
		gln = httpguard.LimitListener(gln, *maxConns)
		_, port, _ := net.SplitHostPort(gln.Addr().String())
		cardGRPC = net.JoinHostPort(public.Hostname(), port)
	}
	guard, err := httpguard.New(httpguard.Config{
		Addr:         *addr,
		AllowedHosts: append([]string{public.Hostname()}, allowedHosts...),
		Tokens:       tokens,
		Public:       []string{a2abridge.PathAgentCard, a2abridge.PathLegacyAgentCard},
		Realm:        "agentadaptor a2a serve",
	})
	if err != nil {
		return usageErr("%v", err)
	}
	base := strings.TrimRight(public.String(), "/")
	bridge, err := a2abridge.NewServer(a2abridge.Config{
		SDK: sdk, Adapter: adapter.Name(), RunOptions: opts, Logger: logger,
		Exposure:       a2abridge.Exposure{Reasoning: *exposeReasoning, ToolCalls: *exposeTools, Diagnostics: *exposeDiag},
		Card:           a2abridge.CardOptions{Name: *name, Description: *description, BaseURL: base, GRPCAddr: cardGRPC, BearerAuth: len(tokens) > 0},
		Principal:      httpguard.Principal,
		Observer:       tel.TurnObserver(),
		MaxActiveTasks: *maxActive,
		OnRefused:      tel.OnRefused(),
	})
	if err != nil {
		return usageErr("%v", err)
	}
	// GET /metrics sits behind the same admission as the agent.
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", tel.MetricsHandler())
	mux.Handle("/", tel.Middleware(bridge.Handler()))
	srv := newA2AHTTPServer(admitA2A(guard, mux))
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	var gsrv *grpc.Server
	if gln != nil {
		// Admission first: refused calls are neither traced nor measured,
		// as on HTTP.
		gsrv = grpc.NewServer(append(grpcAdmission(guard), tel.GRPCServerOptions()...)...)
		bridge.RegisterGRPC(gsrv)
		go func() { errc <- gsrv.Serve(gln) }()
		fmt.Fprintf(stderr, "agentadaptor a2a serve: gRPC binding on %s\n", gln.Addr())
	}
	auth := "no authentication, loopback only"
	if len(tokens) > 0 {
		auth = fmt.Sprintf("bearer tokens required, %d principal(s)", len(tokens))
	}
	// The card URL ends at the first space: scripts read it from this line.
	fmt.Fprintf(stderr, "agentadaptor a2a serve: %s agent card at %s%s (listening on %s, %s)\n",
		adapter.Name(), base, a2abridge.PathAgentCard, ln.Addr(), auth)

	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), a2aShutdownGrace)
	defer cancel()
	// Streams stay open until their turn ends: cancel the turns first.
	_ = bridge.Close(sctx)
	_ = srv.Shutdown(sctx)
	if gsrv != nil {
		stopGRPC(sctx, gsrv)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, grpc.ErrServerStopped) {
		fmt.Fprintf(stderr, "agentadaptor a2a serve: %v\n", err)
		return 1
	}
	fmt.Fprintln(stderr, "agentadaptor a2a serve: stopped")
	return 0
}

// newA2AHTTPServer is the HTTP server of a2a serve: bounded header, body
// and idle times, and no write timeout, which would cut the event streams
// of long turns.
func newA2AHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: a2aReadHeaderTimeout,
		ReadTimeout:       a2aReadTimeout,
		IdleTimeout:       a2aIdleTimeout,
	}
}

// resolveAuthTokens resolves each --auth-token reference into the token
// it names; the reference itself is the principal. (The agent CLIs do not
// inherit an env: reference's variable: see envRefNames.) Errors name the
// reference, never a token: an argument that is not a reference is
// refused without being repeated, because it may be a token.
func resolveAuthTokens(refs []string) (map[string]string, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	tokens := map[string]string{}
	for _, ref := range refs {
		if !credentials.IsRef(ref) {
			return nil, errors.New("--auth-token takes a reference, env:NAME or file:/path, never the token itself (argv is visible to every user)")
		}
		cred, err := credentials.Resolve(ref)
		if err != nil {
			return nil, fmt.Errorf("--auth-token: %w", err)
		}
		if _, dup := tokens[ref]; dup {
			return nil, fmt.Errorf("--auth-token %s is given twice", ref)
		}
		tokens[ref] = credentials.Secret(cred)
	}
	return tokens, nil
}

// envRefNames are the variables the env: references among refs name: the
// agent CLIs never inherit them (agentadaptor.WithEnvDeny).
func envRefNames(refs []string) []string {
	var out []string
	for _, ref := range refs {
		if name, ok := strings.CutPrefix(ref, "env:"); ok {
			out = append(out, name)
		}
	}
	return out
}

// loopbackAddr reports whether a listen address binds loopback only.
func loopbackAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback(), nil
}

// unspecifiedHost reports whether addr listens on every interface.
func unspecifiedHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}

func parsePublicURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(s, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q must be an http(s) URL such as https://agents.example.com/research (no credentials, query or fragment)", s)
	}
	return u, nil
}

func stopGRPC(ctx context.Context, g *grpc.Server) {
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		g.Stop()
		<-done
	}
}
