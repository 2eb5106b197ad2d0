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
	// RetryCancelTask retries a cancellation of taskID whose outcome was
	// CancelPending, by the rule of CancelRetrier.RetryCancel.
	RetryCancelTask(ctx context.Context, taskID string, meta map[string]any) CancelOutcome
}

// CancelRetrier is implemented by the Tasks of protocols whose
// cancellation can reach the remote although its answer never comes back
// (an A2A CancelTask whose answer is lost, or read after the cancel
// timeout). A cleanup watcher retries a pending cancellation with
// RetryCancel rather than Cancel, so that a remote task is sent its
// cancellation once unless the remote shows it still running
// (docs/design.md#the-cleanup-watcher). A Task without it is retried with
// Cancel.
type CancelRetrier interface {
	// RetryCancel retries a cancellation whose outcome was CancelPending,
	// bounded by ctx. It reads the task first: a task that has ended, or
	// that the remote does not know, confirms the earlier cancellation
	// (CancelConfirmed) and nothing is sent; a task still running is sent
	// the cancellation again, as Cancel does; a task that cannot be read
	// now (timeout, remote unreachable) is CancelPending with nothing
	// sent, and the next retry reads it again. A remote that answers the
	// read with another error is sent the cancellation again.
	RetryCancel(ctx context.Context, meta map[string]any) CancelOutcome
}
