package a2aremote

import (
	"context"

	sdka2a "github.com/a2aproject/a2a-go/v2/a2a"

	a2aclient "github.com/seed0634/agentadaptor/pkg/clients/a2a"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

var (
	_ remote.TaskCanceller = (*agent)(nil)
	_ remote.CancelRetrier = (*task)(nil)
)

// CancelTask implements remote.TaskCanceller: one CancelTask with the
// metadata; when the remote refuses or does not know the task, a GetTask
// tells whether it has ended already.
func (a *agent) CancelTask(ctx context.Context, taskID string, meta map[string]any) remote.CancelOutcome {
	if taskID == "" {
		return remote.CancelNotNeeded
	}
	out, _ := a.cancelTask(ctx, sdka2a.TaskID(taskID), meta)
	return out
}

// RetryCancelTask implements remote.TaskCanceller: GetTask first, and
// CancelTask again only for a task the remote shows still running
// (remote.CancelRetrier).
func (a *agent) RetryCancelTask(ctx context.Context, taskID string, meta map[string]any) remote.CancelOutcome {
	if taskID == "" {
		return remote.CancelNotNeeded
	}
	out, _ := a.retryCancelTask(ctx, sdka2a.TaskID(taskID), meta)
	return out
}

// cancelTask sends one CancelTask for id: confirmed when the task it
// returns is terminal; when the remote refuses (not cancelable) or does
// not know the task, a GetTask tells whether it has simply ended already.
// err is the CancelTask's error, for the caller's log.
func (a *agent) cancelTask(ctx context.Context, id sdka2a.TaskID, meta map[string]any) (remote.CancelOutcome, error) {
	got, err := a.client.CancelTask(ctx, a2aclient.CancelTaskRequest{TaskID: id, Tenant: a.ep.Tenant, Metadata: meta})
	if err == nil {
		if got != nil && a2aclient.IsTerminal(got.Status.State) {
			return remote.CancelConfirmed, nil
		}
		return remote.CancelPending, nil
	}
	if k := clienterr.KindOf(err); k == clienterr.KindRejected || k == clienterr.KindNotFound {
		got, gerr := a.client.GetTask(ctx, a2aclient.GetTaskRequest{TaskID: id, Tenant: a.ep.Tenant})
		switch {
		case gerr == nil && a2aclient.IsTerminal(got.Status.State):
			return remote.CancelConfirmed, err
		case clienterr.KindOf(gerr) == clienterr.KindNotFound:
			return remote.CancelConfirmed, err
		}
	}
	return remote.CancelPending, err
}

// retryCancelTask retries a pending cancellation of id: the earlier
// CancelTask may have reached the remote although its answer was lost or
// came after the cancel timeout, so the task is read first. Terminal or
// unknown: that cancellation (or the task's own end) is confirmed and
// nothing is sent. Unreadable for now (timeout, unreachable, the caller
// gave up): still pending, nothing sent. Still running, or a read the
// remote refuses otherwise: CancelTask again (cancelTask).
func (a *agent) retryCancelTask(ctx context.Context, id sdka2a.TaskID, meta map[string]any) (remote.CancelOutcome, error) {
	zero := 0
	got, err := a.client.GetTask(ctx, a2aclient.GetTaskRequest{TaskID: id, Tenant: a.ep.Tenant, HistoryLength: &zero})
	switch k := clienterr.KindOf(err); {
	case err == nil && a2aclient.IsTerminal(got.Status.State), k == clienterr.KindNotFound:
		return remote.CancelConfirmed, nil
	case err == nil:
	case k.Retryable() || k == clienterr.KindCanceled:
		return remote.CancelPending, err
	}
	return a.cancelTask(ctx, id, meta)
}
