package sse

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
)

// Protocol selects what the handler streams.
type Protocol int

const (
	// ProtocolAGUI streams AG-UI events (the default).
	ProtocolAGUI Protocol = iota
	// ProtocolRaw streams the run's StreamPayload values as JSON, one per frame.
	ProtocolRaw
)

// String returns "agui" or "raw".
func (p Protocol) String() string {
	if p == ProtocolRaw {
		return "raw"
	}
	return "agui"
}

// Defaults of the handler's options.
const (
	DefaultMaxRequestBytes = 1 << 20
	DefaultKeepAlive       = 15 * time.Second
)

// cancelWait bounds how long the handler waits for a run it cancelled
// (client gone) to end before the request returns.
const cancelWait = 10 * time.Second

// Option configures a [Handler].
type Option func(*config)

// ForwardedPropsFunc lets the host turn a request's forwardedProps into run
// options. It runs before the run starts; an error rejects the request with
// 400 and the error's text. It must only return options the host is willing
// to let any client choose.
type ForwardedPropsFunc func(ctx context.Context, props any) ([]agentadaptor.RunOption, error)

// SessionKeyFunc maps a request and its AG-UI threadId to the run's session
// key ("" for none). Hosts with users scope keys per user with it.
type SessionKeyFunc func(r *http.Request, threadID string) string

type config struct {
	subagents      SubagentBus
	protocol       Protocol
	origins        map[string]bool
	maxBytes       int64
	keepAlive      time.Duration
	runOpts        []agentadaptor.RunOption
	detach         bool
	onRunStart     func(runID string, h *agentadaptor.RunHandle)
	registry       *Registry
	policy         PromptPolicy
	forwarded      ForwardedPropsFunc
	sessionKey     SessionKeyFunc
	agui           agui.Options
	logger         *slog.Logger
	noStreamingOpt bool
	owner          func(*http.Request) string
	maxActive      int
	runHook        RunHook
}

// WithProtocol selects AG-UI events (default) or raw StreamPayload JSON.
func WithProtocol(p Protocol) Option { return func(c *config) { c.protocol = p } }

// WithAllowedOrigins allows cross-origin requests from exactly these origins
// (scheme://host[:port]); there is no wildcard. Without it, only same-origin
// browser requests (Origin equal to the request's own host) and requests
// without an Origin header are served; other origins get 403.
func WithAllowedOrigins(origins ...string) Option {
	return func(c *config) {
		for _, o := range origins {
			c.origins[o] = true
		}
	}
}

// WithMaxRequestBytes caps the request body (default DefaultMaxRequestBytes);
// a larger body gets 413.
func WithMaxRequestBytes(n int64) Option { return func(c *config) { c.maxBytes = n } }

// WithKeepAlive sets the period of ": keep-alive" comments on an idle stream
// (default DefaultKeepAlive); zero or negative disables them.
func WithKeepAlive(d time.Duration) Option { return func(c *config) { c.keepAlive = d } }

// WithRunOptions appends options to every run the handler starts, after the
// handler's own (WithStreaming, WithSessionKey), so they may override them.
func WithRunOptions(opts ...agentadaptor.RunOption) Option {
	return func(c *config) { c.runOpts = append(c.runOpts, opts...) }
}

// WithDetachOnDisconnect lets a run continue to completion when its client
// disconnects. By default a disconnect cancels the run.
func WithDetachOnDisconnect() Option { return func(c *config) { c.detach = true } }

// WithOnRunStart registers a hook called once a run has started, with its
// AG-UI runId, before the first event is written. It must not block.
func WithOnRunStart(f func(runID string, h *agentadaptor.RunHandle)) Option {
	return func(c *config) { c.onRunStart = f }
}

// WithRegistry makes the handler record its runs in r (default: a registry of
// its own, see [Handler.Registry]).
func WithRegistry(r *Registry) Option { return func(c *config) { c.registry = r } }

// WithPromptPolicy sets how system/developer messages and context entries
// reach the prompt (see [Prompt]).
func WithPromptPolicy(p PromptPolicy) Option { return func(c *config) { c.policy = p } }

// WithForwardedProps installs the host's interpretation of forwardedProps.
// Without it forwardedProps are ignored: a client can never select the
// adapter, the command, a URL or any other run setting through them.
func WithForwardedProps(f ForwardedPropsFunc) Option { return func(c *config) { c.forwarded = f } }

// WithSessionKeyFunc replaces the default session key, which is the
// client's threadId as is.
func WithSessionKeyFunc(f SessionKeyFunc) Option { return func(c *config) { c.sessionKey = f } }

// WithTranslatorOptions sets the AG-UI translator's clock, id generator and
// reasoning mode; its ThreadID and RunID are set per request.
func WithTranslatorOptions(o agui.Options) Option { return func(c *config) { c.agui = o } }

// WithLogger sets the logger for problems that cannot reach the client
// (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// SubagentBus takes over the streaming of a started run, so that the parent's
// events and its delegations' events reach the client as one ordered stream
// (implemented by pkg/bridges/subagentstream.Hub). ServeRun owns w until it
// returns: it writes the SSE headers and frames and decides what a client
// disconnect does to the run. threadID and runID are the AG-UI ids of the
// stream; the run's key is [RunKey] of the request's principal and runID.
type SubagentBus interface {
	ServeRun(w http.ResponseWriter, r *http.Request, h *agentadaptor.RunHandle, threadID, runID string)
}

// WithSubagentBus streams every run through m (AG-UI protocol only) instead
// of the handler's own parent-only stream.
func WithSubagentBus(m SubagentBus) Option { return func(c *config) { c.subagents = m } }

// WithOwner names the principal a request acts for (e.g. from the host's
// authentication): runIds are namespaced per principal ([RunKey]). Each run
// belongs to the principal that started it ([Registry.Owner]); another
// principal may start a run of its own with the same runId (no 409), and
// the cancel route does not find a run of another principal (404).
// Scope session keys per principal with [WithSessionKeyFunc] too.
func WithOwner(f func(*http.Request) string) Option { return func(c *config) { c.owner = f } }

// WithMaxActiveRuns bounds the runs the handler's registry holds at once
// (0: no limit): beyond it a POST is answered 429 with Retry-After.
func WithMaxActiveRuns(n int) Option { return func(c *config) { c.maxActive = n } }

// RunHook lets the host take part in each run the handler starts, e.g. for
// its telemetry (docs/design.md#observability). It is called once the
// request was admitted, just before the run starts: opts are appended to the
// run's options (after every other option), and started, if not nil, is
// called right after the start with the run's AG-UI runId ("" when the start
// failed), its handle (nil then) and the start error. Neither may block.
type RunHook func(r *http.Request) (opts []agentadaptor.RunOption, started func(runID string, h *agentadaptor.RunHandle, err error))

// WithRunHook installs a [RunHook].
func WithRunHook(f RunHook) Option { return func(c *config) { c.runHook = f } }

// RunIDKeeper is implemented by a [SubagentBus] that keeps ended runs for
// reconnects: a client-chosen runId it still retains in the client's
// namespace is refused with 409, so that a retained stream is never
// replaced by another run. key is the run key ([RunKey]) of the principal's
// runId.
type RunIDKeeper interface {
	RunIDInUse(key string) bool
}

// WithoutStreaming stops the handler from adding agentadaptor.WithStreaming()
// to runs (text then arrives as whole messages).
func WithoutStreaming() Option { return func(c *config) { c.noStreamingOpt = true } }
