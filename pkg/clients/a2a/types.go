package a2a

import (
	sdk "github.com/a2aproject/a2a-go/v2/a2a"
)

// Aliases of the a2a-go types callers read. They are the SDK's own types, so
// values can be passed to and from a2a-go freely.
type (
	// Task is a remote task snapshot.
	Task = sdk.Task
	// TaskID identifies a remote task.
	TaskID = sdk.TaskID
	// TaskState is a task state (TASK_STATE_* on the v1.0 wire).
	TaskState = sdk.TaskState
	// TaskStatus is a task's state with an optional agent message.
	TaskStatus = sdk.TaskStatus
	// Message is a user or agent message.
	Message = sdk.Message
	// Part is one content part of a message or artifact.
	Part = sdk.Part
	// Artifact is a task output.
	Artifact = sdk.Artifact
	// Event is any streamed event: *Task, *Message, *StatusUpdate, *ArtifactUpdate.
	Event = sdk.Event
	// StatusUpdate is a task status-update event.
	StatusUpdate = sdk.TaskStatusUpdateEvent
	// ArtifactUpdate is a task artifact-update event (Append, LastChunk).
	ArtifactUpdate = sdk.TaskArtifactUpdateEvent
	// TransportProtocol is an interface's protocol binding (JSONRPC, HTTP+JSON).
	TransportProtocol = sdk.TransportProtocol
)

// Task states, re-exported for convenience.
const (
	StateSubmitted     = sdk.TaskStateSubmitted
	StateWorking       = sdk.TaskStateWorking
	StateInputRequired = sdk.TaskStateInputRequired
	StateAuthRequired  = sdk.TaskStateAuthRequired
	StateCompleted     = sdk.TaskStateCompleted
	StateFailed        = sdk.TaskStateFailed
	StateCanceled      = sdk.TaskStateCanceled
	StateRejected      = sdk.TaskStateRejected
)

// Protocol bindings this client speaks.
const (
	TransportJSONRPC  = sdk.TransportProtocolJSONRPC
	TransportHTTPJSON = sdk.TransportProtocolHTTPJSON
)
