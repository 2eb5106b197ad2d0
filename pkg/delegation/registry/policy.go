package registry

import (
	"fmt"
	"slices"
	"time"

	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// Context policies (docs/design.md#context-policies): how a delegation
// chooses its remote context.
const (
	// ContextEphemeral starts a new remote context for every delegation (the default).
	ContextEphemeral = "ephemeral"
	// ContextStickyPerParentThreadAgent reuses the remote context per
	// (parent SessionKey, agent key); without a SessionKey it behaves like
	// ContextStickyPerRunAgent.
	ContextStickyPerParentThreadAgent = "sticky_per_parent_thread_agent"
	// ContextStickyPerRunAgent reuses the remote context per (run, agent key).
	ContextStickyPerRunAgent = "sticky_per_run_agent"
)

// Audit levels of DelegationPolicy.AuditLevel.
const (
	// AuditMinimal records identities, timings and the final result, no events.
	AuditMinimal = "minimal"
	// AuditStandard also records every event's kind, status, ids and error,
	// without remote text (the default).
	AuditStandard = "standard"
	// AuditFull also records remote text (deltas, status text), truncated.
	AuditFull = "full"
)

// Input-required modes of DelegationPolicy.InputRequired: what a delegation
// does when the remote task asks for input (docs/design.md#registry-and-policy).
const (
	// InputRequiredSurface publishes subagent.input_required and blocks
	// the tool call until the input is answered (the UI's input route) or
	// the delegation times out.
	InputRequiredSurface = "surface"
	// InputRequiredFail cancels the remote task and fails the delegation
	// with input_required_unsupported.
	InputRequiredFail = "fail"
	// InputRequiredReturn publishes subagent.input_required and returns at
	// once with status input_required and the question: the parent model
	// answers by calling the tool again with continue.delegation_id, which
	// continues the same remote task and context. The delegation stays
	// parked (no terminal event) until then, at most MaxTimeout, and ends
	// with its parent run.
	InputRequiredReturn = "return"
)

// Policy defaults, applied by [DelegationPolicy.WithDefaults] to zero fields.
const (
	DefaultMaxTimeout          = 5 * time.Minute
	DefaultMaxArtifactBytes    = remote.DefaultMaxArtifactBytes
	DefaultMaxConcurrentPerRun = 4
	DefaultMaxConcurrentGlobal = 64
	DefaultMaxArtifacts        = remote.DefaultMaxArtifacts
	DefaultMaxReadBytes        = 64 << 20
)

// DelegationPolicy is the host's policy for one remote agent
// (docs/design.md#registry-and-policy). Numeric zero values mean "use the
// default" (see WithDefaults); boolean zero values are the safe choice,
// except AllowRemoteArtifacts whose useful default (true) [DefaultPolicy]
// sets.
type DelegationPolicy struct {
	// AllowedTenants, when not empty, lists the tenants the spec's Tenant
	// may name; a spec whose Tenant is not listed is rejected. The model
	// never chooses a tenant.
	AllowedTenants []string
	// MaxTimeout bounds one delegation (including the wait for an
	// input-required answer). The model's constraints.timeout_seconds is
	// clamped to it and defaults to it. Default DefaultMaxTimeout.
	MaxTimeout time.Duration
	// MaxArtifactBytes bounds the stored content of one remote artifact;
	// larger artifacts are reported with error artifact_too_large and not
	// stored (the delegation still succeeds with a partial result).
	// Default DefaultMaxArtifactBytes.
	MaxArtifactBytes int64
	// MaxConcurrentPerRun bounds the active delegations to this agent in one
	// parent run; beyond it a call fails with concurrency_limit.
	// Default DefaultMaxConcurrentPerRun.
	MaxConcurrentPerRun int
	// MaxConcurrentGlobal bounds the active delegations to this agent across
	// all runs. Default DefaultMaxConcurrentGlobal.
	MaxConcurrentGlobal int
	// AllowInputRequired surfaces remote input-required states as
	// subagent.input_required and blocks the tool call until the input is
	// answered or the delegation times out. When false the remote task is
	// cancelled and the tool returns input_required_unsupported. It is the
	// two-way form of InputRequired (true: surface, false: fail); when
	// InputRequired is set it wins (read the mode with InputMode).
	AllowInputRequired bool
	// InputRequired is InputRequiredSurface, InputRequiredFail or
	// InputRequiredReturn; "" derives it from AllowInputRequired.
	InputRequired string
	// AllowRemoteArtifacts stores remote artifacts in the host artifact
	// store and references them by host:// URI. When false their metadata
	// is still reported but the content is discarded (no URI).
	AllowRemoteArtifacts bool
	// AuditLevel is AuditMinimal, AuditStandard (default) or AuditFull.
	AuditLevel string
	// MaxReadBytes bounds everything one delegation reads from the remote
	// (all its responses together); beyond it the delegation fails at once
	// with remote_failed. Default DefaultMaxReadBytes.
	MaxReadBytes int64
	// RequireStreaming refuses agents whose card does not advertise
	// streaming (capability_unsupported) instead of degrading to polling.
	RequireStreaming bool
	// ContextPolicy is ContextEphemeral (default),
	// ContextStickyPerParentThreadAgent or ContextStickyPerRunAgent.
	ContextPolicy string
}

// DefaultPolicy returns the policy a host should start from: every default
// applied and AllowRemoteArtifacts on.
func DefaultPolicy() DelegationPolicy {
	return DelegationPolicy{AllowRemoteArtifacts: true}.WithDefaults()
}

// WithDefaults returns p with zero numeric and string fields set to their defaults.
func (p DelegationPolicy) WithDefaults() DelegationPolicy {
	if p.MaxTimeout <= 0 {
		p.MaxTimeout = DefaultMaxTimeout
	}
	if p.MaxArtifactBytes <= 0 {
		p.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	if p.MaxReadBytes <= 0 {
		p.MaxReadBytes = DefaultMaxReadBytes
	}
	if p.MaxConcurrentPerRun <= 0 {
		p.MaxConcurrentPerRun = DefaultMaxConcurrentPerRun
	}
	if p.MaxConcurrentGlobal <= 0 {
		p.MaxConcurrentGlobal = DefaultMaxConcurrentGlobal
	}
	if p.AuditLevel == "" {
		p.AuditLevel = AuditStandard
	}
	if p.ContextPolicy == "" {
		p.ContextPolicy = ContextEphemeral
	}
	return p
}

// InputMode returns what a delegation does when the remote asks for input:
// InputRequired when set, else InputRequiredSurface if AllowInputRequired,
// else InputRequiredFail.
func (p DelegationPolicy) InputMode() string {
	switch {
	case p.InputRequired != "":
		return p.InputRequired
	case p.AllowInputRequired:
		return InputRequiredSurface
	}
	return InputRequiredFail
}

// Validate reports a policy field with an unknown or negative value.
func (p DelegationPolicy) Validate() error {
	switch p.ContextPolicy {
	case "", ContextEphemeral, ContextStickyPerParentThreadAgent, ContextStickyPerRunAgent:
	default:
		return fmt.Errorf("policy.context %q is not %s, %s or %s", p.ContextPolicy, ContextEphemeral, ContextStickyPerParentThreadAgent, ContextStickyPerRunAgent)
	}
	switch p.AuditLevel {
	case "", AuditMinimal, AuditStandard, AuditFull:
	default:
		return fmt.Errorf("policy.audit_level %q is not %s, %s or %s", p.AuditLevel, AuditMinimal, AuditStandard, AuditFull)
	}
	switch p.InputRequired {
	case "", InputRequiredSurface, InputRequiredReturn:
	case InputRequiredFail:
		if p.AllowInputRequired {
			return fmt.Errorf("policy.input_required %q contradicts allow_input_required true", p.InputRequired)
		}
	default:
		return fmt.Errorf("policy.input_required %q is not %s, %s or %s", p.InputRequired, InputRequiredSurface, InputRequiredFail, InputRequiredReturn)
	}
	if p.MaxTimeout < 0 || p.MaxArtifactBytes < 0 || p.MaxConcurrentPerRun < 0 || p.MaxConcurrentGlobal < 0 || p.MaxReadBytes < 0 {
		return fmt.Errorf("policy limits must not be negative")
	}
	return nil
}

// Constraints are the model's optional limits for one delegation (the
// "constraints" object of the tool input, docs/design.md#tool-contract).
type Constraints struct {
	TimeoutSeconds int   `json:"timeout_seconds,omitempty"`
	Stream         *bool `json:"stream,omitempty"`
	MaxArtifacts   int   `json:"max_artifacts,omitempty"`
}

// Effective are the limits a delegation runs with after clamping the
// model's constraints to the host policy.
type Effective struct {
	Timeout      time.Duration
	MaxArtifacts int
	// Stream is false when the model asked for no streaming.
	Stream bool
}

// Clamp applies the model's constraints within the policy's maxima: a
// timeout above MaxTimeout (or none) becomes MaxTimeout, and max_artifacts
// is bounded by DefaultMaxArtifacts. The model can only tighten limits.
func (p DelegationPolicy) Clamp(c Constraints) Effective {
	p = p.WithDefaults()
	e := Effective{Timeout: p.MaxTimeout, MaxArtifacts: DefaultMaxArtifacts, Stream: true}
	if c.TimeoutSeconds > 0 {
		if d := time.Duration(c.TimeoutSeconds) * time.Second; d < e.Timeout && d/time.Second == time.Duration(c.TimeoutSeconds) {
			e.Timeout = d
		}
	}
	if c.MaxArtifacts > 0 && c.MaxArtifacts < e.MaxArtifacts {
		e.MaxArtifacts = c.MaxArtifacts
	}
	if c.Stream != nil {
		e.Stream = *c.Stream
	}
	return e
}

func (p DelegationPolicy) tenantAllowed(tenant string) bool {
	return len(p.AllowedTenants) == 0 || slices.Contains(p.AllowedTenants, tenant)
}
