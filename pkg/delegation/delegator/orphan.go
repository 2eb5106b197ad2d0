package delegator

import (
	"context"
	"time"

	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// EndOrphan ends a delegation that no process follows any more — its run's
// host process died (docs/design.md#scale-out) — from its audit record: it
// cancels the remote task through the registry's connection to the agent
// (protocols whose agents implement remote.TaskCanceller; bounded by
// CancelTimeout) and records the delegation's end in the audit as
// cancelled with the given failure code and message. The remote task id
// is the record's, else the last one its events name. A record that already
// ended is left alone (CancelNotNeeded). It returns the cancellation's
// outcome.
func (d *Delegator) EndOrphan(ctx context.Context, rec audit.Record, code delegation.FailureCode, message string) remote.CancelOutcome {
	if rec.Status != audit.StatusRunning {
		return remote.CancelNotNeeded
	}
	for i := len(rec.Events) - 1; i >= 0 && rec.RemoteTaskID == ""; i-- {
		rec.RemoteTaskID = rec.Events[i].RemoteTaskID // named after Begin
	}
	out := remote.CancelNotNeeded
	if rec.RemoteTaskID != "" {
		cctx, cancel := context.WithTimeout(ctx, d.cfg.CancelTimeout)
		if o, gated, again := d.cancelGate(cctx, rec.RunID, rec.DelegationID); gated {
			out = o
		} else {
			out = d.cancelByID(cctx, rec, string(code), again)
		}
		cancel()
		if out == remote.CancelPending {
			// Retried gently, as a live delegation's (Config.CleanupInterval),
			// each retry reading the task first (RetryCancelTask).
			// The watcher gets a copy: rec is ended below, on this goroutine.
			task := rec
			log := d.log.With("delegation_id", task.DelegationID, "run_id", task.RunID, "agent", task.AgentKey)
			d.watch(task.DelegationID, log, func(ctx context.Context) remote.CancelOutcome {
				cctx, cancel := context.WithTimeout(ctx, d.cfg.CancelTimeout)
				defer cancel()
				if o, gated, _ := d.cancelGate(cctx, task.RunID, task.DelegationID); gated {
					return o
				}
				return d.cancelByID(cctx, task, "cleanup", true)
			})
		}
	}
	now := time.Now()
	rec.Status = delegation.StatusCancelled
	rec.EndedAt = now
	if !rec.StartedAt.IsZero() {
		rec.DurationMS = now.Sub(rec.StartedAt).Milliseconds()
	}
	if out == remote.CancelConfirmed || out == remote.CancelPending || out == remote.CancelUnaddressable {
		ok := out == remote.CancelConfirmed
		rec.CancelConfirmed = &ok
	}
	derr := &delegation.DelegationError{Code: code, Message: message}
	rec.Result = &delegation.Result{DelegationID: rec.DelegationID, Agent: rec.AgentKey, RemoteProtocol: rec.Protocol,
		RemoteTaskID: rec.RemoteTaskID, RemoteContextID: rec.RemoteContextID, Status: delegation.StatusCancelled,
		Artifacts: []delegation.ResultArtifact{}, Messages: []delegation.ResultMessage{}, Error: derr}
	rec.Events = append(rec.Events, audit.Event{Kind: delegation.DelegationCancelled, Time: now, Error: derr})
	d.audit.End(rec)
	return out
}

// cancelByID cancels rec's remote task by its id; retry is a cleanup
// watcher's attempt (remote.TaskCanceller.RetryCancelTask: the task is read
// first and sent its cancellation again only if it still runs).
func (d *Delegator) cancelByID(ctx context.Context, rec audit.Record, reason string, retry bool) remote.CancelOutcome {
	agent, cerr := d.reg.Connect(ctx, rec.AgentKey)
	if cerr != nil {
		d.log.Warn("cancelling an orphaned remote task: agent unavailable", "agent", rec.AgentKey, "delegation_id", rec.DelegationID,
			"error", d.reg.Secrets().Redact(cerr.Error()))
		return remote.CancelPending
	}
	tc, ok := agent.(remote.TaskCanceller)
	if !ok {
		// AG-UI: the request that ran the task died with its process.
		return remote.CancelNotNeeded
	}
	meta := map[string]any{"reason": reason, "delegation_id": rec.DelegationID,
		"run_id": rec.RunID, "agent": rec.AgentKey, "requested_by": "agentadaptor"}
	cancel := tc.CancelTask
	if retry {
		cancel = tc.RetryCancelTask
	}
	out := cancel(ctx, rec.RemoteTaskID, meta)
	d.log.Info("cancelled an orphaned remote task", "agent", rec.AgentKey, "delegation_id", rec.DelegationID, "confirmed", out == remote.CancelConfirmed)
	return out
}

// cancelGate asks Config.CancelClaim whether this process cancels the
// delegation's remote task: gated is true when it must not send the
// cancellation now, with the outcome to report (not needed: another
// process cancels it; pending: unknown, retried); again is true when this
// process claimed it before (CancelMineAgain: read the task first).
func (d *Delegator) cancelGate(ctx context.Context, runID, delegationID string) (out remote.CancelOutcome, gated, again bool) {
	if d.cfg.CancelClaim == nil {
		return 0, false, false
	}
	turn, err := d.cfg.CancelClaim(ctx, runID, delegationID)
	switch {
	case err != nil:
		d.log.Warn("cannot tell which host replica cancels a remote task; retrying later", "delegation_id", delegationID, "run_id", runID, "error", err.Error())
		return remote.CancelPending, true, false
	case turn == CancelOthers:
		return remote.CancelNotNeeded, true, false
	}
	return 0, false, turn == CancelMineAgain
}
