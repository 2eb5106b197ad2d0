package delegator

import (
	"cmp"
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/seed0634/agentadaptor/internal/sanitize"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// activeDelegation is one delegation from its start to its end, as the
// Delegator tracks it (Delegator.active). Its own fields are set by
// Delegate before anything else can reach it and never change. What
// changes lives in three parts, each with one owner:
//
//   - life, the remote task and the delegation's lifecycle: owned by the
//     goroutine of the tool call that follows the delegation (Delegate's;
//     after a park, that of the call that continues it or of the park
//     watcher that ends it, which take it over under Delegator.mu);
//   - pub, the way of its events to the bus, the audit log and the tool
//     call's progress hook: behind its own mutex (the lifecycle publishes
//     the task's events, the correlator announces the parent tool call);
//   - wait, what it accepts from outside its tool call (an answer from the
//     UI, a continuing call): guarded by Delegator.mu.
type activeDelegation struct {
	d     *Delegator
	id    string
	req   Request   // its OnEvent is the publisher's
	run   *runState // the live parent run, if the run was begun (set by track)
	known bool      // the agent is in the registry
	spec  registry.RemoteAgentSpec
	eff   registry.Effective
	log   *slog.Logger
	start time.Time

	life lifecycle
	pub  publisher
	wait inputWait
}

// inputWait is what a delegation accepts from outside its tool call,
// guarded by Delegator.mu: the UI's answer while it waits for one (the
// input_required policy "surface", AnswerInput), and, while it is parked
// (policy "return"), the call that continues it (unpark) or its park
// watcher (claimParked).
type inputWait struct {
	answer  chan string // buffered (1); drained when waiting begins
	waiting bool        // an answer from the UI is accepted now
	parked  bool        // the delegation waits for a continuing call
	resumed chan struct{}
}

// newActive returns a delegation of req with the id, its part objects
// wired, nothing tracked or started.
func (d *Delegator) newActive(id string, req Request) *activeDelegation {
	a := &activeDelegation{d: d, id: id, req: req, start: time.Now(), wait: inputWait{answer: make(chan string, 1)}}
	a.pub = publisher{a: a, onEvent: req.OnEvent}
	a.req.OnEvent = nil
	a.life.a = a
	return a
}

// transcriptConfig applies the agent's policy to the transcript.
func (a *activeDelegation) transcriptConfig() remote.TranscriptConfig {
	p := a.spec.Policy
	cfg := remote.TranscriptConfig{AllowInput: p.InputMode() != registry.InputRequiredFail, MaxArtifactBytes: p.MaxArtifactBytes, MaxArtifacts: a.eff.MaxArtifacts, Secrets: a.d.reg.Secrets()}
	if p.AllowRemoteArtifacts {
		store := a.d.artifacts
		cfg.Put = func(meta artifact.Meta, content []byte) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := store.Put(ctx, artifact.Stored{RunID: a.req.RunID, DelegationID: a.id, ID: meta.ID, Name: meta.Name, MimeType: meta.MimeType, Content: content})
			if err != nil {
				return "", err
			}
			return artifact.URI(a.id, meta.ID), nil
		}
	}
	return cfg
}

// objective is the objective as the audit keeps it: bounded, secrets scrubbed.
func (a *activeDelegation) objective() string {
	return a.d.reg.Secrets().Redact(sanitize.Truncate(a.req.Objective, 2000))
}

// taskText is the delegated task as one text: objective, prompt and context.
func (a *activeDelegation) taskText() string {
	var b strings.Builder
	b.WriteString(a.req.Objective)
	if p := strings.TrimSpace(a.req.Input.Prompt); p != "" {
		b.WriteString("\n\n")
		b.WriteString(p)
	}
	if c := strings.TrimSpace(a.req.Input.Context); c != "" {
		b.WriteString("\n\nContext:\n")
		b.WriteString(c)
	}
	return b.String()
}

// inputArtifacts resolves the model's artifact references: host artifacts
// of this run within the size policy carry their content; every other
// reference travels as a URI only (the host never fetches it).
func (a *activeDelegation) inputArtifacts() []remote.InputArtifact {
	var out []remote.InputArtifact
	for _, in := range a.req.Input.Artifacts {
		ref := remote.InputArtifact{Name: sanitize.Line(in.Name, 200), URI: in.URI}
		if del, aid, ok := artifact.ParseURI(in.URI); ok {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			st, err := a.d.artifacts.Get(ctx, a.req.RunID, del, aid)
			cancel()
			if err == nil && int64(len(st.Content)) <= a.spec.Policy.MaxArtifactBytes {
				ref.Name = sanitize.Line(cmp.Or(in.Name, st.Name), 200)
				ref.MimeType, ref.Content = st.MimeType, st.Content
			}
		}
		out = append(out, ref)
	}
	return out
}

// taskCanceller cancels one delegation's remote task. It is a value that
// never changes, so that a cleanup watcher keeps cancelling the task after
// the lifecycle that made it has ended.
type taskCanceller struct {
	d                   *Delegator
	task                remote.Task // nil: no task was created
	runID, id, agentKey string
}

// cancel asks the remote to cancel the task, bounded by
// Config.CancelTimeout (and not by ctx, which has usually ended already),
// unless Config.CancelClaim says another process cancels it. A retry (a
// cleanup watcher's attempt at a cancellation whose outcome was pending),
// or a cancellation this process claimed before (CancelMineAgain), goes
// through remote.CancelRetrier where the task has it: the earlier
// cancellation may have reached the remote although its answer did not
// come back, so the task is read first and sent the cancellation again
// only if it still runs (docs/design.md#the-cleanup-watcher).
func (c taskCanceller) cancel(ctx context.Context, reason string, retry bool) remote.CancelOutcome {
	if c.task == nil {
		return remote.CancelNotNeeded
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.d.cfg.CancelTimeout)
	defer cancel()
	out, gated, again := c.d.cancelGate(cctx, c.runID, c.id)
	if gated {
		return out
	}
	if r, ok := c.task.(remote.CancelRetrier); ok && (retry || again) {
		return r.RetryCancel(cctx, c.meta(reason))
	}
	return c.task.Cancel(cctx, c.meta(reason))
}

// retry is a cleanup watcher's attempt (cancel, reason "cleanup").
func (c taskCanceller) retry(ctx context.Context) remote.CancelOutcome {
	return c.cancel(ctx, "cleanup", true)
}

// meta is what a cancellation tells the remote.
func (c taskCanceller) meta(reason string) map[string]any {
	return map[string]any{"reason": reason, "delegation_id": c.id, "run_id": c.runID, "agent": c.agentKey, "requested_by": "agentadaptor"}
}
