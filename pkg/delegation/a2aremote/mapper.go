package a2aremote

import (
	"bytes"
	"encoding/json"
	"slices"

	sdka2a "github.com/a2aproject/a2a-go/v2/a2a"

	a2aclient "github.com/seed0634/agentadaptor/pkg/clients/a2a"

	"github.com/seed0634/agentadaptor/internal/sanitize"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// Artifact names published by the host's A2A bridge. They MUST equal
// pkg/bridges/a2a.ArtifactAssistantOutput and
// pkg/bridges/a2a.ArtifactAgentAdaptorResult (this package may not import
// the bridge; a test outside it ties the values together).
const (
	// ArtifactAssistantOutput names artifacts carrying streamed assistant
	// text: one artifact id per message, chunks appended, lastChunk on the last.
	ArtifactAssistantOutput = "assistant-output"
	// ArtifactAgentAdaptorResult names the DataPart artifact holding the
	// remote run's structured result {summary, status, usage, session_id, artifacts}.
	ArtifactAgentAdaptorResult = remote.ReservedArtifactID
)

// maxAdaptorResult bounds the agent-adaptor-result DataPart read.
const maxAdaptorResult = 256 << 10

// mapper turns the A2A events of one delegation into delegation events,
// through the delegation's Transcript. It never panics on malformed
// payloads, drops duplicates, and emits at most one terminal event. Not
// safe for concurrent use; one task owns it.
type mapper struct {
	t *remote.Transcript
	// streamText: assistant-output chunks become subagent.text.* (the
	// remote is actually streaming). Otherwise assistant text is reported
	// in subagent.status events and the result only: no fake deltas.
	streamText bool

	// The remote's ids as it sent them: what requests to it must carry.
	taskID    string
	contextID string

	lastStatusKey string
	lastChunk     *a2aclient.ArtifactUpdate

	// readBack: a terminal state reached with no output seen (or with
	// artifacts the remote's structured result lists but never sent) is
	// held until the task has been read once (docs/design.md#event-mapping):
	// a peer may send its terminal frame before the artifacts. held is that
	// terminal status; readDone marks the read as done.
	readBack bool
	held     *a2aclient.TaskStatus
	readDone bool

	// Follow-up bookkeeping (docs/design.md#event-mapping). After an
	// answer to an interrupted task is sent, awaiting holds until the
	// remote reports a state reached after the send: prevState and
	// prevMsgID describe the interrupted status being answered, leading
	// marks the next event as the first of the follow-up stream.
	awaiting  bool
	leading   bool
	prevState remote.State
	prevMsgID string
	lastMsgID string // raw id of the last status message mapped
	// turnText is the text of the agent's status messages of the current
	// turn, in order: what an interrupted state without a message of its
	// own asks about. A conversational agent (Gemini CLI's A2A server)
	// streams its answer as working status messages, chunk by chunk, and
	// ends every turn in input-required without a message.
	turnText string

	// out is the array Map returns its events in, reused by the next call:
	// a streamed chunk costs no allocation of its own.
	out []delegation.DelegationEvent
}

func newMapper(t *remote.Transcript, streamText bool) *mapper {
	return &mapper{t: t, streamText: streamText}
}

// StateOf converts an A2A task state (either wire version) into the
// host's remote.State; "" for an unknown state.
func StateOf(s a2aclient.TaskState) remote.State {
	switch a2aclient.NormalizeState(s) {
	case a2aclient.StateSubmitted:
		return remote.StateSubmitted
	case a2aclient.StateWorking:
		return remote.StateWorking
	case a2aclient.StateInputRequired:
		return remote.StateInputRequired
	case a2aclient.StateAuthRequired:
		return remote.StateAuthRequired
	case a2aclient.StateCompleted:
		return remote.StateCompleted
	case a2aclient.StateFailed:
		return remote.StateFailed
	case a2aclient.StateCanceled:
		return remote.StateCanceled
	case a2aclient.StateRejected:
		return remote.StateRejected
	}
	return ""
}

// Map maps one remote event. Events after the terminal one are ignored.
// The events it returns are valid until its next call, which reuses their
// array.
func (m *mapper) Map(ev a2aclient.Event) (out []delegation.DelegationEvent) {
	clear(m.out)
	out = m.out[:0]
	defer func() {
		if r := recover(); r != nil {
			// Defence in depth: a malformed payload must never crash the host.
			out = append(out, m.t.Finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeRemoteFailed, Message: "malformed remote payload"})...)
		}
		m.out = out
		if len(out) == 0 {
			out = nil
		}
	}()
	if m.t.Terminal() != "" || ev == nil {
		return nil
	}
	if err := a2aclient.ValidateEvent(ev); err != nil {
		return nil
	}
	leading := m.leading
	m.leading = false
	info := ev.TaskInfo()
	if info.TaskID != "" && m.taskID == "" {
		m.taskID = string(info.TaskID)
		m.t.SetTaskID(m.taskID)
	}
	if info.ContextID != "" && info.ContextID != m.contextID {
		// Every event names the context: only a new one is sanitised
		// and recorded.
		m.contextID = info.ContextID
		m.t.SetContextID(info.ContextID)
	}
	switch e := ev.(type) {
	case *a2aclient.Task:
		for _, a := range e.Artifacts {
			if a != nil {
				out = append(out, m.artifact(a, false, false, true)...)
			}
		}
		if m.staleSnapshot(e, leading) {
			// The task as it stood before the answer was sent: its
			// artifacts are news, its interrupted state is not.
			return out
		}
		out = append(out, m.status(e.Status)...)
	case *a2aclient.StatusUpdate:
		out = append(out, m.status(e.Status)...)
	case *a2aclient.ArtifactUpdate:
		prev := m.lastChunk
		m.lastChunk = e
		if e.Append && prev != nil && sameChunk(e, prev) {
			return nil // a repeated append chunk: duplicate delivery
		}
		out = m.appendArtifact(out, e.Artifact, e.Append, e.LastChunk, false)
	case *a2aclient.Message:
		text := sanitize.Text(a2aclient.TextOf(e.Parts), remote.MaxMessageBytes)
		if e.TaskID == "" && m.taskID == "" {
			// A direct reply: no task was created, the reply is the result.
			m.t.SetFinalMessage(e.ID, text)
			return append(out, m.t.Finish(delegation.DelegationFinished, nil)...)
		}
		if text != "" {
			// A message within a task is progress, not the task's output.
			out = append(out, delegation.DelegationEvent{Kind: delegation.DelegationStatus, Status: "message", Text: sanitize.Truncate(text, remote.MaxStatusText), RemoteMessageID: sanitize.ID(m.t.Redact(e.ID))})
		}
	}
	return out
}

// sameChunk reports whether a and b are the same artifact update (a
// duplicate delivery). Plain chunks (text or URL parts, no metadata) are
// compared field by field; anything else by its JSON, as before. Only the
// previous chunk is kept, so nothing is hashed or re-marshalled per chunk
// (docs/design.md#event-mapping).
func sameChunk(a, b *a2aclient.ArtifactUpdate) bool {
	if !plainChunk(a) || !plainChunk(b) {
		ja, errA := json.Marshal(a)
		jb, errB := json.Marshal(b)
		return errA == nil && errB == nil && bytes.Equal(ja, jb)
	}
	x, y := a.Artifact, b.Artifact
	if a.TaskID != b.TaskID || a.ContextID != b.ContextID || a.Append != b.Append || a.LastChunk != b.LastChunk ||
		x.ID != y.ID || x.Name != y.Name || x.Description != y.Description || len(x.Parts) != len(y.Parts) || !slices.Equal(x.Extensions, y.Extensions) {
		return false
	}
	for i, p := range x.Parts {
		q := y.Parts[i]
		if p.Content != q.Content || p.Filename != q.Filename || p.MediaType != q.MediaType {
			return false
		}
	}
	return true
}

// plainChunk: an artifact update whose parts are all text or URL and which
// carries no metadata, so that comparing fields is comparing its JSON.
func plainChunk(e *a2aclient.ArtifactUpdate) bool {
	if e.Artifact == nil || e.Metadata != nil || e.Artifact.Metadata != nil {
		return false
	}
	for _, p := range e.Artifact.Parts {
		if p == nil || p.Metadata != nil {
			return false
		}
		switch p.Content.(type) {
		case sdka2a.Text, sdka2a.URL:
		default:
			return false
		}
	}
	return true
}

// resetStatus forgets the last status, so that the next one is reported
// even if it repeats (after a recovery or an answer).
func (m *mapper) resetStatus() { m.lastStatusKey = "" }

// beginFollowUp is called before an answer to the interrupted task is
// sent: until the remote reports a state reached after the send, a
// snapshot restating the interrupted state is not that state.
func (m *mapper) beginFollowUp() {
	m.resetStatus()
	m.turnText = ""
	m.awaiting, m.leading = true, true
	m.prevState, m.prevMsgID = m.t.State(), m.lastMsgID
}

// followUpOf is the wire state a follow-up stream may begin with (""
// unless an answer awaits its first state).
func (m *mapper) followUpOf() a2aclient.TaskState {
	if !m.awaiting {
		return ""
	}
	switch m.prevState {
	case remote.StateInputRequired:
		return a2aclient.StateInputRequired
	case remote.StateAuthRequired:
		return a2aclient.StateAuthRequired
	}
	return ""
}

// staleSnapshot reports whether task, received while an answer awaits its
// first state, still shows the interrupted status the answer answers: the
// leading snapshot of the follow-up stream in that state (a stream begins
// with the Task), or any snapshot with the very status message that asked.
func (m *mapper) staleSnapshot(task *a2aclient.Task, leading bool) bool {
	if !m.awaiting || StateOf(task.Status.State) != m.prevState {
		return false
	}
	id := ""
	if task.Status.Message != nil {
		id = task.Status.Message.ID
	}
	return leading || id == m.prevMsgID
}

func (m *mapper) status(st a2aclient.TaskStatus) []delegation.DelegationEvent {
	state := StateOf(st.State)
	if state == "" {
		return nil
	}
	if state.Terminal() && m.readBack && !m.readDone && m.held == nil && (!m.t.HasOutput() || m.t.MissingArtifacts()) {
		m.held = &st
		m.t.SetState(state)
		m.awaiting = false
		return nil
	}
	m.t.SetState(state)
	m.awaiting = false
	text, msgID := "", ""
	m.lastMsgID = ""
	if st.Message != nil {
		text = sanitize.Text(a2aclient.TextOf(st.Message.Parts), remote.MaxMessageBytes)
		msgID = sanitize.ID(m.t.Redact(st.Message.ID))
		m.lastMsgID = st.Message.ID
	}
	if text != "" && !state.Terminal() && !state.Interrupted() && len(m.turnText) < remote.MaxMessageBytes {
		m.turnText += text
	}
	label := state.Label()
	key := label + "\x00" + text
	if key == m.lastStatusKey {
		return nil
	}
	m.lastStatusKey = key
	raw := map[string]any{"remote_state": string(a2aclient.NormalizeState(st.State))}
	switch {
	case state.Terminal():
		if text == "" && state != remote.StateCompleted {
			if r := m.t.RemoteResult(); r != nil {
				text = r.ErrorMessage // the remote's own account of the failure
			}
		}
		m.t.SetFinalText(text)
		switch state {
		case remote.StateCompleted:
			if st.Message != nil {
				m.t.SetFinalMessage(st.Message.ID, text)
			}
			return m.t.Finish(delegation.DelegationFinished, nil)
		case remote.StateRejected:
			return m.t.Finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeRemoteRejected, RemoteStatus: label,
				Message: "The remote agent rejected the task" + remote.Suffix(text)})
		case remote.StateCanceled:
			return m.t.Finish(delegation.DelegationCancelled, &delegation.DelegationError{Code: delegation.CodeCancelled, RemoteStatus: label,
				Message: "The remote agent cancelled the task" + remote.Suffix(text)})
		default:
			return m.t.Finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeRemoteFailed, RemoteStatus: label,
				Message: "The remote task failed" + remote.Suffix(text)})
		}
	case state == remote.StateAuthRequired || state == remote.StateInputRequired:
		if text == "" {
			// No message of its own: the question is what the agent said
			// in this turn.
			text = sanitize.Text(m.turnText, remote.MaxMessageBytes)
		}
		m.t.SetQuestion(text) // for auth-required: what the remote says about the authentication it wants
		if state == remote.StateAuthRequired {
			break
		}
		if m.t.Config().AllowInput {
			return []delegation.DelegationEvent{{Kind: delegation.DelegationInputRequired, Status: label, Text: sanitize.Truncate(text, remote.MaxStatusText), RemoteMessageID: msgID, Raw: raw}}
		}
	}
	return []delegation.DelegationEvent{{Kind: delegation.DelegationStatus, Status: label, Text: sanitize.Truncate(text, remote.MaxStatusText), RemoteMessageID: msgID, Raw: raw}}
}

// artifact handles one artifact (an update chunk, or complete in a task snapshot).
func (m *mapper) artifact(a *a2aclient.Artifact, appendChunk, last, snapshot bool) []delegation.DelegationEvent {
	return m.appendArtifact(nil, a, appendChunk, last, snapshot)
}

// appendArtifact is artifact appending its events to dst.
func (m *mapper) appendArtifact(dst []delegation.DelegationEvent, a *a2aclient.Artifact, appendChunk, last, snapshot bool) []delegation.DelegationEvent {
	rid := string(a.ID)
	switch {
	case a.Name == ArtifactAgentAdaptorResult || rid == ArtifactAgentAdaptorResult:
		m.adaptorResult(a)
		return dst
	case a.Name == ArtifactAssistantOutput:
		return m.t.AppendTextSnapshot(dst, sanitize.ID(m.t.Redact(rid)), a2aclient.TextOf(a.Parts), appendChunk, last, m.streamText)
	}
	mt := ""
	for _, p := range a.Parts {
		if p != nil && p.MediaType != "" {
			mt = p.MediaType
			break
		}
	}
	if sanitize.MediaType(mt) == "" {
		mt = inferMime(a.Parts)
	}
	var content []byte
	for _, p := range a.Parts {
		content = append(content, partBytes(p)...)
	}
	return append(dst, m.t.Artifact(remote.ArtifactPart{RemoteID: rid, Name: a.Name, MimeType: mt, Content: content, Append: appendChunk, Last: last, Snapshot: snapshot})...)
}

func inferMime(parts []*a2aclient.Part) string {
	for _, p := range parts {
		if p == nil {
			continue
		}
		switch {
		case p.Data() != nil:
			return "application/json"
		case p.URL() != "":
			return "text/uri-list"
		case p.Raw() != nil:
			return "application/octet-stream"
		}
	}
	return "text/plain"
}

func partBytes(p *a2aclient.Part) []byte {
	if p == nil {
		return nil
	}
	switch {
	case p.Text() != "":
		return []byte(p.Text())
	case p.Raw() != nil:
		return p.Raw()
	case p.URL() != "":
		return []byte(string(p.URL()) + "\n")
	case p.Data() != nil:
		b, _ := json.Marshal(p.Data())
		return b
	}
	return nil
}

// takeHeld returns the terminal status held for a read-back, once.
func (m *mapper) takeHeld() *a2aclient.TaskStatus {
	h := m.held
	m.held = nil
	return h
}

// readBackTask maps what the task read holds (its artifacts; its status
// message when the held status had none), then the held terminal status.
func (m *mapper) readBackTask(held a2aclient.TaskStatus, got *a2aclient.Task) []delegation.DelegationEvent {
	m.readDone = true
	var out []delegation.DelegationEvent
	if got != nil && a2aclient.ValidateEvent(got) == nil {
		for _, a := range got.Artifacts {
			if a != nil {
				out = append(out, m.artifact(a, false, false, true)...)
			}
		}
		if held.Message == nil && got.Status.Message != nil && StateOf(got.Status.State) == StateOf(held.State) {
			held.Message = got.Status.Message
		}
	}
	return append(out, m.status(held)...)
}

// adaptorResult is the agent-adaptor-result DataPart
// (pkg/bridges/a2a.Result), read whole.
type adaptorResult struct {
	Summary   string `json:"summary"`
	Status    string `json:"status"`
	SessionID string `json:"session_id"`
	Usage     *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
	Artifacts []struct {
		ID string `json:"id"`
	} `json:"artifacts"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (m *mapper) adaptorResult(a *a2aclient.Artifact) {
	for _, p := range a.Parts {
		if p == nil || p.Data() == nil {
			continue
		}
		b, err := json.Marshal(p.Data())
		if err != nil || len(b) > maxAdaptorResult {
			continue
		}
		var r adaptorResult
		if json.Unmarshal(b, &r) != nil {
			continue
		}
		rr := remote.RemoteResult{Summary: r.Summary, Status: r.Status, SessionID: r.SessionID}
		if r.Usage != nil && r.Usage.InputTokens >= 0 && r.Usage.OutputTokens >= 0 {
			rr.InputTokens, rr.OutputTokens = r.Usage.InputTokens, r.Usage.OutputTokens
		}
		for _, x := range r.Artifacts {
			if x.ID != "" {
				rr.ArtifactIDs = append(rr.ArtifactIDs, x.ID)
			}
		}
		if r.Error != nil {
			rr.ErrorMessage = r.Error.Message
		}
		m.t.SetRemoteResult(rr)
	}
}
