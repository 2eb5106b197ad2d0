package delegator

import (
	"encoding/json"
	"maps"
	"sync"
	"time"

	"github.com/seed0634/agentadaptor/internal/sanitize"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// publisher is a delegation's way to the bus, the audit log and its tool
// call's progress hook (Request.OnEvent): every event of the delegation
// goes through it, in order, after subagent.started (which it publishes
// first, and records the audit's first record with), with its identity
// filled and the host's secrets scrubbed. Its fields are guarded by mu:
// the lifecycle's goroutine publishes the task's events, the correlator's
// announces the parent tool call found later.
type publisher struct {
	a *activeDelegation

	mu      sync.Mutex
	begun   bool // subagent.started was published
	ctxLost bool // the sticky context could not be read: said right after started
	onEvent func(delegation.DelegationEvent)
	// ids are the remote task and context ids as the lifecycle last
	// published them; fingerprint and mode describe the agent and the
	// task for subagent.started and the audit.
	ids               remoteIDs
	fingerprint, mode string
	// parent is the parent tool call once the correlator knows it: a
	// delegation's parent, once known, never changes.
	parent string
}

// remoteIDs are a delegation's remote task and context ids (as shown:
// scrubbed by the transcript).
type remoteIDs struct{ task, context string }

// describe records the agent's card fingerprint and how the task is
// followed, for subagent.started and the audit's first record.
func (p *publisher) describe(fingerprint, mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fingerprint, p.mode = fingerprint, mode
}

// contextLost records that the delegation's sticky context could not be
// read: the user is told right after subagent.started.
func (p *publisher) contextLost() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ctxLost = true
}

// setOnEvent replaces the per-call event hook (nil: none).
func (p *publisher) setOnEvent(fn func(delegation.DelegationEvent)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onEvent = fn
}

// publish sends ev, an event of the task, carrying the remote ids as the
// task stands (the lifecycle's).
func (p *publisher) publish(ev delegation.DelegationEvent, ids remoteIDs) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids = ids
	p.publishLocked(ev)
}

// announce sends ev from outside the lifecycle (the correlator's parent
// tool call): it carries the remote ids last published.
func (p *publisher) announce(ev delegation.DelegationEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.publishLocked(ev)
}

// publishLocked sends ev, after the started event (under mu).
func (p *publisher) publishLocked(ev delegation.DelegationEvent) {
	if ev.Kind == delegation.DelegationStarted {
		if !p.begun {
			p.begin(ev.Raw)
			p.noteContextLost()
		}
		return
	}
	if !p.begun {
		p.begin(nil)
		p.noteContextLost()
	}
	p.send(ev)
}

// begin records the delegation and publishes subagent.started; raw adds
// the protocol's own fields (under mu).
func (p *publisher) begin(raw map[string]any) {
	p.begun = true
	a := p.a
	d := a.d
	d.audit.Begin(audit.Record{DelegationID: a.id, RunID: a.req.RunID, ParentToolCallID: d.corr.ParentOf(a.id), AgentKey: a.spec.Key,
		AgentName: a.spec.DisplayName, Protocol: a.spec.Protocol, Tenant: a.spec.Tenant, RemoteTaskID: p.ids.task, RemoteContextID: p.ids.context,
		CardFingerprint: p.fingerprint, Mode: p.mode, Objective: a.objective(), Status: audit.StatusRunning, StartedAt: a.start})
	started := map[string]any{"correlation": string(d.corr.Level(a.id))}
	if p.fingerprint != "" {
		started["card_fingerprint"] = p.fingerprint
	}
	if p.mode != "" {
		started["mode"] = p.mode
	}
	maps.Copy(started, raw)
	p.send(delegation.DelegationEvent{Kind: delegation.DelegationStarted, Status: "starting", Raw: started})
	a.log.Info("delegation started", "mode", p.mode)
}

// noteContextLost tells the user, right after subagent.started, that the
// delegation's sticky context could not be read (under mu).
func (p *publisher) noteContextLost() {
	if p.ctxLost {
		p.ctxLost = false
		p.send(delegation.DelegationEvent{Kind: delegation.DelegationStatus, Status: StatusContextUnavailable,
			Text: "The remote context this conversation used could not be read in time; this delegation starts a new one."})
	}
}

// send fills the common fields, scrubs known secrets from every field, and
// sends ev to the bus, the audit log and the OnEvent hook (under mu).
func (p *publisher) send(ev delegation.DelegationEvent) {
	a := p.a
	d := a.d
	red := d.reg.Secrets().Redact
	ev.RunID = a.req.RunID
	ev.DelegationID = a.id
	if p.parent == "" {
		p.parent = d.corr.ParentOf(a.id)
	}
	ev.ParentToolCallID = p.parent
	ev.AgentKey = a.spec.Key
	ev.AgentName = a.spec.DisplayName
	ev.Protocol = a.spec.Protocol
	ev.RemoteTaskID = p.ids.task
	ev.RemoteContextID = p.ids.context
	ev.RemoteMessageID = red(ev.RemoteMessageID)
	ev.RemoteArtifactID = red(ev.RemoteArtifactID)
	ev.Raw = redactRaw(red, ev.Raw)
	ev.Time = time.Now()
	ev.Delta = red(ev.Delta)
	ev.Text = red(ev.Text)
	ev.Status = red(ev.Status)
	if ev.Error != nil {
		e := *ev.Error
		e.Message = red(e.Message)
		ev.Error = &e
	}
	if ev.Artifact != nil {
		art := *ev.Artifact
		art.ID, art.Name, art.URI = red(art.ID), red(art.Name), red(art.URI)
		if art.Error != nil {
			e := *art.Error
			e.Message = red(e.Message)
			art.Error = &e
		}
		ev.Artifact = &art
	}
	if ev.Kind == delegation.DelegationInputRequired && a.spec.Policy.InputMode() == registry.InputRequiredSurface {
		// Accept answers from the moment the UI can see the question (a
		// question returned to the parent is answered by the parent only).
		d.setWaiting(a, true)
	}
	d.bus.Publish(ev)
	if level := a.spec.Policy.AuditLevel; level != registry.AuditMinimal || ev.Kind.Critical() {
		ae := audit.Event{Kind: ev.Kind, Time: ev.Time, Status: ev.Status, RemoteTaskID: ev.RemoteTaskID, RemoteMessageID: ev.RemoteMessageID,
			RemoteArtifactID: ev.RemoteArtifactID, Artifact: ev.Artifact, Error: ev.Error}
		if level == registry.AuditFull {
			ae.Text = sanitize.Truncate(ev.Delta+ev.Text, 2000)
		}
		if ev.Kind != delegation.DelegationTextDelta || level == registry.AuditFull {
			d.audit.Event(a.id, ae)
		}
	}
	if p.onEvent != nil {
		p.onEvent(ev)
	}
}

// redactRaw removes known secrets from a Raw payload (remote payloads are
// preserved there, so a remote echoing the credential must not leak it).
func redactRaw(red func(string) string, raw map[string]any) map[string]any {
	if raw == nil {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return map[string]any{"unencodable": true}
	}
	if s := red(string(b)); s != string(b) {
		var out map[string]any
		if json.Unmarshal([]byte(s), &out) == nil {
			return out
		}
		return map[string]any{"redacted": true}
	}
	return raw
}
