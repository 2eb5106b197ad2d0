package fakea2a

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// AssistantOutput is the artifact name (and id) used by [TextChunks] for
// streamed assistant text, as the host's A2A bridge emits it.
const AssistantOutput = "assistant-output"

// StepKind is the kind of one scripted step.
type StepKind int

// Step kinds; build steps with the constructor functions (Working, ...).
const (
	StepStatus StepKind = iota + 1
	StepArtifact
	StepInputRequired
	StepHang
	StepDropStream
	StepCloseStream
	StepDuplicate
	StepSleep
	StepAwaitSubscribe
	StepAwaitRelease
)

// Step is one action of a task script.
type Step struct {
	Kind StepKind
	// State and Text for StepStatus and StepInputRequired.
	State a2a.TaskState
	Text  string
	// Artifact for StepArtifact.
	Artifact ArtifactSpec
	// Duration for StepSleep.
	Duration time.Duration
}

// ArtifactSpec describes one artifact-update event.
type ArtifactSpec struct {
	// ID is the artifact id; "" means Name (or a generated id).
	ID string
	// Name is the artifact name.
	Name string
	// Text, if set, becomes one text part (after Parts).
	Text string
	// Parts are sent as is.
	Parts []*a2a.Part
	// Append and LastChunk are copied to the event.
	Append, LastChunk bool
}

// Behavior is the script of one task. The executor runs Steps in order;
// InputRequired pauses the task and a follow-up message for the same task
// resumes at the next step. A script that ends without a terminal or
// InputRequired step (or is stopped by cancel or server close) ends the
// execution with an error, which a2a-go turns into a failed task.
type Behavior struct {
	Steps []Step
	// RawStream, when non-nil, bypasses a2a-go for JSON-RPC
	// SendStreamingMessage: each entry is written verbatim as the "result"
	// of one SSE frame ({"jsonrpc":"2.0","id":...,"result":ENTRY}), even if
	// it is not valid JSON, and the stream then closes. Use it for protocol
	// violations a2a-go's server refuses to produce (events after a
	// terminal, malformed payloads). The task is unknown to GetTask.
	RawStream []string
}

// Script builds a Behavior from steps.
func Script(steps ...Step) Behavior { return Behavior{Steps: steps} }

// Working emits a working status whose agent message has text ("" for none).
func Working(text string) Step {
	return Step{Kind: StepStatus, State: a2a.TaskStateWorking, Text: text}
}

// Status emits a status update with any state.
func Status(state a2a.TaskState, text string) Step {
	return Step{Kind: StepStatus, State: state, Text: text}
}

// Completed emits the completed terminal status.
func Completed(text string) Step { return Status(a2a.TaskStateCompleted, text) }

// Failed emits the failed terminal status.
func Failed(text string) Step { return Status(a2a.TaskStateFailed, text) }

// Rejected emits the rejected terminal status.
func Rejected(text string) Step { return Status(a2a.TaskStateRejected, text) }

// InputRequired pauses the task in input-required with question; the next
// message for the task resumes the script after this step.
func InputRequired(question string) Step {
	return Step{Kind: StepInputRequired, State: a2a.TaskStateInputRequired, Text: question}
}

// Artifact emits one artifact update.
func Artifact(spec ArtifactSpec) Step { return Step{Kind: StepArtifact, Artifact: spec} }

// TextChunks emits the chunks as one streamed "assistant-output" artifact:
// the first chunk creates it, the others append, the last has LastChunk.
func TextChunks(chunks ...string) []Step {
	steps := make([]Step, 0, len(chunks))
	for i, c := range chunks {
		steps = append(steps, Artifact(ArtifactSpec{
			ID: AssistantOutput, Name: AssistantOutput, Text: c,
			Append: i > 0, LastChunk: i == len(chunks)-1,
		}))
	}
	return steps
}

// HugeArtifact emits one artifact whose single text part has size bytes.
func HugeArtifact(name string, size int) Step {
	return Artifact(ArtifactSpec{Name: name, Text: strings.Repeat("x", size), LastChunk: true})
}

// Hang blocks the task until it is cancelled or the server closes.
func Hang() Step { return Step{Kind: StepHang} }

// DropStream cuts the current streaming connection abruptly (TCP close
// mid-response) after the events emitted so far were written. The task
// keeps running, so subscribe and get can recover it.
func DropStream() Step { return Step{Kind: StepDropStream} }

// CloseStream ends the current streaming response cleanly (as if the
// server finished it) before a terminal state. The task keeps running.
func CloseStream() Step { return Step{Kind: StepCloseStream} }

// Duplicate re-emits the previous event.
func Duplicate() Step { return Step{Kind: StepDuplicate} }

// Sleep pauses the script.
func Sleep(d time.Duration) Step { return Step{Kind: StepSleep, Duration: d} }

// AwaitSubscribe blocks until a SubscribeToTask stream for the task has
// delivered its first event (or cancel/close). Use it after DropStream to
// make recovery by resubscription deterministic.
func AwaitSubscribe() Step { return Step{Kind: StepAwaitSubscribe} }

// AwaitRelease blocks until [Server.Release] is called for the task (or
// cancel/close).
func AwaitRelease() Step { return Step{Kind: StepAwaitRelease} }

// Steps flattens steps and step lists into one slice:
// Steps(Working("a"), TextChunks("x", "y"), Completed("")).
func Steps(items ...any) []Step {
	var out []Step
	for _, it := range items {
		switch v := it.(type) {
		case Step:
			out = append(out, v)
		case []Step:
			out = append(out, v...)
		}
	}
	return out
}

// ByText returns a chooser that picks the behavior whose key equals the
// first message's text, or def.
func ByText(m map[string]Behavior, def Behavior) func(*a2a.Message) Behavior {
	return func(msg *a2a.Message) Behavior {
		if msg != nil {
			var b strings.Builder
			for _, p := range msg.Parts {
				if p != nil {
					b.WriteString(p.Text())
				}
			}
			if bh, ok := m[b.String()]; ok {
				return bh
			}
		}
		return def
	}
}

// RawTask returns a RawStream entry for a task snapshot.
func RawTask(taskID, contextID string, state a2a.TaskState) string {
	return mustJSON(a2a.StreamResponse{Event: &a2a.Task{ID: a2a.TaskID(taskID), ContextID: contextID, Status: a2a.TaskStatus{State: state}}})
}

// RawStatus returns a RawStream entry for a status update.
func RawStatus(taskID, contextID string, state a2a.TaskState, text string) string {
	st := a2a.TaskStatus{State: state}
	if text != "" {
		st.Message = a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(text))
	}
	return mustJSON(a2a.StreamResponse{Event: &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(taskID), ContextID: contextID, Status: st}})
}

// RawArtifact returns a RawStream entry for an artifact update with text.
func RawArtifact(taskID, contextID, name, text string, appendChunk, last bool) string {
	return mustJSON(a2a.StreamResponse{Event: &a2a.TaskArtifactUpdateEvent{
		TaskID: a2a.TaskID(taskID), ContextID: contextID, Append: appendChunk, LastChunk: last,
		Artifact: &a2a.Artifact{ID: a2a.ArtifactID(name), Name: name, Parts: a2a.ContentParts{a2a.NewTextPart(text)}},
	}})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
