package agentadaptor

import (
	"errors"
	"fmt"
)

// FailureCode classifies why a run did not complete.
type FailureCode string

// Failure codes of runs. Adapters report the CLI-specific ones; the SDK
// reports the process- and lifecycle-level ones.
const (
	FailureStart            FailureCode = "start_failed"           // the process could not be started
	FailureRuntimeService   FailureCode = "runtime_service_failed" // a runtime service could not be ensured
	FailureInvalidConfig    FailureCode = "invalid_config"         // options or adapter profile were invalid
	FailureExit             FailureCode = "process_exit"           // the process exited non-zero without a better reason
	FailureTimeout          FailureCode = "timeout"                // the run's timeout expired
	FailureCancelled        FailureCode = "cancelled"              // the run was cancelled
	FailureAgent            FailureCode = "agent_error"            // the agent reported an error result
	FailureModel            FailureCode = "model_error"            // the model API failed (HTTP error, overload)
	FailureMCPServer        FailureCode = "mcp_server_failed"      // a required MCP server failed to connect
	FailurePermissionDenied FailureCode = "permission_denied"      // the agent was denied a tool or action
	FailureProtocol         FailureCode = "protocol_error"         // the CLI's output could not be understood
)

// Failure is the typed reason a run failed or was cancelled. It is an error.
type Failure struct {
	Code      FailureCode    `json:"code"`
	Message   string         `json:"message"`
	ExitCode  int            `json:"exit_code,omitempty"`
	Retryable bool           `json:"retryable,omitempty"`
	Detail    map[string]any `json:"detail,omitempty"`
	// Err is the underlying cause, if any; it is not serialized.
	Err error `json:"-"`
}

// Error implements error.
func (f *Failure) Error() string {
	if f == nil {
		return "<nil failure>"
	}
	if f.Message == "" {
		return string(f.Code)
	}
	return string(f.Code) + ": " + f.Message
}

// Unwrap returns the underlying cause.
func (f *Failure) Unwrap() error { return f.Err }

// Is reports whether target is a *Failure with the same Code, so callers can
// write errors.Is(err, &agentadaptor.Failure{Code: agentadaptor.FailureTimeout}).
func (f *Failure) Is(target error) bool {
	var t *Failure
	if errors.As(target, &t) && t != nil {
		return t.Code == f.Code && (t.Message == "" || t.Message == f.Message)
	}
	return false
}

// ConfigError reports an invalid option, MCP server spec or adapter setting.
// Field names the offending field, e.g. `MCPServerSpec[a2a-delegation].URL`.
type ConfigError struct {
	Field  string
	Reason string
	Err    error
}

// Error implements error.
func (e *ConfigError) Error() string {
	msg := "agentadaptor: invalid " + e.Field + ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying cause.
func (e *ConfigError) Unwrap() error { return e.Err }

// ErrUnknownAdapter is returned (wrapped) by Start when the requested adapter
// is not registered with the SDK.
var ErrUnknownAdapter = errors.New("agentadaptor: unknown adapter")

// ErrNoAdapter is returned by Start when neither the call nor the SDK names an
// adapter.
var ErrNoAdapter = errors.New("agentadaptor: no adapter selected: pass WithAdapterName or register a default adapter")

// StartError is returned by Start when a run was allocated but its process
// could not be started. The run's runtime services have been released and its
// temp dir removed. Failure carries the typed reason.
type StartError struct {
	RunID   string
	Failure *Failure
}

// Error implements error.
func (e *StartError) Error() string {
	return fmt.Sprintf("agentadaptor: run %s did not start: %v", e.RunID, e.Failure)
}

// Unwrap returns the failure, so errors.As(err, new(*Failure)) works.
func (e *StartError) Unwrap() error { return e.Failure }
