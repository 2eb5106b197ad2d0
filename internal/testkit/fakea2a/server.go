package fakea2a

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// CancelMode is how the fake answers CancelTask.
type CancelMode int

const (
	// CancelHonour cancels the task (canceled terminal status).
	CancelHonour CancelMode = iota
	// CancelRefuse answers "task not cancelable" and lets the task run on.
	CancelRefuse
	// CancelHang never answers until the caller gives up or the server closes.
	CancelHang
	// CancelLateAnswer cancels the task as CancelHonour does, then holds
	// the answer until the caller gives up (or the server closes) and
	// drops it: a cancellation that reached the remote and took effect,
	// whose answer the caller never read.
	CancelLateAnswer
)

// Options configure a fake agent. The zero value serves a non-streaming
// JSON-RPC v1.0 agent whose tasks complete immediately.
type Options struct {
	// Name is the card's name (default "fake-agent").
	Name string
	// Streaming is the card's capabilities.streaming. Without it a2a-go
	// rejects streaming calls server-side and clients degrade to send.
	Streaming bool
	// Bindings lists the interfaces in card order (default JSONRPC).
	Bindings []a2a.TransportProtocol
	// ProtocolVersion "0.3" serves a v0.3 card and the v0.3 wire through
	// a2a-go's a2acompat/a2av0; "" or "1.0" serves v1.0.
	ProtocolVersion string
	// Behavior is the script of every task unless Choose is set.
	Behavior Behavior
	// Choose picks the script from a task's first message.
	Choose func(*a2a.Message) Behavior
	// RequireToken, when set, makes A2A calls without "Authorization:
	// Bearer <token>" fail with 401 and with another token fail with 403.
	RequireToken string
	// ProtectCard applies RequireToken (RequireAPIKey, OAuth2) to the card too.
	ProtectCard bool
	// RequireAPIKey, when set, makes A2A calls without the header
	// APIKeyHeader (default "X-API-Key") carrying this key fail with 401, and
	// with another key with 403.
	RequireAPIKey string
	APIKeyHeader  string
	// OAuth2, when set, serves an OAuth2 token endpoint at TokenURL that
	// issues access tokens for the client credentials grant of this client,
	// and makes A2A calls without one of those tokens fail (401/403).
	OAuth2 *OAuth2Client
	// SecuritySchemes and SecurityRequirements are the card's. An oauth2
	// clientCredentials flow without a TokenURL gets the fake's own.
	SecuritySchemes      a2a.NamedSecuritySchemes
	SecurityRequirements a2a.SecurityRequirementsOptions
	// CardBody, when set, is served verbatim as the card.
	CardBody []byte
	// CardMutate edits the card JSON object before it is served.
	CardMutate func(card map[string]any)
	// InterfaceBaseURL, when set, replaces the server's own URL in the
	// card's interface URLs (e.g. to point at another origin).
	InterfaceBaseURL string
	// Cancel is how CancelTask is answered.
	Cancel CancelMode
	// FollowUpSnapshot makes a streaming follow-up message to an existing
	// task (e.g. the answer to input-required) begin with the task's
	// snapshot as it stands when the message arrives, still in its
	// interrupted state, before a2a-go's stream of the resumed script. A
	// stream begins with the Task in A2A, and @a2a-js/sdk servers send
	// this snapshot; a2a-go's own server does not.
	FollowUpSnapshot bool
	// BusyFollowUps refuses the first N JSON-RPC messages sent to an
	// existing task (answers to input-required) with the JSON-RPC
	// internal error a2a-go's server answers while the turn that asked the
	// question is still winding down ("task execution is already in
	// progress"). The refused messages do not reach the agent.
	BusyFollowUps int
}

// OAuth2Client is the one client a fake's token endpoint knows.
type OAuth2Client struct {
	ID, Secret string
}

// Request is one HTTP request the fake received.
type Request struct {
	// Method is the A2A method (SendMessage, SendStreamingMessage, GetTask,
	// CancelTask, SubscribeToTask, ...), "AgentCard" for card fetches, or
	// "" when it could not be determined (e.g. REST rejected before routing).
	Method string
	// Binding is "JSONRPC", "HTTP+JSON" or "card".
	Binding string
	// Path is the URL path.
	Path string
	// Authorization reports whether an Authorization header was present.
	Authorization bool
	// APIKey reports whether the API key header was present.
	APIKey bool
	// Scope is the scope a token request asked for (Method "Token").
	Scope string
	// AuthStatus is 401 or 403 when the auth check rejected the request.
	AuthStatus int
	// Tenant is the tenant the a2a-go server saw for the call.
	Tenant string
	// TaskID is the task the call addressed (request id, or message task id).
	TaskID a2a.TaskID
	// HistoryLength is GetTask's (or SendMessage's) history length.
	HistoryLength *int
	// Metadata is CancelTask's (or SendMessage's) request metadata.
	Metadata map[string]any
	// ReturnImmediately is SendMessage's configuration flag.
	ReturnImmediately bool
	// MessageText is the text of the sent message.
	MessageText string
}

// Server is a running fake agent. It is closed by the test's cleanup.
type Server struct {
	t       testing.TB
	opts    Options
	srv     *httptest.Server
	card    []byte
	handler a2asrv.RequestHandler

	closing   chan struct{}
	closed    bool
	closeOnce sync.Once

	busyRefused int // follow-ups refused so far (Options.BusyFollowUps); mu
	execWG      sync.WaitGroup

	mu        sync.Mutex
	requests  []*Request
	runs      map[a2a.TaskID]*taskRun
	subs      map[a2a.TaskID]chan struct{}
	releases  map[a2a.TaskID]chan struct{}
	cancelReq map[*http.Request]context.CancelFunc
	issued    map[string]bool // OAuth2 access tokens issued
}

type taskRun struct {
	behavior Behavior
	next     int
}

// New starts a fake agent and registers its Close with t.Cleanup.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "fake-agent"
	}
	if len(opts.Bindings) == 0 {
		opts.Bindings = []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC}
	}
	s := &Server{
		t: t, opts: opts, closing: make(chan struct{}),
		runs: map[a2a.TaskID]*taskRun{}, subs: map[a2a.TaskID]chan struct{}{},
		releases: map[a2a.TaskID]chan struct{}{}, cancelReq: map[*http.Request]context.CancelFunc{},
		issued: map[string]bool{},
	}
	if opts.APIKeyHeader == "" {
		opts.APIKeyHeader = "X-API-Key"
		s.opts.APIKeyHeader = opts.APIKeyHeader
	}
	s.srv = httptest.NewUnstartedServer(nil)
	s.srv.Config.ErrorLog = nil
	base := "http://" + s.srv.Listener.Addr().String()
	card := s.buildCard(base)

	caps := card.Capabilities
	handler := a2asrv.NewHandler(&executor{s: s},
		a2asrv.WithCallInterceptors(&recorder{s: s}),
		a2asrv.WithCapabilityChecks(&caps),
		a2asrv.WithLogger(slog.New(slog.DiscardHandler)),
	)
	s.handler = handler
	var jsonrpcH, restH http.Handler
	if s.legacy() {
		jsonrpcH = a2av0.NewJSONRPCHandler(handler)
		restH = a2av0.NewRESTHandler(handler)
	} else {
		jsonrpcH = a2asrv.NewJSONRPCHandler(handler)
		restH = restWithTenant(a2asrv.NewRESTHandler(handler), a2asrv.NewTenantRESTHandler("/{*}", handler))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.card)
	})
	mux.HandleFunc("POST /oauth2/token", s.token)
	mux.Handle("/jsonrpc", jsonrpcH)
	mux.Handle("/rest/", http.StripPrefix("/rest", restH))
	s.srv.Config.Handler = s.middleware(mux)
	s.srv.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *Server) legacy() bool { return strings.HasPrefix(s.opts.ProtocolVersion, "0.") }

func (s *Server) buildCard(base string) *a2a.AgentCard {
	ifBase := base
	if s.opts.InterfaceBaseURL != "" {
		ifBase = strings.TrimRight(s.opts.InterfaceBaseURL, "/")
	}
	version := a2a.Version
	if s.legacy() {
		version = a2av0.Version
	}
	schemes := a2a.NamedSecuritySchemes{}
	for name, sc := range s.opts.SecuritySchemes {
		if o, ok := sc.(a2a.OAuth2SecurityScheme); ok {
			if f, ok := o.Flows.(a2a.ClientCredentialsOAuthFlow); ok && f.TokenURL == "" {
				f.TokenURL = base + "/oauth2/token"
				o.Flows = f
				sc = o
			}
		}
		schemes[name] = sc
	}
	if len(schemes) == 0 {
		schemes = nil
	}
	card := &a2a.AgentCard{
		Name:                 s.opts.Name,
		Description:          "programmable fake A2A agent",
		Version:              "1.0.0",
		DefaultInputModes:    []string{"text/plain"},
		DefaultOutputModes:   []string{"text/plain"},
		Capabilities:         a2a.AgentCapabilities{Streaming: s.opts.Streaming},
		SecuritySchemes:      schemes,
		SecurityRequirements: s.opts.SecurityRequirements,
		Skills:               []a2a.AgentSkill{{ID: "fake", Name: "fake", Description: "scripted", Tags: []string{"test"}}},
	}
	for _, b := range s.opts.Bindings {
		u := ifBase + "/jsonrpc"
		if b == a2a.TransportProtocolHTTPJSON {
			u = ifBase + "/rest"
		}
		card.SupportedInterfaces = append(card.SupportedInterfaces, &a2a.AgentInterface{URL: u, ProtocolBinding: b, ProtocolVersion: version})
	}
	var raw []byte
	var err error
	if s.legacy() {
		p := a2av0.NewStaticAgentCardProducer(card).(a2asrv.AgentCardJSONProducer)
		raw, err = p.CardJSON(context.Background())
	} else {
		raw, err = json.Marshal(card)
	}
	if err != nil {
		s.t.Fatalf("fakea2a: build card: %v", err)
	}
	if s.opts.CardMutate != nil {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			s.t.Fatalf("fakea2a: card: %v", err)
		}
		s.opts.CardMutate(m)
		if raw, err = json.Marshal(m); err != nil {
			s.t.Fatalf("fakea2a: card: %v", err)
		}
	}
	if s.opts.CardBody != nil {
		raw = s.opts.CardBody
	}
	s.card = raw
	return card
}

// restWithTenant routes "/{tenant}/tasks/..." to the tenant-aware handler
// and plain paths to the plain one.
func restWithTenant(plain, tenant http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		switch {
		case first == "tasks", first == "extendedAgentCard", strings.HasPrefix(first, "message:"):
			plain.ServeHTTP(w, r)
		default:
			tenant.ServeHTTP(w, r)
		}
	})
}

// URL is the server's base URL (http://127.0.0.1:port).
func (s *Server) URL() string { return s.srv.URL }

// TokenURL is the URL of the OAuth2 token endpoint (Options.OAuth2).
func (s *Server) TokenURL() string { return s.srv.URL + "/oauth2/token" }

// token serves the client credentials grant for Options.OAuth2.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	rec, _ := r.Context().Value(reqKey{}).(*Request)
	w.Header().Set("Content-Type", "application/json")
	_ = r.ParseForm()
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if rec != nil {
		s.mu.Lock()
		rec.Scope = r.PostForm.Get("scope")
		s.mu.Unlock()
	}
	c := s.opts.OAuth2
	if c == nil || id != c.ID || secret != c.Secret || r.PostForm.Get("grant_type") != "client_credentials" {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"invalid_client"}`)
		return
	}
	s.mu.Lock()
	tok := fmt.Sprintf("fake-access-token-%d", len(s.issued)+1)
	s.issued[tok] = true
	s.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
}

// authStatus is the status an A2A call with header h gets from the
// configured auth checks: 0 (accepted), 401 (missing) or 403 (wrong).
func (s *Server) authStatus(h http.Header) int {
	check := func(got, prefix string, ok func(string) bool) int {
		switch {
		case got == "":
			return http.StatusUnauthorized
		case strings.HasPrefix(got, prefix) && ok(strings.TrimPrefix(got, prefix)):
			return 0
		}
		return http.StatusForbidden
	}
	if s.opts.RequireToken != "" {
		if st := check(h.Get("Authorization"), "Bearer ", func(v string) bool { return v == s.opts.RequireToken }); st != 0 {
			return st
		}
	}
	if s.opts.RequireAPIKey != "" {
		if st := check(h.Get(s.opts.APIKeyHeader), "", func(v string) bool { return v == s.opts.RequireAPIKey }); st != 0 {
			return st
		}
	}
	if s.opts.OAuth2 != nil {
		return check(h.Get("Authorization"), "Bearer ", func(v string) bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.issued[v]
		})
	}
	return 0
}

// CardURL is the URL of the Agent Card.
func (s *Server) CardURL() string { return s.srv.URL + "/.well-known/agent-card.json" }

// CardBytes returns the card document as served.
func (s *Server) CardBytes() []byte { return bytes.Clone(s.card) }

// Requests returns a copy of every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = *r
	}
	return out
}

// RequestsFor returns the requests whose Method is method.
func (s *Server) RequestsFor(method string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Method == method {
			out = append(out, r)
		}
	}
	return out
}

// Tasks returns the ids of the tasks created so far.
func (s *Server) Tasks() []a2a.TaskID {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]a2a.TaskID, 0, len(s.runs))
	for id := range s.runs {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// TaskState returns the state of task id as the fake's task store holds
// it, read without a recorded request.
func (s *Server) TaskState(ctx context.Context, id a2a.TaskID) (a2a.TaskState, error) {
	task, err := s.handler.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
	if err != nil {
		return "", err
	}
	return task.Status.State, nil
}

// Release unblocks an AwaitRelease step of the task (now or when reached).
func (s *Server) Release(taskID a2a.TaskID) {
	ch := s.signal(s.releases, taskID)
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

func (s *Server) signal(m map[a2a.TaskID]chan struct{}, id a2a.TaskID) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := m[id]
	if !ok {
		ch = make(chan struct{})
		m[id] = ch
	}
	return ch
}

// Close unblocks hanging tasks, stops the server and waits for its task
// executions to return. It is idempotent and registered with t.Cleanup.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.closing)
		for _, cancel := range s.cancelReq {
			cancel()
		}
		s.mu.Unlock()
		s.srv.CloseClientConnections()
		s.srv.Close()
		s.execWG.Wait()
	})
}

type reqKey struct{}

type streamKey struct{}

func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &Request{Path: r.URL.Path, Authorization: r.Header.Get("Authorization") != "", APIKey: r.Header.Get(s.opts.APIKeyHeader) != ""}
		var rpc struct {
			ID     any             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		switch {
		case r.URL.Path == "/.well-known/agent-card.json":
			rec.Method, rec.Binding = "AgentCard", "card"
		case r.URL.Path == "/oauth2/token":
			rec.Method, rec.Binding = "Token", "oauth2"
		case r.URL.Path == "/jsonrpc":
			rec.Binding = string(a2a.TransportProtocolJSONRPC)
			body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
			_ = r.Body.Close()
			r.Body = io.NopCloser(bytes.NewReader(body))
			if json.Unmarshal(body, &rpc) == nil {
				rec.Method = rpc.Method
			}
		case strings.HasPrefix(r.URL.Path, "/rest/"):
			rec.Binding = string(a2a.TransportProtocolHTTPJSON)
		}
		s.mu.Lock()
		s.requests = append(s.requests, rec)
		s.mu.Unlock()

		if rec.Binding != "oauth2" && (rec.Binding != "card" || s.opts.ProtectCard) {
			switch st := s.authStatus(r.Header); st {
			case 0:
			case http.StatusUnauthorized:
				rec.AuthStatus = st
				w.Header().Set("WWW-Authenticate", `Bearer realm="fakea2a"`)
				http.Error(w, "missing credentials", st)
				return
			default:
				rec.AuthStatus = st
				http.Error(w, "invalid credentials", st)
				return
			}
		}

		ctx, cancel := context.WithCancel(context.WithValue(r.Context(), reqKey{}, rec))
		defer cancel()
		s.mu.Lock()
		s.cancelReq[r] = cancel
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.cancelReq, r)
			s.mu.Unlock()
		}()

		if (rec.Method == "SendMessage" || rec.Method == "SendStreamingMessage") && s.refuseBusy(rpc.Params) {
			// As a2a-go's server answers: a JSON-RPC error, in an SSE frame
			// on a stream.
			idJSON, _ := json.Marshal(rpc.ID)
			refusal := `{"jsonrpc":"2.0","id":` + string(idJSON) + `,"error":{"code":-32603,"message":"task execution is already in progress"}}`
			if rec.Method == "SendStreamingMessage" {
				w.Header().Set("Content-Type", "text/event-stream")
				refusal = "data: " + refusal + "\n\n"
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
			_, _ = w.Write([]byte(refusal))
			return
		}
		if s.opts.Cancel == CancelLateAnswer && (rec.Method == "CancelTask" || strings.HasSuffix(r.URL.Path, ":cancel")) {
			// The cancellation takes effect whatever the caller does; its
			// answer is dropped once the caller has given up.
			next.ServeHTTP(httptest.NewRecorder(), r.WithContext(context.WithoutCancel(ctx)))
			select {
			case <-r.Context().Done():
			case <-s.closing:
			}
			return
		}
		streaming := rec.Method == "SendStreamingMessage" || strings.HasSuffix(r.URL.Path, "message:stream")
		if streaming && rec.Method == "SendStreamingMessage" {
			var p a2a.SendMessageRequest
			if legacyMsg := s.legacy(); !legacyMsg && json.Unmarshal(rpc.Params, &p) == nil && p.Message != nil {
				if b := s.choose(p.Message); b.RawStream != nil {
					s.writeRaw(ctx, w, rpc.ID, b.RawStream)
					return
				}
				if s.opts.FollowUpSnapshot && p.Message.TaskID != "" {
					if task, err := s.handler.GetTask(ctx, &a2a.GetTaskRequest{ID: p.Message.TaskID}); err == nil {
						w = &snapshotWriter{ResponseWriter: w, frame: jsonrpcFrame(rpc.ID, task)}
					}
				}
			}
		}
		if streaming {
			cw := &connWriter{rw: w, cancel: cancel, frameCh: make(chan struct{}, 1)}
			ctx = context.WithValue(ctx, streamKey{}, cw)
			w = cw
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// refuseBusy reports whether a message (JSON-RPC params) to an existing
// task is one of the Options.BusyFollowUps to refuse, and counts it.
func (s *Server) refuseBusy(params json.RawMessage) bool {
	var p struct {
		Message struct {
			TaskID string `json:"taskId"`
		} `json:"message"`
	}
	if s.opts.BusyFollowUps == 0 || json.Unmarshal(params, &p) != nil || p.Message.TaskID == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busyRefused >= s.opts.BusyFollowUps {
		return false
	}
	s.busyRefused++
	return true
}

func (s *Server) choose(msg *a2a.Message) Behavior {
	if s.opts.Choose != nil {
		return s.opts.Choose(msg)
	}
	return s.opts.Behavior
}

// jsonrpcFrame is one SSE data frame of a JSON-RPC stream carrying ev.
func jsonrpcFrame(id any, ev a2a.Event) []byte {
	idJSON, _ := json.Marshal(id)
	return []byte(`data: {"jsonrpc":"2.0","id":` + string(idJSON) + `,"result":` + mustJSON(a2a.StreamResponse{Event: ev}) + "}\n\n")
}

// snapshotWriter writes frame first in a successful streaming response,
// right after its headers (Options.FollowUpSnapshot).
type snapshotWriter struct {
	http.ResponseWriter
	frame []byte
	done  bool
}

func (w *snapshotWriter) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	if !w.done && code == http.StatusOK && strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		w.done = true
		_, _ = w.ResponseWriter.Write(w.frame)
	}
}

func (w *snapshotWriter) Write(p []byte) (int, error) {
	if !w.done {
		w.WriteHeader(http.StatusOK)
		w.done = true
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (DropStream).
func (w *snapshotWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *snapshotWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) writeRaw(ctx context.Context, w http.ResponseWriter, id any, frames []string) {
	idJSON, _ := json.Marshal(id)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for _, f := range frames {
		if ctx.Err() != nil {
			return
		}
		_, _ = io.WriteString(w, `data: {"jsonrpc":"2.0","id":`+string(idJSON)+`,"result":`+f+"}\n\n")
		if fl != nil {
			fl.Flush()
		}
	}
}

// connWriter wraps a streaming response so a script can cut it.
type connWriter struct {
	rw     http.ResponseWriter
	cancel context.CancelFunc

	mu      sync.Mutex
	frames  int
	dropped bool
	frameCh chan struct{}
}

func (c *connWriter) Header() http.Header { return c.rw.Header() }

func (c *connWriter) WriteHeader(code int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dropped {
		c.rw.WriteHeader(code)
	}
}

func (c *connWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped {
		return 0, io.ErrClosedPipe
	}
	n, err := c.rw.Write(p)
	if bytes.HasPrefix(p, []byte("data:")) {
		c.frames++
		select {
		case c.frameCh <- struct{}{}:
		default:
		}
	}
	return n, err
}

func (c *connWriter) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dropped {
		if f, ok := c.rw.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// waitFrames waits until n data frames were written (or timeout/ctx).
func (c *connWriter) waitFrames(ctx context.Context, n int, timeout time.Duration) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		got := c.frames
		c.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-c.frameCh:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// drop cuts the response: abruptly (hijack and close the TCP connection)
// or cleanly (end the handler so the chunked response terminates).
func (c *connWriter) drop(abrupt bool) {
	c.mu.Lock()
	if !c.dropped {
		c.dropped = true
		if abrupt {
			if conn, _, err := http.NewResponseController(c.rw).Hijack(); err == nil {
				_ = conn.Close()
			}
		}
	}
	c.mu.Unlock()
	c.cancel()
}
