package remote

import "context"

// TaskCanceller is implemented by the Agents of protocols that can cancel a
// remote task by its id alone, without the Task that started it: what a
// host needs to cancel the tasks of a run whose process died
// (docs/design.md#scale-out).
type TaskCanceller interface {
	// CancelTask asks the remote to cancel the task taskID, bounded by
	// ctx; meta is sent along where the protocol allows.
	CancelTask(ctx context.Context, taskID string, meta map[string]any) CancelOutcome
}
