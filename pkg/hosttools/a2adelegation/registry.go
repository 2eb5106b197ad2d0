package a2adelegation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	a2aclient "github.com/seed0634/agentadaptor/pkg/clients/a2a"
	aguiclient "github.com/seed0634/agentadaptor/pkg/clients/agui"
)

// Remote protocols of a RemoteAgentSpec.
const (
	ProtocolA2A  = "a2a"
	ProtocolAGUI = "agui"
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
// output) is refused by [NewRegistry], so a model can never make the host
// contact an endpoint of its choosing.
type Provenance string

const (
	// ProvenanceHost marks a spec written by the host (code or config).
	// The zero value means the same: struct literals in host code are host-written.
	ProvenanceHost Provenance = "host"
	// ProvenanceModel marks a spec (or URL) that was derived from model
	// output. NewRegistry refuses it.
	ProvenanceModel Provenance = "model"
)

// RemoteCapabilities is what the host knows a remote agent can do. For an
// agent with a card it is read from the card, conservatively: anything not
// clearly advertised is false. For an A2A agent configured by EndpointURL
// only (no card), the host declares it in the spec.
type RemoteCapabilities struct {
	// Streaming: the agent streams task events (message/stream).
	Streaming bool `json:"streaming"`
	// OutputModes are the card's default output media types.
	OutputModes []string `json:"output_modes,omitempty"`
	// SkillIDs are the ids of the card's skills (for audit only; skill
	// names and descriptions are untrusted text and are never shown to the model).
	SkillIDs []string `json:"skill_ids,omitempty"`
}

// RemoteAgentSpec is one host-curated remote agent (SPEC §12). The model
// only ever names it by Key.
type RemoteAgentSpec struct {
	// Key is what the model passes as "agent": letters, digits, '_' and
	// '-', at most 64 characters.
	Key string
	// DisplayName and Description are host-written text shown to the model
	// in the tool description and to the UI. Never taken from the card.
	DisplayName string
	Description string
	// Protocol is ProtocolA2A or ProtocolAGUI.
	Protocol string
	// AgentCardURL is the A2A agent card (absolute http(s) URL).
	AgentCardURL string
	// EndpointURL is the AG-UI endpoint, or an A2A JSON-RPC endpoint used
	// without a card.
	EndpointURL string
	// AuthRef names the credential ("env:NAME" or "file:/path"); the
	// secret is resolved by the host and never shown anywhere.
	AuthRef string
	// Tenant is sent with every A2A request to this agent.
	Tenant string
	// Shortcut optionally names a dedicated tool for this agent (SPEC §11
	// named shortcuts), e.g. "delegate_to_research_agent".
	Shortcut string
	// FetchCard is FetchCardStartup or FetchCardFirstCall (default).
	FetchCard string
	// Capabilities declares what an agent without a card can do; for an
	// agent with a card the card's (conservative) reading replaces it.
	Capabilities RemoteCapabilities
	// Policy is the agent's delegation policy; zero fields take defaults.
	Policy DelegationPolicy
	// Provenance must be ProvenanceHost (or empty).
	Provenance Provenance
}

// RegistryOptions tune how a Registry reaches remote agents.
type RegistryOptions struct {
	// HTTPClient supplies the base transport for A2A calls and card
	// fetches (nil: a private transport per agent, released by Close).
	HTTPClient *http.Client
	// CardFetchTimeout bounds one card fetch (0: the client's default).
	CardFetchTimeout time.Duration
	// RequestTimeout bounds unary A2A calls (0: the client's default).
	RequestTimeout time.Duration
}

var (
	keyPattern      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
	toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// Registry is the host-owned, immutable set of remote agents. It resolves
// and caches each agent's card and A2A client. Safe for concurrent use.
type Registry struct {
	opts   RegistryOptions
	order  []string
	agents map[string]*agentEntry
	red    *redactor
}

type agentEntry struct {
	spec RemoteAgentSpec

	mu       sync.Mutex
	client   *a2aclient.Client
	agui     *aguiclient.Client // Protocol "agui" (agui.go)
	card     *a2aclient.Card
	caps     RemoteCapabilities
	rejected error // permanent: malformed card at startup
	fetching chan struct{}
	closed   bool

	// concurrency accounting, guarded by mu
	active int
	perRun map[string]int
}

// RegistryError names the spec and field a registry refuses.
type RegistryError struct {
	Key    string
	Field  string
	Reason string
}

func (e *RegistryError) Error() string {
	return fmt.Sprintf("remote agent %q: %s: %s", e.Key, e.Field, e.Reason)
}

// NewRegistry validates specs and builds a registry. It rejects duplicate
// keys or shortcut names, specs not written by the host (Provenance),
// malformed URLs, unknown protocols and policies, and tenants outside
// the policy's AllowedTenants. It makes no network call (see Load).
func NewRegistry(specs ...RemoteAgentSpec) (*Registry, error) {
	return NewRegistryWithOptions(RegistryOptions{}, specs...)
}

// NewRegistryWithOptions is NewRegistry with transport options.
func NewRegistryWithOptions(opts RegistryOptions, specs ...RemoteAgentSpec) (*Registry, error) {
	r := &Registry{opts: opts, agents: map[string]*agentEntry{}, red: &redactor{}}
	tools := map[string]string{ToolName: ""}
	for _, s := range specs {
		if err := validateSpec(&s); err != nil {
			return nil, err
		}
		if _, dup := r.agents[s.Key]; dup {
			return nil, &RegistryError{Key: s.Key, Field: "key", Reason: "duplicate agent key"}
		}
		if s.Shortcut != "" {
			if other, dup := tools[s.Shortcut]; dup {
				return nil, &RegistryError{Key: s.Key, Field: "shortcut", Reason: fmt.Sprintf("tool name %q already used (%s)", s.Shortcut, cmpOr(other, "generic tool"))}
			}
			tools[s.Shortcut] = s.Key
		}
		s.Policy = s.Policy.WithDefaults()
		r.agents[s.Key] = &agentEntry{spec: s, caps: s.Capabilities, perRun: map[string]int{}}
		r.order = append(r.order, s.Key)
		r.red.add(secretOfAuthRef(s.AuthRef))
	}
	return r, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return "agent " + a
	}
	return b
}

func validateSpec(s *RemoteAgentSpec) error {
	bad := func(field, format string, args ...any) error {
		return &RegistryError{Key: s.Key, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch s.Provenance {
	case "", ProvenanceHost:
	default:
		return bad("provenance", "only host-written agent specs are accepted (got %q): a model may name a registry key, never a URL", s.Provenance)
	}
	if !keyPattern.MatchString(s.Key) {
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
	for field, u := range map[string]string{"agent_card_url": s.AgentCardURL, "endpoint_url": s.EndpointURL} {
		if u == "" {
			continue
		}
		if err := checkRemoteURL(u); err != nil {
			return bad(field, "%v", err)
		}
	}
	switch s.Protocol {
	case ProtocolA2A:
		if s.AgentCardURL == "" && s.EndpointURL == "" {
			return bad("agent_card_url", "an a2a agent needs agent_card_url (or endpoint_url)")
		}
	case ProtocolAGUI:
		if s.EndpointURL == "" {
			return bad("endpoint_url", "an agui agent needs endpoint_url")
		}
	default:
		return bad("protocol", "%q is not %s or %s", s.Protocol, ProtocolA2A, ProtocolAGUI)
	}
	if s.Shortcut != "" && !toolNamePattern.MatchString(s.Shortcut) {
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
	return nil
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
	fp := ""
	if e.card != nil {
		fp = e.card.Fingerprint
	}
	return e.caps, fp
}

func (e *agentEntry) rejectedErr() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rejected
}

// Load fetches and fingerprints the cards of the FetchCardStartup agents.
// An agent whose card is malformed (or whose credential is not
// configured) is rejected: it is left out of Keys and every call to it
// fails with agent_unavailable. An unreachable agent stays exposed and is
// retried on its first call. Load returns the problems joined (nil if none).
func (r *Registry) Load(ctx context.Context) error {
	var errs []error
	for _, k := range r.order {
		e := r.agents[k]
		if e.spec.FetchCard != FetchCardStartup || e.spec.Protocol != ProtocolA2A {
			continue
		}
		_, _, derr := r.connect(ctx, e)
		if derr == nil {
			continue
		}
		errs = append(errs, fmt.Errorf("remote agent %q: %s", k, derr.Message))
		if derr.permanent {
			e.mu.Lock()
			e.rejected = derr
			e.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// connectError is a DelegationError with a flag saying whether the
// problem is in the card/config (permanent) rather than the network.
type connectError struct {
	*DelegationError
	permanent bool
}

// connect returns the agent's client, fetching its card first if needed.
func (r *Registry) connect(ctx context.Context, e *agentEntry) (*a2aclient.Client, string, *connectError) {
	for {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return nil, "", &connectError{DelegationError: &DelegationError{Code: CodeAgentUnavailable, Message: "the delegation service is shutting down", Retryable: true}}
		}
		if e.rejected != nil {
			err := e.rejected
			e.mu.Unlock()
			var ce *connectError
			if errors.As(err, &ce) {
				return nil, "", ce
			}
			return nil, "", &connectError{DelegationError: &DelegationError{Code: CodeAgentUnavailable, Message: err.Error()}, permanent: true}
		}
		if e.client != nil {
			c, fp := e.client, e.card.Fingerprint
			e.mu.Unlock()
			return c, fp, nil
		}
		if wait := e.fetching; wait != nil {
			e.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, "", &connectError{DelegationError: &DelegationError{Code: CodeAgentUnavailable, Message: "cancelled while fetching the agent card", Retryable: true}}
			}
		}
		done := make(chan struct{})
		e.fetching = done
		e.mu.Unlock()

		c, derr := r.newClient(ctx, e)

		e.mu.Lock()
		e.fetching = nil
		close(done)
		if derr == nil {
			if e.closed {
				e.mu.Unlock()
				_ = c.Close()
				continue
			}
			e.client, e.card = c, c.Card()
			e.caps = capabilitiesFromCard(c.Card())
		}
		e.mu.Unlock()
		if derr != nil {
			return nil, "", derr
		}
	}
}

func (r *Registry) newClient(ctx context.Context, e *agentEntry) (*a2aclient.Client, *connectError) {
	s := e.spec
	opts := a2aclient.Options{HTTPClient: r.opts.HTTPClient, AuthRef: s.AuthRef, CardFetchTimeout: r.opts.CardFetchTimeout, RequestTimeout: r.opts.RequestTimeout}
	cred, err := a2aclient.ResolveAuthRef(s.AuthRef)
	if err != nil {
		return nil, &connectError{DelegationError: &DelegationError{Code: CodeAgentUnavailable, Message: fmt.Sprintf("the host credential for agent %q is not configured (%s)", s.Key, s.AuthRef)}, permanent: true}
	}
	r.red.add(secretOfAuthRef(s.AuthRef))
	opts.Credential, opts.AuthRef = cred, ""
	var c *a2aclient.Client
	if s.AgentCardURL != "" {
		c, err = a2aclient.NewClient(ctx, s.AgentCardURL, opts)
	} else {
		var card *a2aclient.Card
		card, err = syntheticCard(s)
		if err == nil {
			c, err = a2aclient.NewClientFromCard(ctx, card, opts)
		}
	}
	if err != nil {
		kind := a2aclient.KindOf(err)
		ce := &connectError{DelegationError: &DelegationError{Code: CodeAgentUnavailable, Retryable: kind != a2aclient.KindProtocol && kind != a2aclient.KindUnauthorized,
			Message: fmt.Sprintf("agent %q is unavailable: %s", s.Key, r.red.str(shortText(err.Error(), 300)))}}
		ce.permanent = kind == a2aclient.KindProtocol
		if kind == a2aclient.KindProtocol {
			ce.Message = fmt.Sprintf("agent %q has a malformed agent card and was rejected: %s", s.Key, r.red.str(shortText(err.Error(), 300)))
		}
		return nil, ce
	}
	return c, nil
}

// syntheticCard builds the card of an A2A agent configured by endpoint only.
func syntheticCard(s RemoteAgentSpec) (*a2aclient.Card, error) {
	doc := map[string]any{
		"name": s.Key, "version": "0", "description": "",
		"supportedInterfaces": []any{map[string]any{"url": s.EndpointURL, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
		"capabilities":        map[string]any{"streaming": s.Capabilities.Streaming},
		"defaultInputModes":   []string{"text/plain"}, "defaultOutputModes": []string{"text/plain"},
	}
	raw, _ := json.Marshal(doc)
	return a2aclient.ParseCard(raw, s.EndpointURL)
}

var mediaTypePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,63}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,63}$`)
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// capabilitiesFromCard reads a card conservatively: only a literal
// capabilities.streaming=true enables streaming; output modes and skill ids
// that do not look like media types or identifiers are dropped. It never
// copies free text (names, descriptions) from the card.
func capabilitiesFromCard(c *a2aclient.Card) RemoteCapabilities {
	var caps RemoteCapabilities
	if c == nil || c.Agent == nil {
		return caps
	}
	caps.Streaming = c.Agent.Capabilities.Streaming
	for _, m := range c.Agent.DefaultOutputModes {
		if mediaTypePattern.MatchString(m) && len(caps.OutputModes) < 16 {
			caps.OutputModes = append(caps.OutputModes, m)
		}
	}
	for _, sk := range c.Agent.Skills {
		if idPattern.MatchString(sk.ID) && len(caps.SkillIDs) < 32 && !slices.Contains(caps.SkillIDs, sk.ID) {
			caps.SkillIDs = append(caps.SkillIDs, sk.ID)
		}
	}
	return caps
}

// acquire reserves a concurrency slot of the agent for runID.
func (e *agentEntry) acquire(runID string) *DelegationError {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.spec.Policy
	if e.active >= p.MaxConcurrentGlobal {
		return &DelegationError{Code: CodeConcurrencyLimit, Retryable: true, Message: fmt.Sprintf("agent %q already runs %d delegations (host limit)", e.spec.Key, p.MaxConcurrentGlobal)}
	}
	if e.perRun[runID] >= p.MaxConcurrentPerRun {
		return &DelegationError{Code: CodeConcurrencyLimit, Retryable: true, Message: fmt.Sprintf("this run already has %d active delegations to agent %q (host limit)", p.MaxConcurrentPerRun, e.spec.Key)}
	}
	e.active++
	e.perRun[runID]++
	return nil
}

func (e *agentEntry) release(runID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.active--
	if e.perRun[runID]--; e.perRun[runID] <= 0 {
		delete(e.perRun, runID)
	}
}

// Close releases the cached clients. Remote tasks are not affected.
func (r *Registry) Close() {
	for _, e := range r.agents {
		e.mu.Lock()
		e.closed = true
		c, ac := e.client, e.agui
		e.client, e.agui = nil, nil
		e.mu.Unlock()
		if c != nil {
			_ = c.Close()
		}
		if ac != nil {
			_ = ac.Close()
		}
	}
}

// client returns the agent's entry (nil: unknown key).
func (r *Registry) entry(key string) *agentEntry { return r.agents[key] }

func shortText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// cut on a rune boundary
	for n > 0 && n < len(s) && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}
