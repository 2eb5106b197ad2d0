package a2a

import (
	"encoding/json"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	agentadaptor "github.com/seed0634/agentadaptor"
)

// Artifact names the bridge publishes.
const (
	// ArtifactAssistantOutput names the artifacts that carry the agent's
	// assistant text, streamed in chunks: one artifact (one artifact id) per
	// assistant text message, first chunk append=false, later chunks
	// append=true, the last chunk lastChunk=true.
	ArtifactAssistantOutput = "assistant-output"
	// ArtifactAgentAdaptorResult names the structured result of a turn: one
	// DataPart (see [Result]). It is published before every terminal or
	// input-required status, always under the artifact id
	// "agent-adaptor-result", so a later turn of the same task replaces it.
	ArtifactAgentAdaptorResult = "agent-adaptor-result"
)

// Custom payload names the bridge understands. They are the generic names
// the scripted adapter emits; any adapter may emit them.
const (
	// PayloadArtifact (Raw: name, mime_type, text) becomes an A2A artifact.
	PayloadArtifact = "agent.artifact"
	// PayloadInputRequired (Raw: text) makes the turn end in
	// TASK_STATE_INPUT_REQUIRED with the text as the status message.
	PayloadInputRequired = "agent.input_required"
)

// MetadataKind is the metadata key (on status-update events and their
// messages) that says what an exposed status message reports: "reasoning",
// "tool_call", "tool_result" or "diagnostic".
const MetadataKind = "agentadaptor/kind"

// Result statuses in the agent-adaptor-result artifact.
const (
	ResultCompleted     = "completed"
	ResultFailed        = "failed"
	ResultCancelled     = "cancelled"
	ResultInputRequired = "input_required"
)

// Exposure says which parts of a run, besides its assistant text and
// artifacts, remote callers see. Everything is hidden by default: reasoning,
// tool calls and diagnostics are local detail. When enabled, each becomes a
// TASK_STATE_WORKING status-update event whose status message carries the
// detail and whose metadata (and the message's) has [MetadataKind]:
//
//   - Reasoning: one message per reasoning block, at its end, with the whole
//     reasoning text as a text part (kind "reasoning").
//   - ToolCalls: one message when a tool call's arguments are complete, a
//     DataPart {tool_call_id, tool_name, args} (kind "tool_call"), and one
//     per result, a DataPart {tool_call_id, result, is_error} (kind
//     "tool_result").
//   - Diagnostics: a DataPart with the diagnostic {code, message, line,
//     bytes, excerpt}, or {code: "stream_dropped", dropped} when payloads were
//     dropped under backpressure (kind "diagnostic").
type Exposure struct {
	Reasoning   bool
	ToolCalls   bool
	Diagnostics bool
}

// ArtifactRef describes one artifact a turn published, as listed in the
// result artifact.
type ArtifactRef struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	MimeType string `json:"mime_type"`
}

// Result is the content of the agent-adaptor-result artifact's DataPart.
type Result struct {
	// Summary is the run's Output (its final assistant text).
	Summary string `json:"summary"`
	// Status is completed, failed, cancelled or input_required.
	Status string `json:"status"`
	// Usage is the run's token usage, when the CLI reported it.
	Usage *agentadaptor.Usage `json:"usage,omitempty"`
	// SessionID is the CLI session the run used (stable across the turns of
	// one A2A context).
	SessionID string `json:"session_id,omitempty"`
	// Artifacts lists the named artifacts the turn published (from
	// agent.artifact payloads); assistant-output text is not listed.
	Artifacts []ArtifactRef `json:"artifacts"`
	// RunID and Adapter identify the local run.
	RunID   string `json:"run_id,omitempty"`
	Adapter string `json:"adapter,omitempty"`
	// Error is set when Status is failed or cancelled.
	Error *ResultError `json:"error,omitempty"`
}

// ResultError is the failure of a turn.
type ResultError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// textState tracks one assistant message streamed as one artifact. The last
// delta is held back so the final chunk can carry lastChunk=true without an
// empty part.
type textState struct {
	id   a2a.ArtifactID
	sent bool   // a chunk went out (later chunks append)
	acc  string // text already sent
	held string // the latest delta, not yet sent
	done bool
}

// mapper turns one run's payloads into A2A events for one task. It is not
// safe for concurrent use; one Execute owns it.
type mapper struct {
	info      a2a.TaskInfo
	exposure  Exposure
	texts     map[string]*textState
	order     []string
	reasoning map[string]*strings.Builder
	artifacts []ArtifactRef
	question  string
	asked     bool
	usage     *agentadaptor.Usage
	sessionID string
}

func newMapper(info a2a.TaskInfo, exposure Exposure) *mapper {
	return &mapper{
		info: info, exposure: exposure,
		texts: map[string]*textState{}, reasoning: map[string]*strings.Builder{},
	}
}

func (m *mapper) text(id string) *textState {
	st, ok := m.texts[id]
	if !ok {
		st = &textState{id: a2a.NewArtifactID()}
		m.texts[id] = st
		m.order = append(m.order, id)
	}
	return st
}

func (m *mapper) chunk(st *textState, text string, last bool) *a2a.TaskArtifactUpdateEvent {
	ev := &a2a.TaskArtifactUpdateEvent{
		TaskID: m.info.TaskID, ContextID: m.info.ContextID,
		Append: st.sent, LastChunk: last,
		Artifact: &a2a.Artifact{
			ID: st.id, Name: ArtifactAssistantOutput,
			Parts: a2a.ContentParts{{Content: a2a.Text(text), MediaType: "text/plain"}},
		},
	}
	st.sent = true
	st.acc += text
	return ev
}

// closeText emits the held chunk of a message as its last chunk. full, when
// known, is the whole message: text lost to backpressure is appended from it.
func (m *mapper) closeText(st *textState, full string) []a2a.Event {
	if st.done {
		return nil
	}
	st.done = true
	final := st.held
	st.held = ""
	if seen := st.acc + final; len(full) > len(seen) && strings.HasPrefix(full, seen) {
		final += full[len(seen):]
	}
	if final == "" && !st.sent {
		return nil
	}
	return []a2a.Event{m.chunk(st, final, true)}
}

// payload maps one non-terminal payload.
func (m *mapper) payload(p agentadaptor.StreamPayload) []a2a.Event {
	if p.SessionID != "" {
		m.sessionID = p.SessionID
	}
	switch p.Kind {
	case agentadaptor.KindTextStart:
		m.text(p.MessageID)
	case agentadaptor.KindTextDelta:
		st := m.text(p.MessageID)
		if st.done || p.Delta == "" {
			return nil
		}
		var out []a2a.Event
		if st.held != "" {
			out = append(out, m.chunk(st, st.held, false))
		}
		st.held = p.Delta
		return out
	case agentadaptor.KindTextEnd:
		return m.closeText(m.text(p.MessageID), p.Text)
	case agentadaptor.KindUsage:
		if p.Usage != nil {
			u := *p.Usage
			m.usage = &u
		}
	case agentadaptor.KindReasoningStart:
		m.reasoning[p.MessageID] = &strings.Builder{}
	case agentadaptor.KindReasoningDelta:
		b, ok := m.reasoning[p.MessageID]
		if !ok {
			b = &strings.Builder{}
			m.reasoning[p.MessageID] = b
		}
		b.WriteString(p.Delta)
	case agentadaptor.KindReasoningEnd:
		b := m.reasoning[p.MessageID]
		delete(m.reasoning, p.MessageID)
		text := p.Text
		if text == "" && b != nil {
			text = b.String()
		}
		if m.exposure.Reasoning && text != "" {
			return []a2a.Event{m.detail("reasoning", a2a.NewTextPart(text))}
		}
	case agentadaptor.KindToolCallEnd:
		if m.exposure.ToolCalls {
			var args any = p.ToolArgs
			var parsed any
			if p.ToolArgs != "" && json.Unmarshal([]byte(p.ToolArgs), &parsed) == nil {
				args = parsed
			}
			return []a2a.Event{m.detail("tool_call", a2a.NewDataPart(map[string]any{
				"tool_call_id": p.ToolCallID, "tool_name": p.ToolName, "args": plain(args),
			}))}
		}
	case agentadaptor.KindToolCallResult:
		if m.exposure.ToolCalls {
			return []a2a.Event{m.detail("tool_result", a2a.NewDataPart(map[string]any{
				"tool_call_id": p.ToolCallID, "result": p.ToolResult, "is_error": p.ToolError,
			}))}
		}
	case agentadaptor.KindDiagnostic:
		if m.exposure.Diagnostics && p.Diagnostic != nil {
			return []a2a.Event{m.detail("diagnostic", a2a.NewDataPart(plain(p.Diagnostic)))}
		}
	case agentadaptor.KindStreamDropped:
		if m.exposure.Diagnostics {
			return []a2a.Event{m.detail("diagnostic", a2a.NewDataPart(map[string]any{
				"code": "stream_dropped", "dropped": float64(p.Dropped),
			}))}
		}
	case agentadaptor.KindCustom:
		return m.custom(p)
	}
	return nil
}

func (m *mapper) custom(p agentadaptor.StreamPayload) []a2a.Event {
	switch p.Name {
	case PayloadArtifact:
		name, _ := p.Raw["name"].(string)
		mime, _ := p.Raw["mime_type"].(string)
		text, _ := p.Raw["text"].(string)
		if mime == "" {
			mime = "text/plain"
		}
		id := a2a.NewArtifactID()
		m.artifacts = append(m.artifacts, ArtifactRef{ID: string(id), Name: name, MimeType: mime})
		return []a2a.Event{&a2a.TaskArtifactUpdateEvent{
			TaskID: m.info.TaskID, ContextID: m.info.ContextID, LastChunk: true,
			Artifact: &a2a.Artifact{ID: id, Name: name,
				Parts: a2a.ContentParts{{Content: a2a.Text(text), MediaType: mime}}},
		}}
	case PayloadInputRequired:
		text, _ := p.Raw["text"].(string)
		m.asked, m.question = true, text
	}
	return nil
}

// detail builds a working status update carrying exposed detail.
func (m *mapper) detail(kind string, part *a2a.Part) *a2a.TaskStatusUpdateEvent {
	msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, m.info, part)
	msg.Metadata = map[string]any{MetadataKind: kind}
	ev := a2a.NewStatusUpdateEvent(m.info, a2a.TaskStateWorking, msg)
	ev.Metadata = map[string]any{MetadataKind: kind}
	return ev
}

// finish maps the end of a run: open text messages are closed, then the
// result artifact and the final status (terminal or input-required) follow.
// res may be nil when the run never started (startErr is then set).
func (m *mapper) finish(terminal agentadaptor.StreamPayload, res *agentadaptor.RunResult) []a2a.Event {
	var out []a2a.Event
	for _, id := range m.order {
		out = append(out, m.closeText(m.texts[id], "")...)
	}
	r := Result{Artifacts: append([]ArtifactRef{}, m.artifacts...), Usage: m.usage, SessionID: m.sessionID}
	if terminal.SessionID != "" {
		r.SessionID = terminal.SessionID
	}
	failure := terminal.Failure
	if res != nil {
		r.Summary, r.RunID, r.Adapter = res.Output, res.RunID, res.Adapter
		if res.SessionID != "" {
			r.SessionID = res.SessionID
		}
		if res.Usage != nil {
			r.Usage = res.Usage
		}
		if failure == nil {
			failure = res.Failure
		}
	}
	var state a2a.TaskState
	var msg *a2a.Message
	switch terminal.Kind {
	case agentadaptor.KindRunFinished:
		if m.asked {
			r.Status, state = ResultInputRequired, a2a.TaskStateInputRequired
			msg = a2a.NewMessageForTask(a2a.MessageRoleAgent, m.info, a2a.NewTextPart(m.question))
		} else {
			r.Status, state = ResultCompleted, a2a.TaskStateCompleted
		}
	case agentadaptor.KindRunCancelled:
		r.Status, state = ResultCancelled, a2a.TaskStateCanceled
		msg = a2a.NewMessageForTask(a2a.MessageRoleAgent, m.info, a2a.NewTextPart("the run was cancelled"))
	default:
		r.Status, state = ResultFailed, a2a.TaskStateFailed
		text := "the run failed"
		if failure != nil {
			text = failure.Error()
		}
		msg = a2a.NewMessageForTask(a2a.MessageRoleAgent, m.info, a2a.NewTextPart(text))
	}
	if failure != nil && r.Status != ResultCompleted && r.Status != ResultInputRequired {
		r.Error = &ResultError{Code: string(failure.Code), Message: failure.Message}
	}
	out = append(out, &a2a.TaskArtifactUpdateEvent{
		TaskID: m.info.TaskID, ContextID: m.info.ContextID, LastChunk: true,
		Artifact: &a2a.Artifact{
			ID: ArtifactAgentAdaptorResult, Name: ArtifactAgentAdaptorResult,
			Parts: a2a.ContentParts{{Content: a2a.Data{Value: plain(r)}, MediaType: "application/json"}},
		},
	})
	out = append(out, a2a.NewStatusUpdateEvent(m.info, state, msg))
	return out
}

// plain converts v to JSON-shaped values (map[string]any, []any, string,
// float64, bool, nil), which a2a-go's task store can deep-copy.
func plain(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// promptOf extracts the prompt from a user message: its text parts joined
// by newlines, data parts as JSON.
func promptOf(msg *a2a.Message) string {
	if msg == nil {
		return ""
	}
	var parts []string
	for _, p := range msg.Parts {
		if p == nil {
			continue
		}
		switch c := p.Content.(type) {
		case a2a.Text:
			if c != "" {
				parts = append(parts, string(c))
			}
		case a2a.Data:
			if b, err := json.Marshal(c.Value); err == nil {
				parts = append(parts, string(b))
			}
		case a2a.URL:
			parts = append(parts, string(c))
		}
	}
	return strings.Join(parts, "\n")
}
