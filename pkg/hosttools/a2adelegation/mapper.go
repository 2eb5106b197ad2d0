package a2adelegation

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"

	a2aclient "github.com/seed0634/agentadaptor/pkg/clients/a2a"
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
	ArtifactAgentAdaptorResult = "agent-adaptor-result"
)

// Limits on text taken from remote payloads into results.
const (
	maxSummaryBytes  = 8 << 10
	maxMessageBytes  = 4 << 10
	maxMessages      = 20
	maxStatusText    = 2 << 10
	maxTrackedTexts  = 256
	maxTrackedArts   = 1024
	maxAdaptorResult = 256 << 10
)

// mapperConfig parameterizes the A2A → DelegationEvent mapping.
type mapperConfig struct {
	// streamText: assistant-output chunks become subagent.text.* (the
	// remote is actually streaming). Otherwise assistant text is reported
	// in subagent.status events and the result only: no fake deltas.
	streamText bool
	// allowInput: input-required becomes subagent.input_required.
	allowInput bool
	// maxArtifactBytes bounds one artifact's content.
	maxArtifactBytes int64
	// maxArtifacts bounds the artifacts stored and listed.
	maxArtifacts int
	// put stores a complete artifact; nil keeps metadata only.
	put func(StoredArtifact) error
	// runID/delegationID address stored artifacts.
	runID, delegationID string
}

// mapper turns the A2A events of one delegation into DelegationEvents.
// It is pure apart from cfg.put, never panics on malformed payloads, drops
// duplicates, and emits at most one terminal event. Not safe for
// concurrent use; one delegation owns it.
type mapper struct {
	cfg mapperConfig

	taskID    string
	contextID string
	state     a2aclient.TaskState

	lastStatusKey string
	lastChunkHash [32]byte

	texts     map[string]*textMsg
	textOrder []string

	arts     map[string]*artAcc
	artOrder []string
	hostIDs  map[string]bool
	listed   []ResultArtifact
	stored   int

	result        *adaptorResult
	finalText     string
	question      string
	statusMsgs    []string
	terminal      DelegationEventKind
	terminalError *DelegationError
}

type textMsg struct {
	id      string
	text    string
	started bool
	ended   bool
}

type artAcc struct {
	remoteID  string
	meta      ArtifactMeta
	content   []byte
	size      int64
	tooLarge  bool
	announced bool
}

// adaptorResult is the agent-adaptor-result DataPart.
type adaptorResult struct {
	Summary   string         `json:"summary"`
	Status    string         `json:"status"`
	Usage     map[string]any `json:"usage,omitempty"`
	SessionID string         `json:"session_id,omitempty"`
	Artifacts []struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		MimeType string `json:"mime_type"`
	} `json:"artifacts"`
}

func newMapper(cfg mapperConfig) *mapper {
	if cfg.maxArtifacts <= 0 {
		cfg.maxArtifacts = DefaultMaxArtifacts
	}
	if cfg.maxArtifactBytes <= 0 {
		cfg.maxArtifactBytes = DefaultMaxArtifactBytes
	}
	return &mapper{cfg: cfg, texts: map[string]*textMsg{}, arts: map[string]*artAcc{}, hostIDs: map[string]bool{}}
}

// RemoteStatusLabel turns an A2A task state into the short lowercase label
// used in events and results ("working", "input-required", "completed", ...).
func RemoteStatusLabel(s a2aclient.TaskState) string {
	n := a2aclient.NormalizeState(s)
	if n == "" {
		return ""
	}
	v := strings.ToLower(strings.TrimPrefix(string(n), "TASK_STATE_"))
	return sanitizeText(strings.ReplaceAll(v, "_", "-"), 40)
}

// Map maps one remote event. Events after the terminal one are ignored.
func (m *mapper) Map(ev a2aclient.Event) (out []DelegationEvent) {
	defer func() {
		if r := recover(); r != nil {
			// Defence in depth: a malformed payload must never crash the host.
			out = append(out, m.finish(DelegationFailed, &DelegationError{Code: CodeRemoteFailed, Message: "malformed remote payload"})...)
		}
	}()
	if m.terminal != "" || ev == nil {
		return nil
	}
	if err := a2aclient.ValidateEvent(ev); err != nil {
		return nil
	}
	info := ev.TaskInfo()
	if info.TaskID != "" && m.taskID == "" {
		m.taskID = string(info.TaskID)
	}
	if info.ContextID != "" {
		m.contextID = info.ContextID
	}
	switch e := ev.(type) {
	case *a2aclient.Task:
		for _, a := range e.Artifacts {
			if a != nil {
				out = append(out, m.artifact(a, false, false, true)...)
			}
		}
		out = append(out, m.status(e.Status)...)
	case *a2aclient.StatusUpdate:
		out = append(out, m.status(e.Status)...)
	case *a2aclient.ArtifactUpdate:
		h := chunkHash(e)
		if e.Append && h == m.lastChunkHash {
			return nil // a repeated append chunk: duplicate delivery
		}
		m.lastChunkHash = h
		out = append(out, m.artifact(e.Artifact, e.Append, e.LastChunk, false)...)
	case *a2aclient.Message:
		text := sanitizeKeepNL(a2aclient.TextOf(e.Parts), maxMessageBytes)
		if e.TaskID == "" && m.taskID == "" {
			// A direct reply: no task was created, the reply is the result.
			m.finalText = text
			out = append(out, m.finish(DelegationFinished, nil)...)
			return out
		}
		if text != "" {
			m.statusMsgs = appendBounded(m.statusMsgs, text)
			out = append(out, DelegationEvent{Kind: DelegationStatus, Status: "message", Text: shortText(text, maxStatusText), RemoteMessageID: sanitizeID(e.ID)})
		}
	}
	return out
}

func chunkHash(e *a2aclient.ArtifactUpdate) [32]byte {
	b, _ := json.Marshal(e)
	return sha256.Sum256(b)
}

func appendBounded(list []string, s string) []string {
	if len(list) >= maxMessages {
		list = list[1:]
	}
	return append(list, s)
}

// sanitizeKeepNL is sanitizeText that keeps newlines and tabs.
func sanitizeKeepNL(s string, max int) string {
	var b strings.Builder
	for _, r := range s {
		if r == '\uFFFD' || (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f {
			continue
		}
		if b.Len()+len(string(r)) > max {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (m *mapper) status(st a2aclient.TaskStatus) []DelegationEvent {
	state := a2aclient.NormalizeState(st.State)
	if !a2aclient.IsKnownState(state) {
		return nil
	}
	m.state = state
	text := ""
	msgID := ""
	if st.Message != nil {
		text = sanitizeKeepNL(a2aclient.TextOf(st.Message.Parts), maxMessageBytes)
		msgID = sanitizeID(st.Message.ID)
	}
	label := RemoteStatusLabel(state)
	key := label + "\x00" + text
	if key == m.lastStatusKey {
		return nil
	}
	m.lastStatusKey = key
	raw := map[string]any{"remote_state": string(state)}
	switch {
	case a2aclient.IsTerminal(state):
		m.finalText = text
		switch state {
		case a2aclient.StateCompleted:
			return m.finish(DelegationFinished, nil)
		case a2aclient.StateRejected:
			return m.finish(DelegationFailed, &DelegationError{Code: CodeRemoteRejected, RemoteStatus: label,
				Message: "The remote agent rejected the task" + suffix(text)})
		case a2aclient.StateCanceled:
			return m.finish(DelegationCancelled, &DelegationError{Code: CodeCancelled, RemoteStatus: label,
				Message: "The remote agent cancelled the task" + suffix(text)})
		default:
			return m.finish(DelegationFailed, &DelegationError{Code: CodeRemoteFailed, RemoteStatus: label,
				Message: "The remote task failed" + suffix(text)})
		}
	case state == a2aclient.StateInputRequired:
		m.question = text
		if m.cfg.allowInput {
			return []DelegationEvent{{Kind: DelegationInputRequired, Status: label, Text: shortText(text, maxStatusText), RemoteMessageID: msgID, Raw: raw}}
		}
	}
	if text != "" && state != a2aclient.StateInputRequired {
		m.statusMsgs = appendBounded(m.statusMsgs, text)
	}
	return []DelegationEvent{{Kind: DelegationStatus, Status: label, Text: shortText(text, maxStatusText), RemoteMessageID: msgID, Raw: raw}}
}

func suffix(text string) string {
	if text == "" {
		return "."
	}
	return ": " + shortText(text, 500)
}

// artifact handles one artifact (an update chunk, or complete in a task snapshot).
func (m *mapper) artifact(a *a2aclient.Artifact, appendChunk, last, snapshot bool) []DelegationEvent {
	rid := string(a.ID)
	switch {
	case a.Name == ArtifactAgentAdaptorResult || rid == ArtifactAgentAdaptorResult:
		m.adaptorResult(a)
		return nil
	case a.Name == ArtifactAssistantOutput:
		return m.text(rid, a2aclient.TextOf(a.Parts), appendChunk, last, snapshot)
	}
	acc := m.arts[rid]
	if acc == nil {
		if len(m.artOrder) >= maxTrackedArts {
			return nil
		}
		mt := ""
		for _, p := range a.Parts {
			if p != nil && p.MediaType != "" {
				mt = p.MediaType
				break
			}
		}
		meta := SanitizeArtifactMeta(rid, a.Name, mt)
		if meta.MimeType == "" {
			meta.MimeType = inferMime(a.Parts)
		}
		meta.ID = m.uniqueHostID(meta.ID)
		acc = &artAcc{remoteID: rid, meta: meta}
		m.arts[rid] = acc
		m.artOrder = append(m.artOrder, rid)
	}
	if acc.announced && !appendChunk && !snapshot {
		// A replacement of an artifact already announced: re-announce.
		acc.announced, acc.content, acc.size, acc.tooLarge = false, nil, 0, false
	}
	if acc.announced {
		return nil
	}
	if !appendChunk {
		acc.content, acc.size, acc.tooLarge = nil, 0, false
	}
	for _, p := range a.Parts {
		b := partBytes(p)
		acc.size += int64(len(b))
		if acc.tooLarge || acc.size > m.cfg.maxArtifactBytes {
			acc.tooLarge, acc.content = true, nil
			continue
		}
		acc.content = append(acc.content, b...)
	}
	if acc.tooLarge {
		return m.announce(acc)
	}
	if last || snapshot {
		return m.announce(acc)
	}
	return nil
}

func (m *mapper) uniqueHostID(id string) string {
	if id == "" {
		id = "artifact"
	}
	base, n := id, 1
	for m.hostIDs[id] || id == ArtifactAgentAdaptorResult {
		n++
		id = shortText(base, 56) + "-" + fmt.Sprint(n)
		id = sanitizeID(id)
	}
	m.hostIDs[id] = true
	return id
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

func (m *mapper) announce(acc *artAcc) []DelegationEvent {
	acc.announced = true
	art := &DelegationArtifact{ID: acc.meta.ID, Name: acc.meta.Name, MimeType: acc.meta.MimeType, SizeBytes: acc.size}
	switch {
	case acc.tooLarge:
		art.Error = &DelegationError{Code: CodeArtifactTooLarge, Message: fmt.Sprintf("artifact %q exceeds the host limit of %d bytes; it was not stored", acc.meta.Name, m.cfg.maxArtifactBytes)}
	case m.stored >= m.cfg.maxArtifacts:
		art.Error = &DelegationError{Code: CodeArtifactTooLarge, Message: fmt.Sprintf("more than %d artifacts; %q was not stored", m.cfg.maxArtifacts, acc.meta.Name)}
	case m.cfg.put != nil:
		err := m.cfg.put(StoredArtifact{RunID: m.cfg.runID, DelegationID: m.cfg.delegationID, ID: acc.meta.ID, Name: acc.meta.Name, MimeType: acc.meta.MimeType, Content: acc.content})
		if err != nil {
			art.Error = &DelegationError{Code: CodeArtifactTooLarge, Message: fmt.Sprintf("artifact %q could not be stored: host artifact store is full", acc.meta.Name)}
		} else {
			art.URI = ArtifactURI(m.cfg.delegationID, acc.meta.ID)
			m.stored++
		}
	}
	acc.content = nil // stored out of band; never kept in memory twice
	if len(m.listed) < maxTrackedArts {
		m.listed = append(m.listed, ResultArtifact{ID: art.ID, Name: art.Name, MimeType: art.MimeType, URI: art.URI, Error: art.Error})
	}
	return []DelegationEvent{{Kind: DelegationArtifactCreated, Artifact: art, RemoteArtifactID: sanitizeID(acc.remoteID)}}
}

// text handles assistant-output: streamed as subagent.text.* when the
// remote streams, otherwise only reported as status text.
func (m *mapper) text(rid, chunk string, appendChunk, last, snapshot bool) []DelegationEvent {
	msg := m.texts[rid]
	if msg == nil {
		if len(m.textOrder) >= maxTrackedTexts {
			return nil
		}
		msg = &textMsg{id: rid}
		m.texts[rid] = msg
		m.textOrder = append(m.textOrder, rid)
	}
	var delta string
	switch {
	case appendChunk:
		delta = chunk
		msg.text += chunk
	case strings.HasPrefix(chunk, msg.text):
		// First chunk, or a snapshot/replacement that extends what we have.
		delta = chunk[len(msg.text):]
		msg.text = chunk
	default:
		// Diverging replacement: what was shown cannot be unsaid.
		msg.text = chunk
	}
	if len(msg.text) > 1<<20 {
		msg.text = msg.text[len(msg.text)-(1<<20):]
	}
	mid := sanitizeID(rid)
	var out []DelegationEvent
	if !m.cfg.streamText {
		// No fake deltas: report the message as it stands, when it changed.
		if delta != "" || (!appendChunk && !snapshot && chunk != "") {
			out = append(out, DelegationEvent{Kind: DelegationStatus, Status: "message", Text: shortText(sanitizeKeepNL(msg.text, maxMessageBytes), maxStatusText), RemoteMessageID: mid})
		}
		return out
	}
	if msg.ended {
		return nil
	}
	if !msg.started && (delta != "" || last) {
		msg.started = true
		out = append(out, DelegationEvent{Kind: DelegationTextStart, RemoteMessageID: mid})
	}
	if delta != "" {
		out = append(out, DelegationEvent{Kind: DelegationTextDelta, Delta: delta, RemoteMessageID: mid})
	}
	if last && msg.started {
		msg.ended = true
		out = append(out, DelegationEvent{Kind: DelegationTextEnd, Text: shortText(msg.text, maxStatusText), RemoteMessageID: mid})
	}
	return out
}

func (m *mapper) adaptorResult(a *a2aclient.Artifact) {
	for _, p := range a.Parts {
		if p == nil || p.Data() == nil {
			continue
		}
		if r, ok := parseAdaptorResult(p.Data()); ok {
			m.result = r
		}
	}
}

// parseAdaptorResult reads an agent-adaptor-result DataPart value.
func parseAdaptorResult(v any) (*adaptorResult, bool) {
	b, err := json.Marshal(v)
	if err != nil || len(b) > maxAdaptorResult {
		return nil, false
	}
	var r adaptorResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, false
	}
	r.Summary = sanitizeKeepNL(r.Summary, maxSummaryBytes)
	r.Status = sanitizeText(r.Status, 40)
	r.SessionID = sanitizeID(r.SessionID)
	return &r, true
}

// finish closes open text messages, announces pending artifacts and emits
// the terminal event, once. Later calls return nil.
func (m *mapper) finish(kind DelegationEventKind, derr *DelegationError) []DelegationEvent {
	if m.terminal != "" {
		return nil
	}
	var out []DelegationEvent
	for _, id := range m.textOrder {
		msg := m.texts[id]
		if m.cfg.streamText && msg.started && !msg.ended {
			msg.ended = true
			out = append(out, DelegationEvent{Kind: DelegationTextEnd, Text: shortText(msg.text, maxStatusText), RemoteMessageID: sanitizeID(id)})
		}
	}
	for _, rid := range m.artOrder {
		if acc := m.arts[rid]; !acc.announced && (acc.size > 0 || acc.tooLarge) {
			out = append(out, m.announce(acc)...)
		}
	}
	m.terminal, m.terminalError = kind, derr
	status := map[DelegationEventKind]string{DelegationFinished: "completed", DelegationFailed: "failed", DelegationCancelled: "cancelled"}[kind]
	if derr != nil && derr.Code == CodeCancelPending {
		status = "cancel_pending"
	}
	out = append(out, DelegationEvent{Kind: kind, Status: status, Text: shortText(m.summary(), maxStatusText), Error: derr})
	return out
}

// summary is the concise text for the parent: the agent-adaptor-result
// summary, else the final status text, else the last assistant message.
func (m *mapper) summary() string {
	if m.result != nil && m.result.Summary != "" {
		return m.result.Summary
	}
	if m.finalText != "" {
		return shortText(m.finalText, maxSummaryBytes)
	}
	for i := len(m.textOrder) - 1; i >= 0; i-- {
		if t := m.texts[m.textOrder[i]].text; t != "" {
			return shortText(sanitizeKeepNL(t, maxSummaryBytes), maxSummaryBytes)
		}
	}
	if n := len(m.statusMsgs); n > 0 {
		return m.statusMsgs[n-1]
	}
	return ""
}

// messages lists the remote assistant messages for the tool result.
// messages returns the remote agent's final assistant message only. Its
// earlier messages are progress: the UI streams them live, and they must
// never reach the parent model's context (SPEC §26, §27.5).
func (m *mapper) messages() []ResultMessage {
	final := m.finalText
	if final == "" && len(m.textOrder) > 0 {
		final = sanitizeKeepNL(m.texts[m.textOrder[len(m.textOrder)-1]].text, maxMessageBytes)
	}
	if final == "" {
		return []ResultMessage{}
	}
	return []ResultMessage{{Role: "assistant", Text: final}}
}

func (m *mapper) artifacts() []ResultArtifact {
	out := make([]ResultArtifact, len(m.listed))
	copy(out, m.listed)
	return out
}

// decodeAndMap decodes one streamed A2A event (a JSON-RPC SSE data payload
// or a bare stream response, see pkg/clients/a2a.DecodeEvent) and maps it.
// Malformed payloads return the client's typed *a2a.Error, never a panic.
func decodeAndMap(m *mapper, raw []byte) ([]DelegationEvent, error) {
	ev, err := a2aclient.DecodeEvent(raw)
	if err != nil {
		return nil, err
	}
	return m.Map(ev), nil
}
