package remote

// State is a remote task's state as the host reports it: the lowercase,
// hyphenated label used in events and results ("working",
// "input-required", "completed", ...). The zero value is unknown.
type State string

// The states a task can be in. A remote AG-UI run maps onto the same set
// (a run is working, paused for input, completed or failed).
const (
	StateSubmitted     State = "submitted"
	StateWorking       State = "working"
	StateInputRequired State = "input-required"
	StateAuthRequired  State = "auth-required"
	StateCompleted     State = "completed"
	StateFailed        State = "failed"
	StateCanceled      State = "canceled"
	StateRejected      State = "rejected"
)

// Terminal reports whether s ends the task.
func (s State) Terminal() bool {
	switch s {
	case StateCompleted, StateFailed, StateCanceled, StateRejected:
		return true
	}
	return false
}

// Interrupted reports whether the task waits for the user: for input or
// for authentication.
func (s State) Interrupted() bool { return s == StateInputRequired || s == StateAuthRequired }

// Label returns s as the remote_status of events and errors.
func (s State) Label() string { return string(s) }
