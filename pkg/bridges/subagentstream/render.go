package subagentstream

import (
	"encoding/json"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// Rendering: the merge (whoever holds it, merge.go) turns each delegation event it lets
// through into frames per Options.Mode (docs/design.md#stream-modes) and
// appends them to its stream. The hot events take the direct encoding
// (encode.go); the others the AG-UI SDK's.

// emitDelegation records ev as g's latest event and renders it per mode.
func (m *merger) emitDelegation(g *group, ev delegation.DelegationEvent) {
	g.record(ev)
	at := ev.Time
	if at.IsZero() {
		at = m.opts.Clock()
	}
	name := string(ev.Kind)
	if name == "" {
		name = "subagent.unknown"
	}
	synthesized := ev.Raw != nil && ev.Raw["synthesized"] == true
	if fastEncodable(&ev, m.opts.Mode, m.opts.IncludeRaw) {
		m.emitFast(g, &ev, name, at, synthesized)
		return
	}
	value := Value(ev, m.runID, m.opts.IncludeRaw)
	if synthesized {
		value["synthesized"] = true
	}
	custom := func() events.Event {
		if m.opts.Mode == ModeStandard {
			return &AttributedCustomEvent{BaseEvent: base(events.EventTypeCustom, at), SubagentRunID: ev.DelegationID, Name: name, Value: value}
		}
		return agui.NewCustomEvent(name, value, at)
	}
	switch m.opts.Mode {
	case ModeStandard:
		if lifecycle := standardLifecycle(&ev, value, at); lifecycle != nil {
			m.emitNow(lifecycle)
			return
		}
		m.emitDelegationCustom(ev, custom)
	case ModeToolNested:
		callID := "subagent-" + ev.DelegationID
		if ev.Kind == delegation.DelegationStarted {
			m.emitNow(events.NewToolCallStartEvent(callID, "subagent:"+ev.AgentKey))
		}
		m.emitDelegationCustom(ev, custom)
		if ev.Kind.Terminal() {
			m.emitNow(events.NewToolCallEndEvent(callID))
			res, _ := json.Marshal(value)
			m.emitNow(events.NewToolCallResultEvent("result-"+callID, callID, string(res)))
		}
	default:
		m.emitDelegationCustom(ev, custom)
	}
}

// standardLifecycle returns ModeStandard's SUBAGENT_STARTED, _FINISHED or
// _ERROR for a lifecycle event (value is its CUSTOM value, the result of a
// finished one); nil for every other kind, which is an attributed CUSTOM
// event.
func standardLifecycle(ev *delegation.DelegationEvent, value map[string]any, at time.Time) events.Event {
	switch {
	case ev.Kind == delegation.DelegationStarted:
		n := ev.AgentName
		if n == "" {
			n = ev.AgentKey
		}
		return &SubagentStartedEvent{BaseEvent: base(EventSubagentStarted, at), SubagentRunID: ev.DelegationID, Name: n, ParentToolCallID: ev.ParentToolCallID}
	case ev.Kind == delegation.DelegationFinished:
		return &SubagentFinishedEvent{BaseEvent: base(EventSubagentFinished, at), SubagentRunID: ev.DelegationID, Result: value, Outcome: map[string]any{"type": "success"}}
	case ev.Kind.Terminal():
		msg, code := "the subagent was cancelled", string(delegation.CodeCancelled)
		if ev.Error != nil {
			msg, code = ev.Error.Message, string(ev.Error.Code)
		}
		if msg == "" {
			msg = code
		}
		return &SubagentErrorEvent{BaseEvent: base(EventSubagentError, at), SubagentRunID: ev.DelegationID, Message: msg, Code: code}
	}
	return nil
}

// emitFast emits a delegation event encoded directly (encode.go), in
// ModeCustom or ModeToolNested.
func (m *merger) emitFast(g *group, ev *delegation.DelegationEvent, name string, at time.Time, synthesized bool) {
	callID := ""
	if m.opts.Mode == ModeToolNested {
		callID = "subagent-" + ev.DelegationID
		if ev.Kind == delegation.DelegationStarted {
			m.emitNow(events.NewToolCallStartEvent(callID, "subagent:"+ev.AgentKey))
		}
	}
	id := g.identityFor(m.runID, ev)
	ts := at.UnixMilli()
	var f *Frame
	if ev.Kind == delegation.DelegationTextDelta {
		f = fastDeltaFrame(ts, id, ev.RemoteMessageID, ev.Delta)
	} else {
		f = fastFrame(name, ts, id, ev.RemoteMessageID, ev.Delta, synthesized)
	}
	m.append(f)
	if callID != "" && ev.Kind.Terminal() {
		value := Value(*ev, m.runID, m.opts.IncludeRaw)
		if synthesized {
			value["synthesized"] = true
		}
		m.emitNow(events.NewToolCallEndEvent(callID))
		res, _ := json.Marshal(value)
		m.emitNow(events.NewToolCallResultEvent("result-"+callID, callID, string(res)))
	}
}

func (m *merger) emitDelegationCustom(ev delegation.DelegationEvent, build func() events.Event) {
	f := m.out.frame(build())
	if f == nil {
		return
	}
	if ev.Kind == delegation.DelegationTextDelta {
		mode := m.opts.Mode
		at, runID, raw := ev.Time, m.runID, m.opts.IncludeRaw
		f.delta = &deltaInfo{delegationID: ev.DelegationID, messageID: ev.RemoteMessageID, text: ev.Delta, rebuild: func(text string) events.Event {
			e := ev
			e.Delta = text
			v := Value(e, runID, raw)
			if mode == ModeStandard {
				return &AttributedCustomEvent{BaseEvent: base(events.EventTypeCustom, at), SubagentRunID: e.DelegationID, Name: string(e.Kind), Value: v}
			}
			return agui.NewCustomEvent(string(e.Kind), v, at)
		}}
	}
	m.append(f)
}

// emitNow validates, numbers and publishes one event.
func (m *merger) emitNow(ev events.Event) {
	if f := m.out.frame(ev); f != nil {
		m.append(f)
	}
}
