package a2adelegation

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"

	a2aclient "github.com/seed0634/agentadaptor/pkg/clients/a2a"
	aguiclient "github.com/seed0634/agentadaptor/pkg/clients/agui"
)

// Status values of the subagent.status events mapped from a remote AG-UI
// run (see the mapping table in doc.go).
const (
	StatusAGUIRunning        = "working"
	StatusAGUIToolCall       = "tool_call"
	StatusAGUIToolResult     = "tool_result"
	StatusAGUIStep           = "step"
	StatusAGUICustom         = "custom"
	StatusAGUIRaw            = "raw"
	StatusAGUINestedSubagent = "nested_subagent"
)

// CUSTOM event names a remote AG-UI agent uses to announce an artifact
// ({id?, name, mime_type|mimeType|mediaType, text|content|uri|url}) and an
// input request ({text}); the first is what the scripted agent and every
// runner exposed through pkg/bridges/sse emit.
const (
	AGUICustomArtifact      = "agent.artifact"
	AGUICustomInputRequired = "agent.input_required"
)

// Bounds of remote AG-UI data kept in events.
const (
	maxAGUIRawBytes  = 16 << 10
	maxAGUIToolArgs  = 2 << 10
	maxAGUIToolCalls = 256
)

// aguiMapper turns the AG-UI events of one delegation's remote runs into
// DelegationEvents. It shares the protocol-neutral state (ids, text
// messages, artifacts, summary, the single terminal) with the A2A mapper
// it wraps, so results, audit and artifact storage work the same for both
// protocols. Like the A2A mapper it is pure apart from cfg.put, never
// panics on malformed payloads, and emits at most one terminal event.
//
// The first event it returns is always a subagent.started (Raw
// "remote_run_started" says whether the remote sent RUN_STARTED or it was
// synthesized because something else came first); the delegation turns it
// into its audited started event.
type aguiMapper struct {
	m *mapper
	// red redacts known secrets from remote ids before they are sanitized
	// into event fields and artifact keys (nil: none).
	red *redactor

	turn int // 0 for the first run, +1 per follow-up run

	started    bool
	chunkOpen  string // message opened by TEXT_MESSAGE_CHUNK
	chunkSeq   int
	tools      map[string]*aguiTool
	usage      any
	asked      bool // the current run announced an input request
	paused     bool // the current run finished waiting for input
	question   string
	interrupts any
}

type aguiTool struct {
	name string
	args strings.Builder
}

func newAGUIMapper(m *mapper) *aguiMapper {
	return &aguiMapper{m: m, tools: map[string]*aguiTool{}}
}

// ensureStarted returns the synthesized subagent.started when none was
// returned yet.
func (a *aguiMapper) ensureStarted() []DelegationEvent {
	if a.started {
		return nil
	}
	a.started = true
	return []DelegationEvent{{Kind: DelegationStarted, Status: "starting", Raw: map[string]any{"remote_run_started": false}}}
}

// newRun prepares for a follow-up run on the same thread (after an input answer).
func (a *aguiMapper) newRun(runID string) {
	a.m.taskID = runID
	a.turn++
	a.asked, a.paused, a.question, a.interrupts, a.chunkOpen = false, false, "", nil, ""
	a.m.state = a2aclient.StateWorking
}

// Map maps one remote AG-UI event. Events after the terminal one are ignored.
func (a *aguiMapper) Map(ev events.Event) (out []DelegationEvent) {
	defer func() {
		if r := recover(); r != nil {
			out = append(out, a.ensureStarted()...)
			out = append(out, a.m.finish(DelegationFailed, &DelegationError{Code: CodeRemoteFailed, Message: "malformed remote payload"})...)
		}
	}()
	if a.m.terminal != "" || ev == nil || a.paused {
		return nil
	}
	if rs, ok := ev.(*events.RunStartedEvent); ok {
		return a.runStarted(rs)
	}
	out = a.ensureStarted()
	if a.chunkOpen != "" {
		if c, ok := ev.(*events.TextMessageChunkEvent); !ok || (c.MessageID != nil && *c.MessageID != a.chunkOpen) {
			out = append(out, a.textEnd(a.chunkOpen)...)
			a.chunkOpen = ""
		}
	}
	switch e := ev.(type) {
	case *events.TextMessageStartEvent:
		out = append(out, a.textStart(e.MessageID)...)
	case *events.TextMessageContentEvent:
		out = append(out, a.textDelta(e.MessageID, e.Delta)...)
	case *events.TextMessageEndEvent:
		out = append(out, a.textEnd(e.MessageID)...)
	case *events.TextMessageChunkEvent:
		id := deref(e.MessageID)
		if id == "" {
			id = a.chunkOpen
		}
		if id == "" {
			a.chunkSeq++
			id = fmt.Sprintf("chunk-%d", a.chunkSeq)
		}
		a.chunkOpen = id
		out = append(out, a.textStart(id)...)
		out = append(out, a.textDelta(id, deref(e.Delta))...)
	case *events.ToolCallStartEvent:
		out = append(out, a.toolStart(e.ToolCallID, e.ToolCallName)...)
	case *events.ToolCallChunkEvent:
		id := deref(e.ToolCallID)
		if a.tools[id] == nil {
			out = append(out, a.toolStart(id, deref(e.ToolCallName))...)
		}
		a.toolArgs(id, deref(e.Delta))
	case *events.ToolCallArgsEvent:
		a.toolArgs(e.ToolCallID, e.Delta)
	case *events.ToolCallEndEvent:
		out = append(out, a.toolEnd(e.ToolCallID)...)
	case *events.ToolCallResultEvent:
		out = append(out, a.toolResult(e.ToolCallID, e.Content)...)
	case *events.StepStartedEvent:
		out = append(out, DelegationEvent{Kind: DelegationStatus, Status: StatusAGUIStep, Text: "Step started: " + sanitizeText(e.StepName, 200),
			Raw: map[string]any{"remote_event": map[string]any{"type": string(e.Type()), "stepName": sanitizeText(e.StepName, 200)}}})
	case *events.StepFinishedEvent:
		out = append(out, DelegationEvent{Kind: DelegationStatus, Status: StatusAGUIStep, Text: "Step finished: " + sanitizeText(e.StepName, 200),
			Raw: map[string]any{"remote_event": map[string]any{"type": string(e.Type()), "stepName": sanitizeText(e.StepName, 200)}}})
	case *events.CustomEvent:
		out = append(out, a.custom(e.Name, e.Value)...)
	case *events.RawEvent:
		raw := map[string]any{"event": boundedJSON(e.Event)}
		if e.Source != nil {
			raw["source"] = sanitizeText(*e.Source, 200)
		}
		out = append(out, DelegationEvent{Kind: DelegationStatus, Status: StatusAGUIRaw, Raw: map[string]any{"remote_event": raw}})
	case *aguiclient.UnknownEvent:
		out = append(out, a.unknown(e)...)
	case *events.RunFinishedEvent:
		out = append(out, a.runFinished(e)...)
	case *events.RunErrorEvent:
		out = append(out, a.runError(e)...)
	}
	// State, message snapshot, activity and reasoning events are not shown:
	// they are the remote's internal state, not its progress.
	return out
}

func (a *aguiMapper) runStarted(e *events.RunStartedEvent) []DelegationEvent {
	if id := a.id(e.RunID()); id != "" {
		a.m.taskID = id
	}
	if id := a.id(e.ThreadID()); id != "" {
		a.m.contextID = id
	}
	a.m.state = a2aclient.StateWorking
	if a.started {
		// A follow-up run (after an input answer) or a repeated RUN_STARTED.
		return []DelegationEvent{{Kind: DelegationStatus, Status: StatusAGUIRunning, Text: "The remote run started.",
			Raw: map[string]any{"remote_state": "RUN_STARTED"}}}
	}
	a.started = true
	return []DelegationEvent{{Kind: DelegationStarted, Status: "starting", Raw: map[string]any{"remote_run_started": true}}}
}

// id turns a remote identifier into an event field.
func (a *aguiMapper) id(s string) string { return sanitizeID(a.red.str(s)) }

// text messages: the A2A mapper's message table, driven by AG-UI's
// explicit lifecycle. Remote message ids are scoped per run (remotes such
// as pkg/bridges/sse number messages per run, so a follow-up run reuses
// them): the first run keeps them, later runs get a ":<run>" suffix.

func (a *aguiMapper) key(id string) string {
	id = a.id(id)
	if id == "" {
		id = "message"
	}
	if a.turn > 0 {
		id = sanitizeID(fmt.Sprintf("%s:%d", shortText(id, 56), a.turn+1))
	}
	return id
}

func (a *aguiMapper) msg(id string) *textMsg {
	id = a.key(id)
	msg := a.m.texts[id]
	if msg == nil {
		if len(a.m.textOrder) >= maxTrackedTexts {
			return nil
		}
		msg = &textMsg{id: id}
		a.m.texts[id] = msg
		a.m.textOrder = append(a.m.textOrder, id)
	}
	return msg
}

func (a *aguiMapper) textStart(id string) []DelegationEvent {
	msg := a.msg(id)
	if msg == nil || msg.started {
		return nil
	}
	msg.started = true
	return []DelegationEvent{{Kind: DelegationTextStart, RemoteMessageID: msg.id}}
}

func (a *aguiMapper) textDelta(id, delta string) []DelegationEvent {
	msg := a.msg(id)
	if msg == nil || msg.ended || delta == "" {
		return nil
	}
	out := a.textStart(id)
	msg.text += delta
	if len(msg.text) > 1<<20 {
		msg.text = msg.text[len(msg.text)-(1<<20):]
	}
	return append(out, DelegationEvent{Kind: DelegationTextDelta, Delta: delta, RemoteMessageID: msg.id})
}

func (a *aguiMapper) textEnd(id string) []DelegationEvent { return a.endKey(a.key(id)) }

func (a *aguiMapper) endKey(key string) []DelegationEvent {
	msg := a.m.texts[key]
	if msg == nil || !msg.started || msg.ended {
		return nil
	}
	msg.ended = true
	return []DelegationEvent{{Kind: DelegationTextEnd, Text: shortText(msg.text, maxStatusText), RemoteMessageID: msg.id}}
}

// closeTexts ends every open message (the run paused or ended).
func (a *aguiMapper) closeTexts() []DelegationEvent {
	var out []DelegationEvent
	for _, key := range a.m.textOrder {
		out = append(out, a.endKey(key)...)
	}
	a.chunkOpen = ""
	return out
}

// tool calls: the remote's inner tools are reported as status, never as
// tool calls of the parent.

func (a *aguiMapper) toolStart(id, name string) []DelegationEvent {
	name = sanitizeText(name, 128)
	if t := a.tools[id]; t != nil || len(a.tools) >= maxAGUIToolCalls {
		return nil
	}
	a.tools[id] = &aguiTool{name: name}
	return []DelegationEvent{{Kind: DelegationStatus, Status: StatusAGUIToolCall, Text: "Calling tool " + cmpOrStr(name, "(unnamed)"),
		Raw: map[string]any{"nested_tool_call": map[string]any{"phase": "start", "toolCallId": a.id(id), "name": name}}}}
}

func (a *aguiMapper) toolArgs(id, delta string) {
	if t := a.tools[id]; t != nil && t.args.Len() < maxAGUIToolArgs {
		t.args.WriteString(delta)
	}
}

func (a *aguiMapper) toolEnd(id string) []DelegationEvent {
	t := a.tools[id]
	if t == nil {
		return nil
	}
	return []DelegationEvent{{Kind: DelegationStatus, Status: StatusAGUIToolCall, Text: "Tool " + cmpOrStr(t.name, "(unnamed)") + " called",
		Raw: map[string]any{"nested_tool_call": map[string]any{"phase": "end", "toolCallId": a.id(id), "name": t.name,
			"args": sanitizeKeepNL(t.args.String(), maxAGUIToolArgs)}}}}
}

func (a *aguiMapper) toolResult(id, content string) []DelegationEvent {
	name := ""
	if t := a.tools[id]; t != nil {
		name = t.name
	}
	return []DelegationEvent{{Kind: DelegationStatus, Status: StatusAGUIToolResult, Text: "Tool " + cmpOrStr(name, "(unnamed)") + " returned",
		Raw: map[string]any{"nested_tool_call": map[string]any{"phase": "result", "toolCallId": a.id(id), "name": name,
			"content": sanitizeKeepNL(content, maxAGUIToolArgs)}}}}
}

// custom maps a CUSTOM event: artifact announcements become
// subagent.artifact, an input request is remembered for RUN_FINISHED, the
// remote's own subagent.* events stay nested metadata, usage is kept for
// the terminal event, anything else is a status preserving the payload.
func (a *aguiMapper) custom(name string, value any) []DelegationEvent {
	fields, _ := value.(map[string]any)
	switch {
	case name == AGUICustomArtifact || name == "artifact":
		if out := a.artifact(fields); out != nil {
			return out
		}
	case name == AGUICustomInputRequired:
		a.question = sanitizeKeepNL(str(fields["text"]), maxMessageBytes)
		a.asked = true
		return nil
	case name == "agentadaptor.usage" || name == "usage":
		a.usage = boundedJSON(value)
		return nil
	case strings.HasPrefix(name, "subagent."):
		return a.nestedCustom(name, fields)
	}
	n := sanitizeText(name, 128)
	return []DelegationEvent{{Kind: DelegationStatus, Status: StatusAGUICustom, Text: n,
		Raw: map[string]any{"custom": map[string]any{"name": n, "value": boundedJSON(value)}}}}
}

// artifact announces a remote artifact; nil when fields carry none.
func (a *aguiMapper) artifact(f map[string]any) []DelegationEvent {
	name := str(f["name"])
	text, uri := str(f["text"]), cmpOrStr(str(f["uri"]), str(f["url"]))
	if text == "" {
		text = str(f["content"])
	}
	if name == "" || (text == "" && uri == "") {
		return nil
	}
	mime := cmpOrStr(str(f["mime_type"]), cmpOrStr(str(f["mimeType"]), str(f["mediaType"])))
	content := []byte(text)
	if text == "" {
		content = []byte(uri + "\n")
		mime = cmpOrStr(mime, "text/uri-list")
	}
	rid, name := a.red.str(cmpOrStr(str(f["id"]), name)), a.red.str(name)
	acc := a.m.arts[rid]
	if acc == nil {
		if len(a.m.artOrder) >= maxTrackedArts {
			return nil
		}
		meta := SanitizeArtifactMeta(rid, name, mime)
		if meta.MimeType == "" {
			meta.MimeType = "text/plain"
		}
		meta.ID = a.m.uniqueHostID(meta.ID)
		acc = &artAcc{remoteID: rid, meta: meta}
		a.m.arts[rid] = acc
		a.m.artOrder = append(a.m.artOrder, rid)
	}
	// A repeated announcement replaces the artifact (as an A2A replacement does).
	acc.size, acc.tooLarge, acc.content = int64(len(content)), false, nil
	if acc.size > a.m.cfg.maxArtifactBytes {
		acc.tooLarge = true
	} else {
		acc.content = content
	}
	return a.m.announce(acc)
}

// nestedCustom keeps the remote's own subagent.* events (the remote is
// itself a delegating host) as second-level metadata. Their text deltas
// are dropped: the nested subagent.text.end carries the whole message.
func (a *aguiMapper) nestedCustom(name string, f map[string]any) []DelegationEvent {
	kind := strings.TrimPrefix(name, "subagent.")
	if kind == "text.delta" || kind == "text.start" {
		return nil
	}
	nested := map[string]any{"event": sanitizeText(name, 64), "type": sanitizeText(kind, 64),
		"subagentRunId": a.id(cmpOrStr(str(f["subagentRunId"]), str(f["delegationId"]))),
		"name":          sanitizeText(cmpOrStr(str(f["agentName"]), cmpOrStr(str(f["agentKey"]), str(f["name"]))), 128)}
	for _, k := range []string{"agentKey", "status", "remoteTaskId", "parentToolCallId"} {
		if v := str(f[k]); v != "" {
			nested[k] = sanitizeText(v, 128)
		}
	}
	if v := str(f["text"]); v != "" {
		nested["text"] = sanitizeKeepNL(v, maxStatusText)
	}
	for _, k := range []string{"artifact", "error"} {
		if v, ok := f[k]; ok {
			nested[k] = boundedJSON(v)
		}
	}
	return []DelegationEvent{{Kind: DelegationStatus, Status: StatusAGUINestedSubagent,
		Text: fmt.Sprintf("Nested subagent %s: %s", cmpOrStr(nested["name"].(string), "(unnamed)"), kind),
		Raw:  map[string]any{"nested_subagent": nested}}}
}

// unknown handles event types the AG-UI SDK does not model: SUBAGENT_*
// (AG-UI 1.x) become nested-subagent metadata; others are ignored.
func (a *aguiMapper) unknown(e *aguiclient.UnknownEvent) []DelegationEvent {
	t := string(e.Type())
	if !strings.HasPrefix(t, "SUBAGENT_") {
		return nil
	}
	f, _ := e.Fields()
	nested := map[string]any{"event": sanitizeText(t, 64), "type": strings.ToLower(strings.TrimPrefix(sanitizeText(t, 64), "SUBAGENT_")),
		"subagentRunId": a.id(str(f["subagentRunId"])), "name": sanitizeText(str(f["name"]), 128)}
	for _, k := range []string{"description", "parentToolCallId", "code"} {
		if v := str(f[k]); v != "" {
			nested[k] = sanitizeText(v, 256)
		}
	}
	if v := str(f["message"]); v != "" {
		nested["message"] = sanitizeKeepNL(v, maxStatusText)
	}
	for _, k := range []string{"result", "outcome"} {
		if v, ok := f[k]; ok {
			nested[k] = boundedJSON(v)
		}
	}
	who := cmpOrStr(nested["name"].(string), cmpOrStr(nested["subagentRunId"].(string), "(unnamed)"))
	return []DelegationEvent{{Kind: DelegationStatus, Status: StatusAGUINestedSubagent,
		Text: fmt.Sprintf("Nested subagent %s: %s", who, nested["type"]),
		Raw:  map[string]any{"nested_subagent": nested}}}
}

// runFinished ends the delegation, or pauses it when the run stopped for
// input (an "interrupt" outcome, or an agent.input_required announcement).
func (a *aguiMapper) runFinished(e *events.RunFinishedEvent) []DelegationEvent {
	if e.Outcome != nil && e.Outcome.Type == events.RunFinishedOutcomeTypeInterrupt {
		a.asked = true
		var qs []string
		for _, in := range e.Outcome.Interrupts {
			if in.Message != "" {
				qs = append(qs, in.Message)
			}
		}
		if len(qs) > 0 {
			a.question = sanitizeKeepNL(strings.Join(qs, "\n"), maxMessageBytes)
		}
		a.interrupts = boundedJSON(e.Outcome.Interrupts)
	}
	if a.asked {
		a.paused = true
		out := a.closeTexts()
		a.m.state, a.m.question = a2aclient.StateInputRequired, a.question
		raw := map[string]any{"remote_state": "RUN_FINISHED/interrupt"}
		if a.interrupts != nil {
			raw["interrupts"] = a.interrupts
		}
		kind := DelegationStatus
		if a.m.cfg.allowInput {
			kind = DelegationInputRequired
		}
		return append(out, DelegationEvent{Kind: kind, Status: RemoteStatusLabel(a2aclient.StateInputRequired), Text: shortText(a.question, maxStatusText), Raw: raw})
	}
	a.m.state = a2aclient.StateCompleted
	if s := resultSummary(e.Result); s != "" {
		a.m.result = &adaptorResult{Summary: s}
	} else if s := a.accumulated(); s != "" {
		a.m.result = &adaptorResult{Summary: s}
	}
	return a.terminal(a.m.finish(DelegationFinished, nil))
}

func (a *aguiMapper) runError(e *events.RunErrorEvent) []DelegationEvent {
	a.m.state = a2aclient.StateFailed
	code := sanitizeText(deref(e.Code), 64)
	msg := "The remote run failed"
	if code != "" {
		msg += " (" + code + ")"
	}
	out := a.terminal(a.m.finish(DelegationFailed, &DelegationError{Code: CodeRemoteFailed, RemoteStatus: "error",
		Message: msg + suffix(sanitizeKeepNL(e.Message, maxStatusText))}))
	if code != "" && len(out) > 0 {
		out[len(out)-1].Raw["remote_code"] = code
	}
	return out
}

// terminal decorates the terminal event returned by finish.
func (a *aguiMapper) terminal(out []DelegationEvent) []DelegationEvent {
	if n := len(out); n > 0 && out[n-1].Kind.Terminal() {
		raw := map[string]any{"remote_state": map[DelegationEventKind]string{DelegationFinished: "RUN_FINISHED", DelegationFailed: "RUN_ERROR"}[out[n-1].Kind]}
		if a.usage != nil {
			raw["usage"] = a.usage
		}
		out[n-1].Raw = raw
	}
	return out
}

// accumulated is the assistant text of the delegation's messages, in order.
func (a *aguiMapper) accumulated() string {
	var parts []string
	for _, id := range a.m.textOrder {
		if t := strings.TrimSpace(a.m.texts[id].text); t != "" {
			parts = append(parts, t)
		}
	}
	return shortText(sanitizeKeepNL(strings.Join(parts, "\n\n"), maxSummaryBytes), maxSummaryBytes)
}

// resultSummary reads RUN_FINISHED.result: a string, an object with a
// "summary" (the agent-adaptor-result shape), or other JSON (compacted).
func resultSummary(v any) string {
	switch r := v.(type) {
	case nil:
		return ""
	case string:
		return sanitizeKeepNL(r, maxSummaryBytes)
	case map[string]any:
		if s, ok := r["summary"].(string); ok {
			return sanitizeKeepNL(s, maxSummaryBytes)
		}
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" || string(b) == "{}" {
		return ""
	}
	return sanitizeKeepNL(string(b), maxSummaryBytes)
}

// boundedJSON returns v re-decoded from JSON (plain maps, slices, strings,
// numbers), or a marker when it is larger than maxAGUIRawBytes.
func boundedJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return map[string]any{"unencodable": true}
	}
	if len(b) > maxAGUIRawBytes {
		return map[string]any{"truncated": true, "size_bytes": len(b)}
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
