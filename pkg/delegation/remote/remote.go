package remote

import (
	"context"
	"errors"
	"log/slog"

	"github.com/seed0634/agentadaptor/pkg/credentials"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// Endpoint is what the host's registry knows about one remote agent, as a
// protocol implementation needs it. Every field is host-written.
type Endpoint struct {
	// Key is the registry key (for messages and logs).
	Key string
	// CardURL is the agent's self-description (the A2A agent card), if the
	// protocol has one.
	CardURL string
	// URL is the agent's endpoint (the AG-UI endpoint, or an A2A endpoint
	// used without a card).
	URL string
	// AuthRef names the credential ("env:NAME" or "file:/path"); the
	// protocol resolves it and sends it to the endpoint's origin only.
	AuthRef string
	// Auth, when set, replaces AuthRef (protocols that support it): a
	// bearer token, an API key header or OAuth2 client credentials, every
	// secret by auth reference; a protocol with a self-description (the A2A
	// card's securitySchemes) completes and checks it
	// (docs/design.md#secrets).
	Auth *credentials.Auth
	// Secrets learns the secrets the connection uses (e.g. OAuth2 access
	// tokens as they are fetched), so the host scrubs them; nil: none.
	Secrets *credentials.Secrets
	// Tenant is sent with every request, for protocols that have tenants.
	Tenant string
	// Streaming declares that an agent without a self-description streams.
	Streaming bool
	// MaxArtifactBytes is the largest artifact the host accepts: a protocol
	// sizes its frame limits so that such an artifact fits.
	MaxArtifactBytes int64
	// MaxReadBytes bounds everything one delegation reads from the agent
	// (0: the protocol's default); beyond it the delegation fails.
	MaxReadBytes int64
	// InterfaceOrigins are further origins the agent's self-description
	// may send tasks to (besides its own origin).
	InterfaceOrigins []string
}

// Info is what the host learned about a connected agent.
type Info struct {
	// Fingerprint identifies the agent's self-description (the RFC 8785
	// canonical form of an A2A card, hashed); "" when it has none.
	Fingerprint string
	// Streaming reports whether the agent streams task events.
	Streaming bool
	// OutputModes are the media types the agent says it produces.
	OutputModes []string
	// SkillIDs are the agent's advertised skill ids (audit only: skill
	// text is untrusted and never shown to a model).
	SkillIDs []string
	// AuthScheme is how the host authenticates to the agent ("" for no
	// credential; else an AuthScheme's name).
	AuthScheme string
	// DeclaredAuth are the types of the security schemes the agent's
	// self-description declares ("oauth2 clientCredentials", "apiKey",
	// ...; never remote text).
	DeclaredAuth []string
}

// Connector reaches the remote agents of one protocol. Implementations
// must be safe for concurrent use.
type Connector interface {
	// Protocol returns the protocol's name (delegation.ProtocolA2A, ...).
	Protocol() string
	// Connect validates ep and returns an Agent for it. Protocols with a
	// self-description fetch and check it here. An error wrapping
	// ErrConfig means the endpoint is unusable as configured (retrying will
	// not help); other errors may be transient.
	Connect(ctx context.Context, ep Endpoint) (Agent, error)
}

// Agent is one connected remote agent. Safe for concurrent use.
type Agent interface {
	// Info describes the agent.
	Info() Info
	// NewTask prepares one delegated task; nothing is sent until Start.
	NewTask(spec TaskSpec) Task
	// Close releases the agent's connections. Remote tasks are not affected.
	Close() error
}

// CredentialChecker is an [Agent] that can prove the host's credentials
// with one authenticated call that changes nothing at the remote. The
// registry calls it for agents checked at startup (fetch_card: startup): an
// agent card is public, so fetching it proves nothing about the
// credential. It returns an error of kind Unauthorized
// (pkg/clients/clienterr) when the remote refuses the credential, nil when
// the remote accepts it or the check does not apply (no security scheme
// declared).
type CredentialChecker interface {
	CheckCredentials(ctx context.Context) error
}

// TaskSpec is one delegated task as the delegator hands it to a protocol.
type TaskSpec struct {
	// DelegationID is the host's id of the delegation (sent as metadata).
	DelegationID string
	// Text is the task: the objective, then the prompt and the context.
	Text string
	// Artifacts are the input artifacts: host artifacts with their content,
	// other references by URI only.
	Artifacts []InputArtifact
	// ContextID is the remote context to continue ("" for a new one).
	ContextID string
	// Stream is false when the model asked for a non-streaming task.
	Stream bool
	// Transcript receives the task's state; the protocol maps the remote's
	// events into it and passes the events it returns to Emit.
	Transcript *Transcript
	// Emit publishes delegation events; it must be called from the
	// goroutine that calls the Task's methods, in order.
	Emit func(...delegation.DelegationEvent)
	// Log receives operational logs (secrets already redacted by the
	// protocol's clients).
	Log *slog.Logger
}

// InputArtifact is an artifact the model passed along with the task.
type InputArtifact struct {
	// Name is sanitised text.
	Name string
	// URI is the reference the model gave.
	URI string
	// MimeType and Content are set for host artifacts of the same run
	// whose size the policy allows; otherwise only the reference travels.
	MimeType string
	Content  []byte
}

// Task is one delegated task on a remote agent. Its methods are called by
// one goroutine, one at a time; each one that talks to the remote follows
// the task until it reaches a terminal state (Transcript.Terminal() != ""),
// pauses for input or authentication (Transcript.State().Interrupted()),
// or fails: then it returns the error (a client error whose kind says what
// happened, see pkg/clients/clienterr).
type Task interface {
	// Mode says how the task is followed: "streaming" or "polling".
	Mode() string
	// Start sends the task.
	Start(ctx context.Context) error
	// Answer sends the user's answer to an input-required task, in the
	// same remote task and context.
	Answer(ctx context.Context, text string) error
	// CanRecover reports whether err, returned by Start, Answer or Recover,
	// is a cut stream that Recover may re-attach to.
	CanRecover(err error) bool
	// Recover re-attaches to the task after a cut stream (resubscribe, or
	// follow its state) and follows it.
	Recover(ctx context.Context) error
	// Cancel asks the remote to cancel the task, bounded by ctx. meta is
	// sent along where the protocol allows (reason, ids).
	Cancel(ctx context.Context, meta map[string]any) CancelOutcome
	// ContextID returns the remote context as the remote named it (for
	// reuse by a sticky context policy; never shown to anyone).
	ContextID() string
}

// CancelOutcome is the result of Task.Cancel.
type CancelOutcome int

const (
	// CancelConfirmed: the remote task has ended (or never existed).
	CancelConfirmed CancelOutcome = iota
	// CancelPending: the cancellation was asked for but not confirmed;
	// asking again later may confirm it.
	CancelPending
	// CancelUnaddressable: a request that may have created a remote task
	// went out, but the task's id never came back: it cannot be cancelled.
	CancelUnaddressable
	// CancelNotNeeded: there is nothing to cancel: no remote task was
	// created, or the protocol has no cancel call and ending the request
	// (which the task's context did) is the cancellation the remote sees.
	CancelNotNeeded
)

// ErrConfig marks a Connect error that no retry can fix: a malformed
// self-description, an unresolvable credential, an invalid endpoint.
var ErrConfig = errors.New("remote agent is misconfigured")
