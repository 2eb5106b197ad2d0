package registry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/seed0634/agentadaptor/internal/sanitize"
	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
	"github.com/seed0634/agentadaptor/pkg/credentials"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// When the host fetches an agent's card (RemoteAgentSpec.FetchCard).
const (
	// FetchCardStartup fetches and fingerprints the card in [Registry.Load],
	// before the tool is exposed; a malformed card keeps the agent out of
	// the tool list.
	FetchCardStartup = "startup"
	// FetchCardFirstCall fetches it on the agent's first delegation (the
	// default); a malformed card fails that call with agent_unavailable.
	FetchCardFirstCall = "first_call"
)

// Provenance says who wrote a RemoteAgentSpec. Only host-written specs are
// accepted: a spec whose URLs came from a model (tool arguments, model
// output) is refused by [New], so a model can never make the host contact
// an endpoint of its choosing.
type Provenance string

const (
	// ProvenanceHost marks a spec written by the host (code or config).
	// The zero value means the same: struct literals in host code are host-written.
	ProvenanceHost Provenance = "host"
	// ProvenanceModel marks a spec (or URL) that was derived from model
	// output. New refuses it.
	ProvenanceModel Provenance = "model"
)

// RemoteCapabilities is what the host knows a remote agent can do. For an
// agent with a card it is read from the card, conservatively: anything not
// clearly advertised is false. For an A2A agent configured by EndpointURL
// only (no card), the host declares it in the spec.
type RemoteCapabilities struct {
	// Streaming: the agent streams task events.
	Streaming bool `json:"streaming"`
	// OutputModes are the card's default output media types.
	OutputModes []string `json:"output_modes,omitempty"`
	// SkillIDs are the ids of the card's skills (for audit only; skill
	// names and descriptions are untrusted text and are never shown to the model).
	SkillIDs []string `json:"skill_ids,omitempty"`
}

// RemoteAgentSpec is one host-curated remote agent
// (docs/design.md#registry-and-policy). The model only ever names it by Key.
type RemoteAgentSpec struct {
	// Key is what the model passes as "agent": letters, digits, '_' and
	// '-', at most 64 characters.
	Key string
	// DisplayName and Description are host-written text shown to the model
	// in the tool description and to the UI. Never taken from the card.
	DisplayName string
	Description string
	// Protocol is delegation.ProtocolA2A or delegation.ProtocolAGUI.
	Protocol string
	// AgentCardURL is the A2A agent card (absolute http(s) URL).
	AgentCardURL string
	// EndpointURL is the AG-UI endpoint, or an A2A JSON-RPC endpoint used
	// without a card.
	EndpointURL string
	// AuthRef names the credential ("env:NAME" or "file:/path"); the
	// secret is resolved by the host and never shown anywhere.
	AuthRef string
	// Auth, for A2A agents, replaces AuthRef with a bearer token, an API
	// key header or OAuth2 client credentials (secrets by reference), which
	// the agent card's securitySchemes complete and must allow
	// (docs/design.md#secrets). Exclusive with AuthRef.
	Auth *credentials.Auth
	// Tenant is sent with every A2A request to this agent.
	Tenant string
	// Shortcut optionally names a dedicated tool for this agent
	// (docs/design.md#tool-contract), e.g. "delegate_to_research_agent".
	Shortcut string
	// FetchCard is FetchCardStartup or FetchCardFirstCall (default).
	FetchCard string
	// InterfaceOrigins are origins (scheme://host[:port]) the agent's card
	// may point its interfaces at besides the card's own origin; by default
	// a task only goes to the card's origin, and https never downgrades to
	// http.
	InterfaceOrigins []string
	// Capabilities declares what an agent without a card can do; for an
	// agent with a card the card's (conservative) reading replaces it.
	Capabilities RemoteCapabilities
	// Policy is the agent's delegation policy; zero fields take defaults.
	Policy DelegationPolicy
	// Provenance must be ProvenanceHost (or empty).
	Provenance Provenance
}

// Options configure a Registry.
type Options struct {
	// Connectors reach the agents, one per protocol
	// (pkg/delegation/a2aremote, pkg/delegation/aguiremote). A spec whose
	// protocol has no connector is refused.
	Connectors []remote.Connector
}

var (
	keyPattern      = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
	toolNamePattern = lazyRegexp(`^[A-Za-z0-9_-]{1,64}$`)
)

// ReservedToolName is the generic delegation tool's name: no shortcut may
// take it.
const ReservedToolName = "delegate_to_agent"

// Registry is the host-owned, immutable set of remote agents. It connects
// each agent once (fetching and fingerprinting its card where the protocol
// has one), caches the connection, and counts each agent's active
// delegations against its policy. Safe for concurrent use.
type Registry struct {
	order      []string
	agents     map[string]*entry
	connectors map[string]remote.Connector
	secrets    *credentials.Secrets
}

type entry struct {
	spec RemoteAgentSpec
	conn remote.Connector

	mu       sync.Mutex
	agent    remote.Agent
	info     remote.Info
	rejected *ConnectError // permanent: malformed card or credential at startup
	fetching chan struct{}
	closed   bool

	// concurrency accounting, guarded by mu
	active int
	perRun map[string]int
}

// Error names the spec and field a registry refuses.
type Error struct {
	Key    string
	Field  string
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("remote agent %q: %s: %s", e.Key, e.Field, e.Reason)
}

// New validates specs and builds a registry. It rejects duplicate keys or
// shortcut names, specs not written by the host (Provenance), malformed
// URLs, unknown protocols (or protocols without a connector) and policies,
// and tenants outside the policy's AllowedTenants. It makes no network
// call (see Load).
func New(opts Options, specs ...RemoteAgentSpec) (*Registry, error) {
	r := &Registry{agents: map[string]*entry{}, connectors: map[string]remote.Connector{}, secrets: &credentials.Secrets{}}
	for _, c := range opts.Connectors {
		r.connectors[c.Protocol()] = c
	}
	tools := map[string]string{ReservedToolName: ""}
	for _, s := range specs {
		if err := validateSpec(&s); err != nil {
			return nil, err
		}
		conn := r.connectors[s.Protocol]
		if conn == nil {
			return nil, &Error{Key: s.Key, Field: "protocol", Reason: fmt.Sprintf("no connector for protocol %q is configured", s.Protocol)}
		}
		if _, dup := r.agents[s.Key]; dup {
			return nil, &Error{Key: s.Key, Field: "key", Reason: "duplicate agent key"}
		}
		if s.Shortcut != "" {
			if other, dup := tools[s.Shortcut]; dup {
				owner := "the generic tool"
				if other != "" {
					owner = "agent " + other
				}
				return nil, &Error{Key: s.Key, Field: "shortcut", Reason: fmt.Sprintf("tool name %q already used (%s)", s.Shortcut, owner)}
			}
			tools[s.Shortcut] = s.Key
		}
		s.Policy = s.Policy.WithDefaults()
		r.agents[s.Key] = &entry{spec: s, conn: conn, info: remote.Info{Streaming: s.Capabilities.Streaming,
			OutputModes: s.Capabilities.OutputModes, SkillIDs: s.Capabilities.SkillIDs}, perRun: map[string]int{}}
		r.order = append(r.order, s.Key)
		r.addSecrets(s)
	}
	return r, nil
}

func validateSpec(s *RemoteAgentSpec) error {
	bad := func(field, format string, args ...any) error {
		return &Error{Key: s.Key, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch s.Provenance {
	case "", ProvenanceHost:
	default:
		return bad("provenance", "only host-written agent specs are accepted (got %q): a model may name a registry key, never a URL", s.Provenance)
	}
	if !keyPattern().MatchString(s.Key) {
		return bad("key", "must be 1-64 letters, digits, '_' or '-' (no URLs)")
	}
	if s.DisplayName == "" {
		s.DisplayName = s.Key
	}
	if s.FetchCard == "" {
		s.FetchCard = FetchCardFirstCall
	}
	if s.FetchCard != FetchCardStartup && s.FetchCard != FetchCardFirstCall {
		return bad("fetch_card", "%q is not %s or %s", s.FetchCard, FetchCardStartup, FetchCardFirstCall)
	}
	for i, o := range s.InterfaceOrigins {
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil {
			return bad(fmt.Sprintf("interface_origins[%d]", i), "%q must be scheme://host[:port]", o)
		}
	}
	for field, u := range map[string]string{"agent_card_url": s.AgentCardURL, "endpoint_url": s.EndpointURL} {
		if u == "" {
			continue
		}
		if err := checkRemoteURL(u); err != nil {
			return bad(field, "%v", err)
		}
	}
	switch s.Protocol {
	case delegation.ProtocolA2A:
		if s.AgentCardURL == "" && s.EndpointURL == "" {
			return bad("agent_card_url", "an a2a agent needs agent_card_url (or endpoint_url)")
		}
	case delegation.ProtocolAGUI:
		if s.EndpointURL == "" {
			return bad("endpoint_url", "an agui agent needs endpoint_url")
		}
	default:
		return bad("protocol", "%q is not %s or %s", s.Protocol, delegation.ProtocolA2A, delegation.ProtocolAGUI)
	}
	if s.Shortcut != "" && !toolNamePattern().MatchString(s.Shortcut) {
		return bad("shortcut", "%q is not a valid tool name (1-64 letters, digits, '_' or '-')", s.Shortcut)
	}
	if !s.Policy.tenantAllowed(s.Tenant) {
		return bad("tenant", "%q is not in policy.allowed_tenants", s.Tenant)
	}
	if err := s.Policy.Validate(); err != nil {
		return bad("policy", "%v", err)
	}
	if s.AuthRef != "" {
		if scheme, rest, ok := strings.Cut(s.AuthRef, ":"); !ok || rest == "" || (scheme != "env" && scheme != "file") {
			return bad("auth_ref", `must be "env:NAME" or "file:/path" (the secret itself never goes in the spec)`)
		}
	}
	if s.Auth != nil {
		switch {
		case s.AuthRef != "":
			return bad("auth", "auth and auth_ref are exclusive (auth_ref is auth with scheme bearer)")
		case s.Protocol != delegation.ProtocolA2A:
			return bad("auth", "is supported for a2a agents; use auth_ref (a bearer token) for %s", s.Protocol)
		}
		if err := s.Auth.Validate(); err != nil {
			return bad("auth", "%v", err)
		}
	}
	return nil
}

// addSecrets remembers the secrets behind s's auth references.
func (r *Registry) addSecrets(s RemoteAgentSpec) {
	r.secrets.AddRef(s.AuthRef)
	if s.Auth != nil {
		for _, ref := range s.Auth.Refs() {
			r.secrets.AddRef(ref)
		}
	}
}

func checkRemoteURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http(s) URL")
	}
	if u.User != nil {
		return errors.New("must not carry credentials (use auth_ref)")
	}
	return nil
}

// Secrets returns the secrets behind the registry's auth references, to be
// scrubbed from everything the host shows.
func (r *Registry) Secrets() *credentials.Secrets { return r.secrets }

// Keys returns the keys of the agents exposed to the model, in spec order
// (agents whose card was rejected at startup are left out).
func (r *Registry) Keys() []string {
	var out []string
	for _, k := range r.order {
		if r.agents[k].rejectedErr() == nil {
			out = append(out, k)
		}
	}
	return out
}

// Spec returns the spec of key as registered (policy defaults applied).
func (r *Registry) Spec(key string) (RemoteAgentSpec, bool) {
	e, ok := r.agents[key]
	if !ok {
		return RemoteAgentSpec{}, false
	}
	return e.spec, true
}

// Capabilities returns what the host currently knows key can do, and the
// fingerprint of its card ("" before the card was fetched).
func (r *Registry) Capabilities(key string) (RemoteCapabilities, string) {
	e, ok := r.agents[key]
	if !ok {
		return RemoteCapabilities{}, ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return RemoteCapabilities{Streaming: e.info.Streaming, OutputModes: e.info.OutputModes, SkillIDs: e.info.SkillIDs}, e.info.Fingerprint
}

func (e *entry) rejectedErr() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rejected == nil {
		return nil
	}
	return e.rejected
}

// Load connects the FetchCardStartup agents (fetching and fingerprinting
// their cards). An agent whose card is malformed (or whose credential is
// not configured) is rejected: it is left out of Keys and every call to it
// fails with agent_unavailable. An unreachable agent stays exposed and is
// retried on its first call. Load returns the problems joined (nil if
// none); their text is for the host's log, never for a model.
func (r *Registry) Load(ctx context.Context) error {
	var errs []error
	for _, k := range r.order {
		e := r.agents[k]
		if e.spec.FetchCard != FetchCardStartup || e.spec.Protocol != delegation.ProtocolA2A {
			continue
		}
		a, cerr := r.connect(ctx, e)
		if cerr == nil {
			// The card is public: prove the credential with one
			// authenticated call where the protocol offers one.
			if cc, ok := a.(remote.CredentialChecker); ok {
				if err := cc.CheckCredentials(ctx); err != nil {
					cerr = r.connectError(k, err)
				}
			}
		}
		if cerr != nil {
			errs = append(errs, &StartupError{Key: k, Err: cerr})
			if cerr.Permanent {
				e.mu.Lock()
				e.rejected = cerr
				e.mu.Unlock()
			}
		}
	}
	return errors.Join(errs...)
}

// StartupError is one agent's failure in [Registry.Load].
type StartupError struct {
	// Key is the agent's registry key.
	Key string
	// Err is why it failed; its Cause has the detail for the operator.
	Err *ConnectError
}

func (e *StartupError) Error() string { return fmt.Sprintf("remote agent %q: %v", e.Key, e.Err) }
func (e *StartupError) Unwrap() error { return e.Err }

// ConnectError is why an agent could not be connected. Failure is what
// the model and the UI may see (no URLs, no payloads); Cause is the detail
// for the host's log (secrets scrubbed).
type ConnectError struct {
	Failure *delegation.DelegationError
	Cause   error
	// Permanent: the problem is in the configuration or the card, not the
	// network; retrying will not help.
	Permanent bool
}

func (e *ConnectError) Error() string {
	if e.Cause == nil {
		return e.Failure.Message
	}
	return e.Failure.Message + ": " + e.Cause.Error()
}

func (e *ConnectError) Unwrap() error { return e.Cause }

// Connect returns key's connected agent, connecting it first if needed
// (concurrent callers share one attempt). Unknown keys are agent_not_found.
func (r *Registry) Connect(ctx context.Context, key string) (remote.Agent, *ConnectError) {
	e := r.agents[key]
	if e == nil {
		return nil, &ConnectError{Failure: &delegation.DelegationError{Code: delegation.CodeAgentNotFound, Message: fmt.Sprintf("No remote agent %q is registered.", sanitize.Line(key, 64))}, Permanent: true}
	}
	return r.connect(ctx, e)
}

func (r *Registry) connect(ctx context.Context, e *entry) (remote.Agent, *ConnectError) {
	for {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return nil, &ConnectError{Failure: &delegation.DelegationError{Code: delegation.CodeAgentUnavailable, Message: "The delegation service is shutting down.", Retryable: true}}
		}
		if e.rejected != nil {
			err := e.rejected
			e.mu.Unlock()
			return nil, err
		}
		if e.agent != nil {
			a := e.agent
			e.mu.Unlock()
			return a, nil
		}
		if wait := e.fetching; wait != nil {
			e.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, &ConnectError{Failure: &delegation.DelegationError{Code: delegation.CodeAgentUnavailable, Message: "Cancelled while connecting to the remote agent.", Retryable: true}, Cause: ctx.Err()}
			}
		}
		done := make(chan struct{})
		e.fetching = done
		e.mu.Unlock()

		r.addSecrets(e.spec)
		a, err := e.conn.Connect(ctx, remote.Endpoint{Key: e.spec.Key, CardURL: e.spec.AgentCardURL, URL: e.spec.EndpointURL,
			AuthRef: e.spec.AuthRef, Auth: e.spec.Auth, Secrets: r.secrets, Tenant: e.spec.Tenant, Streaming: e.spec.Capabilities.Streaming,
			MaxArtifactBytes: e.spec.Policy.MaxArtifactBytes, MaxReadBytes: e.spec.Policy.MaxReadBytes, InterfaceOrigins: e.spec.InterfaceOrigins})

		e.mu.Lock()
		e.fetching = nil
		close(done)
		if err == nil {
			if e.closed {
				e.mu.Unlock()
				_ = a.Close()
				continue
			}
			e.agent, e.info = a, a.Info()
		}
		e.mu.Unlock()
		if err != nil {
			return nil, r.connectError(e.spec.Key, err)
		}
	}
}

// connectError classifies a Connect error. The model-facing message never
// carries the error's text (it may name URLs); the cause is kept for logs.
func (r *Registry) connectError(key string, err error) *ConnectError {
	cause := redactedError{msg: r.secrets.Redact(sanitize.Truncate(err.Error(), 500)), err: err}
	ce := &ConnectError{Cause: cause, Failure: &delegation.DelegationError{Code: delegation.CodeAgentUnavailable}}
	kind := clienterr.KindOf(err)
	switch {
	case errors.Is(err, remote.ErrConfig):
		ce.Permanent = true
		ce.Failure.Message = fmt.Sprintf("Agent %q is misconfigured on the host (its card or credential was rejected); the host log has the details.", key)
	case kind == clienterr.KindUnauthorized:
		ce.Permanent = true
		ce.Failure.Code = delegation.CodeAuthRequired
		ce.Failure.Message = fmt.Sprintf("Agent %q refused the host's credentials (401/403): the agent's auth_ref or auth in the host config must change.", key)
	default:
		ce.Failure.Retryable = true
		ce.Failure.Message = fmt.Sprintf("Agent %q could not be reached; the host log has the details.", key)
	}
	return ce
}

// redactedError shows an error's text with secrets scrubbed, keeping the
// original for errors.Is.
type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }

// Acquire reserves a concurrency slot of key's agent for runID; release it
// with the returned func. Beyond the policy's limits it fails with
// concurrency_limit.
func (r *Registry) Acquire(key, runID string) (release func(), _ *delegation.DelegationError) {
	e := r.agents[key]
	if e == nil {
		return nil, &delegation.DelegationError{Code: delegation.CodeAgentNotFound, Message: fmt.Sprintf("No remote agent %q is registered.", sanitize.Line(key, 64))}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.spec.Policy
	if e.active >= p.MaxConcurrentGlobal {
		return nil, &delegation.DelegationError{Code: delegation.CodeConcurrencyLimit, Retryable: true, Message: fmt.Sprintf("agent %q already runs %d delegations (host limit)", e.spec.Key, p.MaxConcurrentGlobal)}
	}
	if e.perRun[runID] >= p.MaxConcurrentPerRun {
		return nil, &delegation.DelegationError{Code: delegation.CodeConcurrencyLimit, Retryable: true, Message: fmt.Sprintf("this run already has %d active delegations to agent %q (host limit)", p.MaxConcurrentPerRun, e.spec.Key)}
	}
	e.active++
	e.perRun[runID]++
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.active--
			if e.perRun[runID]--; e.perRun[runID] <= 0 {
				delete(e.perRun, runID)
			}
		})
	}, nil
}

// Close releases the cached connections. Remote tasks are not affected.
func (r *Registry) Close() {
	for _, e := range r.agents {
		e.mu.Lock()
		e.closed = true
		a := e.agent
		e.agent = nil
		e.mu.Unlock()
		if a != nil {
			_ = a.Close()
		}
	}
}

// lazyRegexp compiles expr on first use: a process that never uses a
// pattern (the scripted agent re-executing this binary, a CLI command)
// does not pay for it at start.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
