package aguiremote

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"

	"github.com/seed0634/agentadaptor/internal/sanitize"
	aguiclient "github.com/seed0634/agentadaptor/pkg/clients/agui"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

// Status values of the subagent.status events mapped from a remote AG-UI
// run (see the mapping table in docs/design.md#event-mapping).
const (
	StatusRunning        = "working"
	StatusToolCall       = "tool_call"
	StatusToolResult     = "tool_result"
	StatusStep           = "step"
	StatusCustom         = "custom"
	StatusRaw            = "raw"
	StatusNestedSubagent = "nested_subagent"
)

// CUSTOM event names a remote AG-UI agent uses to announce an artifact
// ({id?, name, mime_type|mimeType|mediaType, text|content|uri|url}) and an
// input request ({text}); the first is what the scripted agent and every
// runner exposed through pkg/bridges/sse emit.
const (
	CustomArtifact      = "agent.artifact"
	CustomInputRequired = "agent.input_required"
)

// Bounds of remote AG-UI data kept in events.
const (
	maxRawBytes  = 16 << 10
	maxToolArgs  = 2 << 10
	maxToolCalls = 256
)

// mapper turns the AG-UI events of one delegation's remote runs into
// delegation events through the delegation's Transcript, so that results,
// audit and artifact storage work the same as for A2A. It never panics on
// malformed payloads and emits at most one terminal event.
//
// The first event it returns is always a subagent.started (Raw
// "remote_run_started" says whether the remote sent RUN_STARTED or it was
// synthesized because something else came first).
type mapper struct {
	t *remote.Transcript

	turn int // 0 for the first run, +1 per follow-up run

	started    bool
	chunkOpen  string // message opened by TEXT_MESSAGE_CHUNK
	chunkSeq   int
	tools      map[string]*tool
	usage      any
	asked      bool // the current run announced an input request
	paused     bool // the current run finished waiting for input
	question   string
	interrupts any
}

type tool struct {
	name string
	args strings.Builder
}

func newMapper(t *remote.Transcript) *mapper {
	return &mapper{t: t, tools: map[string]*tool{}}
}

// ensureStarted returns the synthesized subagent.started when none was
// returned yet.
func (a *mapper) ensureStarted() []delegation.DelegationEvent {
	if a.started {
		return nil
	}
	a.started = true
	return []delegation.DelegationEvent{{Kind: delegation.DelegationStarted, Status: "starting", Raw: map[string]any{"remote_run_started": false}}}
}

// newRun prepares for a follow-up run on the same thread (after an input answer).
func (a *mapper) newRun(runID string) {
	a.t.ReplaceTaskID(runID)
	a.turn++
	a.asked, a.paused, a.question, a.interrupts, a.chunkOpen = false, false, "", nil, ""
	a.t.SetState(remote.StateWorking)
}

// Map maps one remote AG-UI event. Events after the terminal one, or after
// the run paused, are ignored.
func (a *mapper) Map(ev events.Event) (out []delegation.DelegationEvent) {
	defer func() {
		if r := recover(); r != nil {
			out = append(out, a.ensureStarted()...)
			out = append(out, a.t.Finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeRemoteFailed, Message: "malformed remote payload"})...)
		}
	}()
	if a.t.Terminal() != "" || ev == nil || a.paused {
		return nil
	}
	if rs, ok := ev.(*events.RunStartedEvent); ok {
		return a.runStarted(rs)
	}
	out = a.ensureStarted()
	if a.chunkOpen != "" {
		if c, ok := ev.(*events.TextMessageChunkEvent); !ok || (c.MessageID != nil && *c.MessageID != a.chunkOpen) {
			out = append(out, a.t.TextEnd(a.key(a.chunkOpen))...)
			a.chunkOpen = ""
		}
	}
	switch e := ev.(type) {
	case *events.TextMessageStartEvent:
		out = append(out, a.t.TextStart(a.key(e.MessageID))...)
	case *events.TextMessageContentEvent:
		out = append(out, a.t.TextDelta(a.key(e.MessageID), e.Delta)...)
	case *events.TextMessageEndEvent:
		out = append(out, a.t.TextEnd(a.key(e.MessageID))...)
	case *events.TextMessageChunkEvent:
		id := cmp.Or(deref(e.MessageID), a.chunkOpen)
		if id == "" {
			a.chunkSeq++
			id = fmt.Sprintf("chunk-%d", a.chunkSeq)
		}
		a.chunkOpen = id
		out = append(out, a.t.TextStart(a.key(id))...)
		out = append(out, a.t.TextDelta(a.key(id), deref(e.Delta))...)
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
		out = append(out, a.step(string(e.Type()), "Step started: ", e.StepName))
	case *events.StepFinishedEvent:
		out = append(out, a.step(string(e.Type()), "Step finished: ", e.StepName))
	case *events.CustomEvent:
		out = append(out, a.custom(e.Name, e.Value)...)
	case *events.RawEvent:
		raw := map[string]any{"event": boundedJSON(e.Event)}
		if e.Source != nil {
			raw["source"] = sanitize.Line(*e.Source, 200)
		}
		out = append(out, delegation.DelegationEvent{Kind: delegation.DelegationStatus, Status: StatusRaw, Raw: map[string]any{"remote_event": raw}})
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

func (a *mapper) step(typ, label, name string) delegation.DelegationEvent {
	name = sanitize.Line(name, 200)
	return delegation.DelegationEvent{Kind: delegation.DelegationStatus, Status: StatusStep, Text: label + name,
		Raw: map[string]any{"remote_event": map[string]any{"type": typ, "stepName": name}}}
}

func (a *mapper) runStarted(e *events.RunStartedEvent) []delegation.DelegationEvent {
	if id := a.id(e.RunID()); id != "" {
		a.t.ReplaceTaskID(id)
	}
	if id := a.id(e.ThreadID()); id != "" {
		a.t.SetContextID(id)
	}
	a.t.SetState(remote.StateWorking)
	if a.started {
		// A follow-up run (after an input answer) or a repeated RUN_STARTED.
		return []delegation.DelegationEvent{{Kind: delegation.DelegationStatus, Status: StatusRunning, Text: "The remote run started.",
			Raw: map[string]any{"remote_state": "RUN_STARTED"}}}
	}
	a.started = true
	return []delegation.DelegationEvent{{Kind: delegation.DelegationStarted, Status: "starting", Raw: map[string]any{"remote_run_started": true}}}
}

// id turns a remote identifier into an event field.
func (a *mapper) id(s string) string { return sanitize.ID(a.t.Redact(s)) }

// key scopes a remote message id per run: remotes such as pkg/bridges/sse
// number messages per run, so a follow-up run reuses them. The first run
// keeps them, later runs get a ":<run>" suffix.
func (a *mapper) key(id string) string {
	id = cmp.Or(a.id(id), "message")
	if a.turn > 0 {
		id = sanitize.ID(fmt.Sprintf("%s:%d", sanitize.Truncate(id, 56), a.turn+1))
	}
	return id
}

// Tool calls: the remote's inner tools are reported as status, never as
// tool calls of the parent.

func (a *mapper) toolStart(id, name string) []delegation.DelegationEvent {
	name = sanitize.Line(name, 128)
	if t := a.tools[id]; t != nil || len(a.tools) >= maxToolCalls {
		return nil
	}
	a.tools[id] = &tool{name: name}
	return []delegation.DelegationEvent{{Kind: delegation.DelegationStatus, Status: StatusToolCall, Text: "Calling tool " + cmp.Or(name, "(unnamed)"),
		Raw: map[string]any{"nested_tool_call": map[string]any{"phase": "start", "toolCallId": a.id(id), "name": name}}}}
}

func (a *mapper) toolArgs(id, delta string) {
	if t := a.tools[id]; t != nil && t.args.Len() < maxToolArgs {
		t.args.WriteString(delta)
	}
}

func (a *mapper) toolEnd(id string) []delegation.DelegationEvent {
	t := a.tools[id]
	if t == nil {
		return nil
	}
	return []delegation.DelegationEvent{{Kind: delegation.DelegationStatus, Status: StatusToolCall, Text: "Tool " + cmp.Or(t.name, "(unnamed)") + " called",
		Raw: map[string]any{"nested_tool_call": map[string]any{"phase": "end", "toolCallId": a.id(id), "name": t.name,
			"args": sanitize.Text(t.args.String(), maxToolArgs)}}}}
}

func (a *mapper) toolResult(id, content string) []delegation.DelegationEvent {
	name := ""
	if t := a.tools[id]; t != nil {
		name = t.name
	}
	return []delegation.DelegationEvent{{Kind: delegation.DelegationStatus, Status: StatusToolResult, Text: "Tool " + cmp.Or(name, "(unnamed)") + " returned",
		Raw: map[string]any{"nested_tool_call": map[string]any{"phase": "result", "toolCallId": a.id(id), "name": name,
			"content": sanitize.Text(content, maxToolArgs)}}}}
}

// custom maps a CUSTOM event: artifact announcements become
// subagent.artifact, an input request is remembered for RUN_FINISHED, the
// remote's own subagent.* events stay nested metadata, usage is kept for
// the terminal event, anything else is a status preserving the payload.
func (a *mapper) custom(name string, value any) []delegation.DelegationEvent {
	fields, _ := value.(map[string]any)
	switch {
	case name == CustomArtifact || name == "artifact":
		if out := a.artifact(fields); out != nil {
			return out
		}
	case name == CustomInputRequired:
		a.question = sanitize.Text(str(fields["text"]), remote.MaxMessageBytes)
		a.asked = true
		return nil
	case name == "agentadaptor.usage" || name == "usage":
		a.usage = boundedJSON(value)
		return nil
	case strings.HasPrefix(name, "subagent."):
		return a.nestedCustom(name, fields)
	}
	n := sanitize.Line(name, 128)
	return []delegation.DelegationEvent{{Kind: delegation.DelegationStatus, Status: StatusCustom, Text: n,
		Raw: map[string]any{"custom": map[string]any{"name": n, "value": boundedJSON(value)}}}}
}

// artifact announces a remote artifact; nil when fields carry none.
func (a *mapper) artifact(f map[string]any) []delegation.DelegationEvent {
	name := str(f["name"])
	text, uri := cmp.Or(str(f["text"]), str(f["content"])), cmp.Or(str(f["uri"]), str(f["url"]))
	if name == "" || (text == "" && uri == "") {
		return nil
	}
	mime := cmp.Or(str(f["mime_type"]), str(f["mimeType"]), str(f["mediaType"]))
	content := []byte(text)
	if text == "" {
		content = []byte(uri + "\n")
		mime = cmp.Or(mime, "text/uri-list")
	}
	// A repeated announcement replaces the artifact (as an A2A replacement does).
	return a.t.Artifact(remote.ArtifactPart{RemoteID: cmp.Or(str(f["id"]), name), Name: name, MimeType: mime, Content: content, Last: true})
}

// nestedCustom keeps the remote's own subagent.* events (the remote is
// itself a delegating host) as second-level metadata. Their text deltas
// are dropped: the nested subagent.text.end carries the whole message.
func (a *mapper) nestedCustom(name string, f map[string]any) []delegation.DelegationEvent {
	kind := strings.TrimPrefix(name, "subagent.")
	if kind == "text.delta" || kind == "text.start" {
		return nil
	}
	nested := map[string]any{"event": sanitize.Line(name, 64), "type": sanitize.Line(kind, 64),
		"subagentRunId": a.id(cmp.Or(str(f["subagentRunId"]), str(f["delegationId"]))),
		"name":          sanitize.Line(cmp.Or(str(f["agentName"]), str(f["agentKey"]), str(f["name"])), 128)}
	for _, k := range []string{"agentKey", "status", "remoteTaskId", "parentToolCallId"} {
		if v := str(f[k]); v != "" {
			nested[k] = sanitize.Line(v, 128)
		}
	}
	if v := str(f["text"]); v != "" {
		nested["text"] = sanitize.Text(v, remote.MaxStatusText)
	}
	for _, k := range []string{"artifact", "error"} {
		if v, ok := f[k]; ok {
			nested[k] = boundedJSON(v)
		}
	}
	return []delegation.DelegationEvent{{Kind: delegation.DelegationStatus, Status: StatusNestedSubagent,
		Text: fmt.Sprintf("Nested subagent %s: %s", cmp.Or(nested["name"].(string), "(unnamed)"), kind),
		Raw:  map[string]any{"nested_subagent": nested}}}
}

// unknown handles event types the AG-UI SDK does not model: SUBAGENT_*
// (AG-UI 1.x) become nested-subagent metadata; others are ignored.
func (a *mapper) unknown(e *aguiclient.UnknownEvent) []delegation.DelegationEvent {
	t := string(e.Type())
	if !strings.HasPrefix(t, "SUBAGENT_") {
		return nil
	}
	f, _ := e.Fields()
	nested := map[string]any{"event": sanitize.Line(t, 64), "type": strings.ToLower(strings.TrimPrefix(sanitize.Line(t, 64), "SUBAGENT_")),
		"subagentRunId": a.id(str(f["subagentRunId"])), "name": sanitize.Line(str(f["name"]), 128)}
	for _, k := range []string{"description", "parentToolCallId", "code"} {
		if v := str(f[k]); v != "" {
			nested[k] = sanitize.Line(v, 256)
		}
	}
	if v := str(f["message"]); v != "" {
		nested["message"] = sanitize.Text(v, remote.MaxStatusText)
	}
	for _, k := range []string{"result", "outcome"} {
		if v, ok := f[k]; ok {
			nested[k] = boundedJSON(v)
		}
	}
	who := cmp.Or(nested["name"].(string), nested["subagentRunId"].(string), "(unnamed)")
	return []delegation.DelegationEvent{{Kind: delegation.DelegationStatus, Status: StatusNestedSubagent,
		Text: fmt.Sprintf("Nested subagent %s: %s", who, nested["type"]),
		Raw:  map[string]any{"nested_subagent": nested}}}
}

// runFinished ends the delegation, or pauses it when the run stopped for
// input (an "interrupt" outcome, or an agent.input_required announcement).
func (a *mapper) runFinished(e *events.RunFinishedEvent) []delegation.DelegationEvent {
	if e.Outcome != nil && e.Outcome.Type == events.RunFinishedOutcomeTypeInterrupt {
		a.asked = true
		var qs []string
		for _, in := range e.Outcome.Interrupts {
			if in.Message != "" {
				qs = append(qs, in.Message)
			}
		}
		if len(qs) > 0 {
			a.question = sanitize.Text(strings.Join(qs, "\n"), remote.MaxMessageBytes)
		}
		a.interrupts = boundedJSON(e.Outcome.Interrupts)
	}
	if a.asked {
		a.paused = true
		out := a.t.CloseTexts()
		a.chunkOpen = ""
		a.t.SetState(remote.StateInputRequired)
		a.t.SetQuestion(a.question)
		raw := map[string]any{"remote_state": "RUN_FINISHED/interrupt"}
		if a.interrupts != nil {
			raw["interrupts"] = a.interrupts
		}
		kind := delegation.DelegationStatus
		if a.t.Config().AllowInput {
			kind = delegation.DelegationInputRequired
		}
		return append(out, delegation.DelegationEvent{Kind: kind, Status: remote.StateInputRequired.Label(), Text: sanitize.Truncate(a.question, remote.MaxStatusText), Raw: raw})
	}
	a.t.SetState(remote.StateCompleted)
	if s := resultSummary(e.Result); s != "" {
		a.t.SetResultSummary(s)
	} else if s := a.t.Output(); s != "" {
		a.t.SetResultSummary(s)
	}
	return a.terminal(a.t.Finish(delegation.DelegationFinished, nil))
}

func (a *mapper) runError(e *events.RunErrorEvent) []delegation.DelegationEvent {
	a.t.SetState(remote.StateFailed)
	code := sanitize.Line(deref(e.Code), 64)
	msg := "The remote run failed"
	if code != "" {
		msg += " (" + code + ")"
	}
	out := a.terminal(a.t.Finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeRemoteFailed, RemoteStatus: "error",
		Message: msg + remote.Suffix(sanitize.Text(e.Message, remote.MaxStatusText))}))
	if code != "" && len(out) > 0 {
		out[len(out)-1].Raw["remote_code"] = code
	}
	return out
}

// terminal decorates the terminal event returned by Finish.
func (a *mapper) terminal(out []delegation.DelegationEvent) []delegation.DelegationEvent {
	if n := len(out); n > 0 && out[n-1].Kind.Terminal() {
		raw := map[string]any{"remote_state": map[delegation.DelegationEventKind]string{delegation.DelegationFinished: "RUN_FINISHED", delegation.DelegationFailed: "RUN_ERROR"}[out[n-1].Kind]}
		if a.usage != nil {
			raw["usage"] = a.usage
		}
		out[n-1].Raw = raw
	}
	return out
}

// resultSummary reads RUN_FINISHED.result: a string, an object with a
// "summary" (the agent-adaptor-result shape), or other JSON (compacted).
func resultSummary(v any) string {
	switch r := v.(type) {
	case nil:
		return ""
	case string:
		return sanitize.Text(r, remote.MaxSummaryBytes)
	case map[string]any:
		if s, ok := r["summary"].(string); ok {
			return sanitize.Text(s, remote.MaxSummaryBytes)
		}
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" || string(b) == "{}" {
		return ""
	}
	return sanitize.Text(string(b), remote.MaxSummaryBytes)
}

// boundedJSON returns v re-decoded from JSON (plain maps, slices, strings,
// numbers), or a marker when it is larger than maxRawBytes.
func boundedJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return map[string]any{"unencodable": true}
	}
	if len(b) > maxRawBytes {
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
