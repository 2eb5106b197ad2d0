package a2a

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

// RecoveryOutcome says how [RecoverTask] ended.
type RecoveryOutcome string

const (
	// RecoveryResubscribed: a resubscribed stream reached a terminal or
	// interrupted state.
	RecoveryResubscribed RecoveryOutcome = "resubscribed"
	// RecoveryPolled: the task had no active execution (or the agent
	// cannot stream) and GetTask returned a terminal or interrupted state.
	RecoveryPolled RecoveryOutcome = "polled"
	// RecoveryFailed: attempts were exhausted, a non-retryable error
	// occurred, or ctx ended. RecoveryReport.Err says why.
	RecoveryFailed RecoveryOutcome = "failed"
)

// RecoverOptions tune [RecoverTask]. The zero value gives the defaults.
type RecoverOptions struct {
	// Tenant is sent with every call.
	Tenant string
	// HistoryLength is sent with GetTask calls.
	HistoryLength *int
	// MaxAttempts bounds resubscribe/poll attempts; 0 means 5.
	MaxAttempts int
	// InitialBackoff is the wait after the first failed attempt, doubled
	// each time up to MaxBackoff; 0 means 200ms and 5s.
	InitialBackoff, MaxBackoff time.Duration
	// OnEvent, if set, receives every event of the resubscribed streams in
	// order (exactly one terminal). A resubscription starts with a task
	// snapshot; events missed while disconnected are not replayed.
	OnEvent func(Event)
	// Stream tunes the resubscribed streams.
	Stream StreamOptions
}

// RecoveryReport is what [RecoverTask] did.
type RecoveryReport struct {
	// Outcome is resubscribed, polled or failed.
	Outcome RecoveryOutcome
	// Attempts counts resubscribe and poll attempts.
	Attempts int
	// Resubscribes and Polls count the calls of each kind.
	Resubscribes, Polls int
	// Task is the latest task snapshot obtained (nil if none).
	Task *Task
	// State is the last state seen ("" if none).
	State TaskState
	// Err is the error that made recovery fail (nil unless failed).
	Err error
}

// RecoverTask re-attaches to a task after its stream was cut (an error, or
// a clean close before a terminal state). Each attempt resubscribes; when
// the task has no active execution (clienterr.KindNotFound from Subscribe) or the
// agent cannot stream (clienterr.KindRejected), it polls GetTask instead. Retryable
// failures (unavailable, interrupted, timeout of one call) are retried with
// exponential backoff up to MaxAttempts; other errors end recovery.
//
// It returns a non-nil report in all cases and an error iff the outcome is
// RecoveryFailed. A task that ends in input-required or auth-required is a
// successful recovery with that State. RecoverTask never cancels the task.
func RecoverTask(ctx context.Context, c *Client, taskID TaskID, opts RecoverOptions) (*RecoveryReport, error) {
	rep := &RecoveryReport{}
	if c == nil || taskID == "" {
		rep.Outcome, rep.Err = RecoveryFailed, NewError(clienterr.KindRejected, "recover", errors.New("RecoverTask needs a client and a task id"))
		return rep, rep.Err
	}
	maxAttempts := opts.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = 5
	}
	backoff, maxBackoff := opts.InitialBackoff, opts.MaxBackoff
	if backoff <= 0 {
		backoff = 200 * time.Millisecond
	}
	if maxBackoff <= 0 {
		maxBackoff = 5 * time.Second
	}
	poll, skipWait := false, true
	var lastErr error
	for rep.Attempts < maxAttempts {
		if !skipWait {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return failRecovery(rep, classify(ctx, "recover", ctx.Err(), 0, false, ""))
			case <-t.C:
			}
			backoff = min(backoff*2, maxBackoff)
		}
		skipWait = false
		rep.Attempts++
		if !poll {
			rep.Resubscribes++
			done, err := resubscribeOnce(ctx, c, taskID, opts, rep)
			if done {
				rep.Outcome = RecoveryResubscribed
				if t, gerr := c.GetTask(ctx, GetTaskRequest{TaskID: taskID, Tenant: opts.Tenant, HistoryLength: opts.HistoryLength}); gerr == nil {
					rep.Task = t
				}
				return rep, nil
			}
			lastErr = err
			switch {
			case errors.Is(err, clienterr.ErrNotFound), errors.Is(err, clienterr.ErrRejected):
				// No active execution, or no streaming: poll right away.
				poll, skipWait = true, true
				continue
			case ctx.Err() != nil:
				return failRecovery(rep, err)
			case !isRetryable(err):
				return failRecovery(rep, err)
			}
			continue
		}
		rep.Polls++
		t, err := c.GetTask(ctx, GetTaskRequest{TaskID: taskID, Tenant: opts.Tenant, HistoryLength: opts.HistoryLength})
		if err != nil {
			lastErr = err
			if ctx.Err() != nil || !isRetryable(err) {
				return failRecovery(rep, err)
			}
			continue
		}
		rep.Task, rep.State = t, NormalizeState(t.Status.State)
		if IsTerminal(rep.State) || IsInterrupted(rep.State) {
			rep.Outcome = RecoveryPolled
			return rep, nil
		}
		lastErr = NewError(clienterr.KindInterrupted, "recover", fmt.Errorf("task %s still %s", taskID, rep.State))
	}
	if lastErr == nil {
		lastErr = errors.New("no attempt made")
	}
	return failRecovery(rep, NewError(clienterr.KindOf(lastErr), "recover",
		fmt.Errorf("gave up after %d attempts: %w", rep.Attempts, lastErr)))
}

func isRetryable(err error) bool {
	var e *clienterr.Error
	return errors.As(err, &e) && e.Retryable()
}

func failRecovery(rep *RecoveryReport, err error) (*RecoveryReport, error) {
	if clienterr.KindOf(err) == 0 {
		err = NewError(clienterr.KindUnavailable, "recover", err)
	}
	rep.Outcome, rep.Err = RecoveryFailed, err
	return rep, err
}

// resubscribeOnce reads one resubscribed stream to its end. done is true
// when a terminal or interrupted state was reached.
func resubscribeOnce(ctx context.Context, c *Client, taskID TaskID, opts RecoverOptions, rep *RecoveryReport) (bool, error) {
	s, err := c.Subscribe(ctx, SubscribeRequest{TaskID: taskID, Tenant: opts.Tenant}, opts.Stream)
	if err != nil {
		return false, err
	}
	defer s.Close()
	for s.Next() {
		ev := s.Event()
		if t, ok := ev.(*Task); ok {
			rep.Task = t
		}
		if opts.OnEvent != nil {
			opts.OnEvent(ev)
		}
	}
	if st := s.State(); st != "" {
		rep.State = st
	}
	if s.Err() != nil {
		return false, s.Err()
	}
	return IsTerminal(s.State()) || IsInterrupted(s.State()), nil
}
