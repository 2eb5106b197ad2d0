package a2aremote

import (
	"context"

	sdka2a "github.com/a2aproject/a2a-go/v2/a2a"

	a2aclient "github.com/seed0634/agentadaptor/pkg/clients/a2a"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

var _ remote.TaskCanceller = (*agent)(nil)

// CancelTask implements remote.TaskCanceller: one CancelTask with the
// metadata; when the remote refuses or does not know the task, a GetTask
// tells whether it has ended already.
func (a *agent) CancelTask(ctx context.Context, taskID string, meta map[string]any) remote.CancelOutcome {
	if taskID == "" {
		return remote.CancelNotNeeded
	}
	id := sdka2a.TaskID(taskID)
	got, err := a.client.CancelTask(ctx, a2aclient.CancelTaskRequest{TaskID: id, Tenant: a.ep.Tenant, Metadata: meta})
	if err == nil {
		if got != nil && a2aclient.IsTerminal(got.Status.State) {
			return remote.CancelConfirmed
		}
		return remote.CancelPending
	}
	if k := clienterr.KindOf(err); k == clienterr.KindRejected || k == clienterr.KindNotFound {
		got, gerr := a.client.GetTask(ctx, a2aclient.GetTaskRequest{TaskID: id, Tenant: a.ep.Tenant})
		switch {
		case gerr == nil && a2aclient.IsTerminal(got.Status.State):
			return remote.CancelConfirmed
		case clienterr.KindOf(gerr) == clienterr.KindNotFound:
			return remote.CancelConfirmed
		}
	}
	return remote.CancelPending
}
