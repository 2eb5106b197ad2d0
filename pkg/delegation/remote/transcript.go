package remote

import (
	"fmt"
	"strings"

	"github.com/seed0634/agentadaptor/internal/sanitize"
	"github.com/seed0634/agentadaptor/pkg/credentials"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
)

// Limits on remote text kept by a Transcript.
const (
	MaxSummaryBytes = 8 << 10
	MaxMessageBytes = 4 << 10
	MaxStatusText   = 2 << 10
	maxTrackedTexts = 256
	maxTrackedArts  = 1024
	maxTextBytes    = 1 << 20
)

// Defaults of TranscriptConfig.
const (
	DefaultMaxArtifacts     = 32
	DefaultMaxArtifactBytes = 1 << 20
)

// TranscriptConfig is the host policy a Transcript applies.
type TranscriptConfig struct {
	// AllowInput turns an input request into subagent.input_required
	// (otherwise it is a status, and the delegator refuses it).
	AllowInput bool
	// MaxArtifactBytes bounds one artifact's content (DefaultMaxArtifactBytes).
	MaxArtifactBytes int64
	// MaxArtifacts bounds the artifacts stored (DefaultMaxArtifacts).
	MaxArtifacts int
	// Put stores a complete artifact and returns its host URI; nil keeps
	// the metadata only.
	Put func(meta artifact.Meta, content []byte) (uri string, err error)
	// Secrets are scrubbed from every id the remote chooses before it is
	// kept (nil: none).
	Secrets *credentials.Secrets
}

// Transcript is the protocol-neutral state of one delegation: the remote
// task and context ids (as shown: secrets scrubbed, sanitised), its state,
// the assistant text messages, the artifacts, the summary and the single
// terminal event. A protocol's mapper drives it; the methods return the
// delegation events to publish (identity fields are filled by the
// delegator). It never panics on remote data and emits at most one terminal
// event. Not safe for concurrent use: one delegation owns it.
type Transcript struct {
	cfg TranscriptConfig

	taskID    string
	contextID string
	state     State
	question  string

	texts     map[string]*textMsg
	textOrder []string
	lastMsg   *textMsg // what message returned last

	arts     map[string]*artAcc
	artOrder []string
	hostIDs  map[string]bool
	listed   []delegation.ResultArtifact
	stored   int

	// outOrder lists the task's output in the order it began: assistant
	// text messages ("m" + key) and text artifacts ("a" + remote id).
	outOrder []string

	resultSummary string
	result        *RemoteResult
	finalText     string
	finalID       string // the remote id of the final status message
	finalShown    bool   // the final text is a successful end's message (SetFinalMessage)
	finalKey      string // the text message that shows it ("" until Finish)
	terminal      delegation.DelegationEventKind
	terminalError *delegation.DelegationError
}

type textMsg struct {
	id      string
	text    strings.Builder
	started bool
	ended   bool
}

type artAcc struct {
	remoteID  string
	meta      artifact.Meta
	content   []byte
	size      int64
	tooLarge  bool
	announced bool
	// text: a text/* artifact, part of the task's output; head is the
	// start of its content (at most MaxSummaryBytes), kept for the summary
	// even when the artifact is too large to store.
	text bool
	head []byte
}

// NewTranscript returns an empty transcript applying cfg.
func NewTranscript(cfg TranscriptConfig) *Transcript {
	if cfg.MaxArtifacts <= 0 {
		cfg.MaxArtifacts = DefaultMaxArtifacts
	}
	if cfg.MaxArtifactBytes <= 0 {
		cfg.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	return &Transcript{cfg: cfg, texts: map[string]*textMsg{}, arts: map[string]*artAcc{}, hostIDs: map[string]bool{}}
}

// Config returns the policy the transcript applies.
func (t *Transcript) Config() TranscriptConfig { return t.cfg }

// ShownID returns a remote-chosen id as the host shows it: known secrets
// scrubbed, control characters dropped, at most 256 bytes.
func (t *Transcript) ShownID(raw string) string {
	return sanitize.Line(t.cfg.Secrets.Redact(raw), 256)
}

// Redact scrubs known secrets from remote text.
func (t *Transcript) Redact(s string) string { return t.cfg.Secrets.Redact(s) }

// SetTaskID records the remote task id (raw, as the remote sent it); the
// first non-empty id wins.
func (t *Transcript) SetTaskID(raw string) {
	if raw != "" && t.taskID == "" {
		t.taskID = t.ShownID(raw)
	}
}

// ReplaceTaskID records a new remote task id (a follow-up run).
func (t *Transcript) ReplaceTaskID(raw string) {
	if raw != "" {
		t.taskID = t.ShownID(raw)
	}
}

// SetContextID records the remote context id (raw); later ids replace it.
func (t *Transcript) SetContextID(raw string) {
	if raw != "" {
		t.contextID = t.ShownID(raw)
	}
}

// TaskID returns the remote task id as shown ("" while unknown).
func (t *Transcript) TaskID() string { return t.taskID }

// ContextID returns the remote context id as shown ("" while unknown).
func (t *Transcript) ContextID() string { return t.contextID }

// SetState records the remote task's state.
func (t *Transcript) SetState(s State) { t.state = s }

// State returns the remote task's last known state.
func (t *Transcript) State() State { return t.state }

// SetQuestion records what the remote asked when it paused for input.
func (t *Transcript) SetQuestion(q string) { t.question = q }

// Question returns what the remote asked ("" if nothing).
func (t *Transcript) Question() string { return t.question }

// SetResultSummary records the remote's own structured summary of the
// task; it wins over every other text in Summary.
func (t *Transcript) SetResultSummary(s string) { t.resultSummary = sanitize.Text(s, MaxSummaryBytes) }

// SetFinalText records the text that came with the terminal state (or a
// direct reply that created no task). Status messages of a working task are
// progress: they are never recorded here (docs/design.md#tool-contract).
func (t *Transcript) SetFinalText(s string) { t.finalText = s }

// SetFinalMessage records the message that came with a successful terminal
// state (or a direct reply): its text, and the remote's id for it (raw; ""
// when it has none). Finish shows it as the subagent's last text message,
// and it ends the summary (docs/design.md#tool-contract).
func (t *Transcript) SetFinalMessage(rawID, text string) {
	t.finalText = text
	t.finalID = sanitize.ID(t.Redact(rawID))
	t.finalShown = true
}

// RemoteResult is a remote's own structured account of its task (A2A: the
// agent-adaptor-result artifact of an Agent Adaptor bridge).
type RemoteResult struct {
	// Summary is the remote's summary of its answer.
	Summary string
	// Status is the remote run's status (completed, failed, cancelled,
	// input_required), sanitised.
	Status string
	// SessionID is the remote agent's session (a shown id).
	SessionID string
	// InputTokens and OutputTokens are the remote run's usage (0: unknown).
	InputTokens, OutputTokens int64
	// ArtifactIDs are the remote ids of the artifacts the task published.
	ArtifactIDs []string
	// ErrorMessage is the remote's own account of a failure ("" if none).
	ErrorMessage string
}

// SetRemoteResult records the remote's structured result; its summary
// wins over every other text in Summary.
func (t *Transcript) SetRemoteResult(r RemoteResult) {
	r.Summary = sanitize.Text(r.Summary, MaxSummaryBytes)
	r.SessionID = t.ShownID(r.SessionID)
	r.Status = sanitize.Line(r.Status, 32)
	r.ErrorMessage = sanitize.Text(t.Redact(r.ErrorMessage), MaxStatusText)
	if len(r.ArtifactIDs) > maxTrackedArts {
		r.ArtifactIDs = r.ArtifactIDs[:maxTrackedArts]
	}
	t.result = &r
	t.resultSummary = r.Summary
}

// RemoteResult returns the remote's structured result (nil if none came).
func (t *Transcript) RemoteResult() *RemoteResult { return t.result }

// HasOutput reports whether the task showed any output: a text message,
// an artifact, or a structured result.
func (t *Transcript) HasOutput() bool {
	return len(t.textOrder) > 0 || len(t.artOrder) > 0 || t.result != nil || t.resultSummary != ""
}

// MissingArtifacts reports whether the remote's structured result lists
// an artifact the task never delivered.
func (t *Transcript) MissingArtifacts() bool {
	if t.result == nil {
		return false
	}
	for _, id := range t.result.ArtifactIDs {
		if _, ok := t.arts[t.Redact(id)]; !ok {
			if _, ok := t.texts[sanitize.ID(t.Redact(id))]; !ok {
				return true
			}
		}
	}
	return false
}

// Terminal returns the kind of the terminal event, "" while the
// delegation is open.
func (t *Transcript) Terminal() delegation.DelegationEventKind { return t.terminal }

// TerminalError returns the error of the terminal event (nil on success).
func (t *Transcript) TerminalError() *delegation.DelegationError { return t.terminalError }

// message returns the text message of key, creating it; nil beyond the
// tracking bound.
func (t *Transcript) message(key string) *textMsg {
	if t.lastMsg != nil && t.lastMsg.id == key {
		return t.lastMsg // a streamed message's next chunk
	}
	msg := t.texts[key]
	if msg == nil {
		if len(t.textOrder) >= maxTrackedTexts {
			return nil
		}
		msg = &textMsg{id: key}
		t.texts[key] = msg
		t.textOrder = append(t.textOrder, key)
		t.outOrder = append(t.outOrder, "m"+key)
	}
	t.lastMsg = msg
	return msg
}

// appendText adds to a message's text, keeping its last maxTextBytes.
func (m *textMsg) appendText(s string) {
	m.text.WriteString(s)
	if m.text.Len() > 2*maxTextBytes {
		tail := m.text.String()[m.text.Len()-maxTextBytes:]
		m.text.Reset()
		m.text.WriteString(tail)
	}
}

func (m *textMsg) String() string {
	s := m.text.String()
	if len(s) > maxTextBytes {
		return s[len(s)-maxTextBytes:]
	}
	return s
}

// TextStart opens the text message key (a no-op when already open).
func (t *Transcript) TextStart(key string) []delegation.DelegationEvent {
	msg := t.message(key)
	if msg == nil || msg.started {
		return nil
	}
	msg.started = true
	return []delegation.DelegationEvent{{Kind: delegation.DelegationTextStart, RemoteMessageID: msg.id}}
}

// TextDelta adds delta to the message key, opening it first if needed.
func (t *Transcript) TextDelta(key, delta string) []delegation.DelegationEvent {
	msg := t.message(key)
	if msg == nil || msg.ended || delta == "" {
		return nil
	}
	out := t.TextStart(key)
	msg.appendText(delta)
	return append(out, delegation.DelegationEvent{Kind: delegation.DelegationTextDelta, Delta: delta, RemoteMessageID: msg.id})
}

// TextEnd closes the message key (a no-op unless it is open).
func (t *Transcript) TextEnd(key string) []delegation.DelegationEvent {
	msg := t.texts[key]
	if msg == nil || !msg.started || msg.ended {
		return nil
	}
	msg.ended = true
	return []delegation.DelegationEvent{{Kind: delegation.DelegationTextEnd, Text: sanitize.Truncate(msg.String(), MaxStatusText), RemoteMessageID: msg.id}}
}

// CloseTexts closes every open message.
func (t *Transcript) CloseTexts() []delegation.DelegationEvent {
	var out []delegation.DelegationEvent
	for _, key := range t.textOrder {
		out = append(out, t.TextEnd(key)...)
	}
	return out
}

// TextSnapshot handles a message whose content arrives as chunks that
// either extend it (appendChunk) or restate it whole (a snapshot or a
// replacement); last closes it. It publishes the text as a text message
// (subagent.text.start, .delta with what is new, .end) whether the remote
// streams it or it is polled: a polled message grows by what each poll
// shows. When stream is false (polling), a message that begins closes the
// ones before it, so that one message is open at a time; every open
// message is closed by Finish.
func (t *Transcript) TextSnapshot(key, chunk string, appendChunk, last, snapshot, stream bool) []delegation.DelegationEvent {
	return t.AppendTextSnapshot(nil, key, chunk, appendChunk, last, stream)
}

// AppendTextSnapshot is TextSnapshot appending its events to dst (a
// streamed chunk then costs no allocation of its own).
func (t *Transcript) AppendTextSnapshot(dst []delegation.DelegationEvent, key, chunk string, appendChunk, last, stream bool) []delegation.DelegationEvent {
	msg := t.message(key)
	if msg == nil {
		return dst
	}
	var delta string
	cur := msg.String()
	switch {
	case appendChunk:
		delta = chunk
		msg.appendText(chunk)
	case strings.HasPrefix(chunk, cur):
		// First chunk, or a snapshot/replacement that extends what we have.
		delta = chunk[len(cur):]
		msg.appendText(delta)
	default:
		// Diverging replacement: what was shown cannot be unsaid.
		msg.text.Reset()
		msg.appendText(chunk)
	}
	if msg.ended {
		return dst
	}
	out := dst
	if !msg.started && (delta != "" || last) {
		if !stream {
			for _, other := range t.textOrder {
				if other != key {
					out = append(out, t.TextEnd(other)...)
				}
			}
		}
		msg.started = true
		out = append(out, delegation.DelegationEvent{Kind: delegation.DelegationTextStart, RemoteMessageID: msg.id})
	}
	if delta != "" {
		out = append(out, delegation.DelegationEvent{Kind: delegation.DelegationTextDelta, Delta: delta, RemoteMessageID: msg.id})
	}
	if last && msg.started {
		out = append(out, t.TextEnd(key)...)
	}
	return out
}

// MessageText is one assistant message of the transcript.
type MessageText struct {
	ID   string
	Text string
}

// TextsSince returns the assistant messages from the n-th on (in order)
// and the count to pass next time.
func (t *Transcript) TextsSince(n int) ([]MessageText, int) {
	var out []MessageText
	for _, id := range t.textOrder[min(n, len(t.textOrder)):] {
		out = append(out, MessageText{ID: id, Text: t.texts[id].String()})
	}
	return out, len(t.textOrder)
}

// Accumulated returns the assistant text of every message, in order,
// separated by blank lines and bounded.
func (t *Transcript) Accumulated() string {
	var parts []string
	for _, id := range t.textOrder {
		if s := strings.TrimSpace(t.texts[id].String()); s != "" {
			parts = append(parts, s)
		}
	}
	return sanitize.Truncate(sanitize.Text(strings.Join(parts, "\n\n"), MaxSummaryBytes), MaxSummaryBytes)
}

// ArtifactPart is a chunk of a remote artifact.
type ArtifactPart struct {
	// RemoteID is the remote's artifact id (raw); Name and MimeType its
	// metadata (untrusted; sanitised here).
	RemoteID, Name, MimeType string
	// Content is this chunk's bytes.
	Content []byte
	// Append: the chunk extends what was received so far; otherwise it
	// replaces it (a new version of the artifact).
	Append bool
	// Last: the artifact is complete.
	Last bool
	// Snapshot: the artifact is complete and may have been announced
	// already (a task snapshot restating it).
	Snapshot bool
}

// Artifact handles a chunk of a remote artifact. The artifact is announced
// (subagent.artifact, stored through TranscriptConfig.Put) when it is
// complete or as soon as it exceeds the size policy; a replacement of an
// announced artifact is announced again.
func (t *Transcript) Artifact(p ArtifactPart) []delegation.DelegationEvent {
	rid := t.Redact(p.RemoteID)
	acc := t.arts[rid]
	if acc == nil {
		if len(t.artOrder) >= maxTrackedArts {
			return nil
		}
		meta := artifact.SanitizeMeta(rid, t.Redact(p.Name), p.MimeType)
		if meta.MimeType == "" {
			meta.MimeType = "text/plain"
		}
		meta.ID = t.uniqueHostID(meta.ID)
		acc = &artAcc{remoteID: rid, meta: meta, text: strings.HasPrefix(meta.MimeType, "text/")}
		t.arts[rid] = acc
		t.artOrder = append(t.artOrder, rid)
		if acc.text {
			t.outOrder = append(t.outOrder, "a"+rid)
		}
	}
	if acc.announced && !p.Append && !p.Snapshot {
		acc.announced, acc.content, acc.size, acc.tooLarge = false, nil, 0, false
	}
	if acc.announced {
		return nil
	}
	if !p.Append {
		acc.content, acc.size, acc.tooLarge, acc.head = nil, 0, false, acc.head[:0]
	}
	if acc.text && len(acc.head) < MaxSummaryBytes {
		acc.head = append(acc.head, p.Content[:min(len(p.Content), MaxSummaryBytes-len(acc.head))]...)
	}
	acc.size += int64(len(p.Content))
	if acc.tooLarge || acc.size > t.cfg.MaxArtifactBytes {
		acc.tooLarge, acc.content = true, nil
	} else {
		acc.content = append(acc.content, p.Content...)
	}
	if acc.tooLarge || p.Last || p.Snapshot {
		return t.announce(acc)
	}
	return nil
}

func (t *Transcript) uniqueHostID(id string) string {
	if id == "" {
		id = "artifact"
	}
	base, n := id, 1
	for t.hostIDs[id] || id == ReservedArtifactID {
		n++
		id = sanitize.ID(sanitize.Truncate(base, 56) + "-" + fmt.Sprint(n))
	}
	t.hostIDs[id] = true
	return id
}

// ReservedArtifactID is never used as a host artifact id: it names the
// remote's structured result (see pkg/bridges/a2a).
const ReservedArtifactID = "agent-adaptor-result"

func (t *Transcript) announce(acc *artAcc) []delegation.DelegationEvent {
	acc.announced = true
	art := &delegation.DelegationArtifact{ID: acc.meta.ID, Name: acc.meta.Name, MimeType: acc.meta.MimeType, SizeBytes: acc.size}
	switch {
	case acc.tooLarge:
		art.Error = &delegation.DelegationError{Code: delegation.CodeArtifactTooLarge, Message: fmt.Sprintf("artifact %q exceeds the host limit of %d bytes; it was not stored", acc.meta.Name, t.cfg.MaxArtifactBytes)}
	case t.stored >= t.cfg.MaxArtifacts:
		art.Error = &delegation.DelegationError{Code: delegation.CodeArtifactTooLarge, Message: fmt.Sprintf("more than %d artifacts; %q was not stored", t.cfg.MaxArtifacts, acc.meta.Name)}
	case t.cfg.Put != nil:
		// Like every other remote-chosen string, the content is scrubbed of
		// the host's secrets before it is kept: the whole artifact, as
		// assembled from its chunks (a secret split across two chunks is
		// found), whatever its media type (a secret's bytes anywhere).
		content, redacted := t.redactContent(acc.content)
		uri, err := t.cfg.Put(acc.meta, content)
		if err != nil {
			art.Error = &delegation.DelegationError{Code: delegation.CodeArtifactTooLarge, Message: fmt.Sprintf("artifact %q could not be stored: host artifact store is full", acc.meta.Name)}
		} else {
			art.URI = uri
			art.Redacted, art.SizeBytes = redacted, int64(len(content))
			t.stored++
		}
	}
	acc.content = nil // stored out of band; never kept in memory twice
	if len(t.listed) < maxTrackedArts {
		t.listed = append(t.listed, delegation.ResultArtifact{ID: art.ID, Name: art.Name, MimeType: art.MimeType, URI: art.URI, Error: art.Error, Redacted: art.Redacted})
	}
	return []delegation.DelegationEvent{{Kind: delegation.DelegationArtifactCreated, Artifact: art, RemoteArtifactID: sanitize.ID(acc.remoteID)}}
}

// redactContent returns content with every known secret replaced by
// [REDACTED] (credentials.Redacted), and whether there was one. Go strings
// hold any bytes, so binary content is scrubbed the same way as text.
func (t *Transcript) redactContent(content []byte) ([]byte, bool) {
	if t.cfg.Secrets == nil || len(content) == 0 {
		return content, false
	}
	s := string(content)
	if r := t.cfg.Secrets.Redact(s); r != s {
		return []byte(r), true
	}
	return content, false
}

// Finish closes open text messages, announces pending artifacts and
// returns the terminal event, once: later calls return nil.
func (t *Transcript) Finish(kind delegation.DelegationEventKind, derr *delegation.DelegationError) []delegation.DelegationEvent {
	if t.terminal != "" {
		return nil
	}
	out := t.CloseTexts()
	for _, rid := range t.artOrder {
		if acc := t.arts[rid]; !acc.announced && (acc.size > 0 || acc.tooLarge) {
			out = append(out, t.announce(acc)...)
		}
	}
	if kind == delegation.DelegationFinished {
		out = append(out, t.finalMessage()...)
	}
	t.terminal, t.terminalError = kind, derr
	status := map[delegation.DelegationEventKind]string{delegation.DelegationFinished: "completed", delegation.DelegationFailed: "failed", delegation.DelegationCancelled: "cancelled"}[kind]
	if derr != nil && derr.Code == delegation.CodeCancelPending {
		status = "cancel_pending"
	}
	return append(out, delegation.DelegationEvent{Kind: kind, Status: status, Text: sanitize.Truncate(t.Summary(), MaxStatusText), Error: derr})
}

// finalMessage shows the final status message as the subagent's last
// text message, unless it is empty or only repeats the last text the
// subagent showed.
func (t *Transcript) finalMessage() []delegation.DelegationEvent {
	text := sanitize.Text(t.finalText, MaxMessageBytes)
	if !t.finalShown || strings.TrimSpace(text) == "" || text == t.lastText() {
		return nil
	}
	key := "final"
	if t.finalID != "" {
		key = "final-" + t.finalID
	}
	if _, taken := t.texts[key]; taken {
		return nil
	}
	out := t.TextDelta(key, text)
	if len(out) > 0 {
		t.finalKey = key // shown, but not part of the output: it ends the summary
	}
	return append(out, t.TextEnd(key)...)
}

// lastText is the text of the last assistant message ("" if none).
func (t *Transcript) lastText() string {
	for i := len(t.textOrder) - 1; i >= 0; i-- {
		if t.textOrder[i] == t.finalKey {
			continue
		}
		if s := strings.TrimSpace(t.texts[t.textOrder[i]].String()); s != "" {
			return s
		}
	}
	return ""
}

// finalWord is the final status message when it says something the
// output does not already hold ("" otherwise).
func (t *Transcript) finalWord(output string) string {
	f := strings.TrimSpace(sanitize.Text(t.finalText, MaxSummaryBytes))
	if !t.finalShown || f == "" || strings.Contains(output, f) {
		return ""
	}
	return f
}

// Output returns the task's output text: its assistant text messages and
// the content of its text (text/*) artifacts, in the order they began,
// separated by blank lines and bounded to MaxSummaryBytes. In A2A the
// artifacts are a task's output; its status messages are progress.
func (t *Transcript) Output() string {
	var parts []string
	size := 0
	for _, ref := range t.outOrder {
		if size > MaxSummaryBytes {
			break
		}
		var s string
		if key, ok := strings.CutPrefix(ref, "m"); ok {
			if key == t.finalKey {
				continue
			}
			s = t.texts[key].String()
		} else if acc := t.arts[ref[1:]]; acc != nil {
			s = string(acc.head)
		}
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
			size += len(s) + 2
		}
	}
	return sanitize.Truncate(sanitize.Text(strings.Join(parts, "\n\n"), MaxSummaryBytes), MaxSummaryBytes)
}

// Summary is the concise text for the parent
// (docs/design.md#tool-contract): the remote's structured summary, else
// the task's output (Output) followed by the final status message (the
// remote's last word, when it adds to the output), else the final status
// text. Status messages of a working task never make the summary.
func (t *Transcript) Summary() string {
	if t.resultSummary != "" {
		return t.resultSummary
	}
	if s := t.Output(); s != "" {
		if f := t.finalWord(s); f != "" {
			s += "\n\n" + f
		}
		return sanitize.Truncate(s, MaxSummaryBytes)
	}
	return sanitize.Truncate(sanitize.Text(t.finalText, MaxSummaryBytes), MaxSummaryBytes)
}

// Messages returns the remote's answer: one assistant message with its
// last assistant text message, else the content of its text artifacts,
// else the final status text; then, when the final status message adds to
// that answer, a second one with it (the remote's last word). Earlier
// messages and status messages are progress,
// which the UI streams live and which never reaches the parent model's
// context.
func (t *Transcript) Messages() []delegation.ResultMessage {
	final := t.lastText()
	if final == "" {
		var parts []string
		for _, ref := range t.outOrder {
			if acc := t.arts[ref[1:]]; ref[0] == 'a' && acc != nil {
				if s := strings.TrimSpace(string(acc.head)); s != "" {
					parts = append(parts, s)
				}
			}
		}
		final = strings.Join(parts, "\n\n")
	}
	last := ""
	if final == "" {
		final = t.finalText
	} else {
		last = t.finalWord(final)
	}
	if final = sanitize.Text(final, MaxMessageBytes); final == "" {
		return []delegation.ResultMessage{}
	}
	out := []delegation.ResultMessage{{Role: "assistant", Text: final}}
	if last = sanitize.Text(last, MaxMessageBytes); last != "" {
		out = append(out, delegation.ResultMessage{Role: "assistant", Text: last})
	}
	return out
}

// Artifacts returns the artifacts announced so far, in order.
func (t *Transcript) Artifacts() []delegation.ResultArtifact {
	out := make([]delegation.ResultArtifact, len(t.listed))
	copy(out, t.listed)
	return out
}

// Suffix formats remote text as the end of an error message: ": text", or
// "." when there is none.
func Suffix(text string) string {
	if text == "" {
		return "."
	}
	return ": " + sanitize.Truncate(text, 500)
}
