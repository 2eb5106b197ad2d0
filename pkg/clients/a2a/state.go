package a2a

import (
	"strings"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
)

// NormalizeState maps v0.3 spellings ("completed", "input-required", ...)
// and case variants onto the v1.0 TASK_STATE_* constants. Unknown values
// are returned unchanged.
func NormalizeState(s TaskState) TaskState {
	v := strings.ToUpper(strings.TrimSpace(string(s)))
	v = strings.ReplaceAll(v, "-", "_")
	if v == "" {
		return sdk.TaskStateUnspecified
	}
	if !strings.HasPrefix(v, "TASK_STATE_") {
		v = "TASK_STATE_" + v
	}
	if v == "TASK_STATE_CANCELLED" {
		v = string(sdk.TaskStateCanceled)
	}
	switch TaskState(v) {
	case StateSubmitted, StateWorking, StateInputRequired, StateAuthRequired,
		StateCompleted, StateFailed, StateCanceled, StateRejected:
		return TaskState(v)
	}
	return s
}

// IsTerminal reports whether s is a final state: completed, failed,
// canceled or rejected. input-required and auth-required are not terminal
// (see [IsInterrupted]).
func IsTerminal(s TaskState) bool { return NormalizeState(s).Terminal() }

// IsInterrupted reports whether s pauses the task waiting for the client:
// input-required or auth-required. The remote stream ends there, but the
// task continues when the client sends a follow-up message for it.
func IsInterrupted(s TaskState) bool {
	n := NormalizeState(s)
	return n == StateInputRequired || n == StateAuthRequired
}

// IsKnownState reports whether s (after normalization) is one of the eight
// A2A task states.
func IsKnownState(s TaskState) bool {
	switch NormalizeState(s) {
	case StateSubmitted, StateWorking, StateInputRequired, StateAuthRequired,
		StateCompleted, StateFailed, StateCanceled, StateRejected:
		return true
	}
	return false
}

// StateOf returns the task state an event carries: the status of a *Task or
// *StatusUpdate. ok is false for messages and artifact updates.
func StateOf(ev Event) (state TaskState, ok bool) {
	switch e := ev.(type) {
	case *sdk.Task:
		if e == nil {
			return "", false
		}
		return NormalizeState(e.Status.State), true
	case *sdk.TaskStatusUpdateEvent:
		if e == nil {
			return "", false
		}
		return NormalizeState(e.Status.State), true
	}
	return "", false
}

// IsTerminalEvent reports whether ev carries a terminal task state.
func IsTerminalEvent(ev Event) bool {
	s, ok := StateOf(ev)
	return ok && IsTerminal(s)
}

// TextOf concatenates the text parts of parts.
func TextOf(parts []*Part) string {
	if len(parts) == 1 && parts[0] != nil {
		return parts[0].Text() // one part (a streamed chunk): no copy
	}
	var b strings.Builder
	for _, p := range parts {
		if p != nil {
			b.WriteString(p.Text())
		}
	}
	return b.String()
}
