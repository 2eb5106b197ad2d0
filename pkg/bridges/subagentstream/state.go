package subagentstream

import (
	"encoding/json"
	"maps"
	"sort"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
)

// openState is what is open in an AG-UI stream at some cursor: what a
// resumed stream must re-open to stay valid (AG-UI has no resumption of its
// own). It is updated frame by frame.
type openState struct {
	started  bool
	threadID string
	runID    string
	text     map[string]int // messageId -> opening order
	reason   map[string]int // reasoning messages
	rblock   map[string]int // reasoning blocks
	tools    map[string]openTool
	// unresulted are tool calls that ended without their result yet: a
	// resumed stream re-opens and ends them, so that the result is valid.
	unresulted map[string]openTool
	subs       map[string]openSub
	// n counts the frames applied; gen counts the events applied that may
	// have changed what is open. A clone keeps both, so two states of one
	// stream with the same gen hold the same things open (packed blocks
	// share their state while nothing opens or closes).
	n   int
	gen uint64
}

type openTool struct {
	order  int
	name   string
	parent string
}

type openSub struct {
	order int
	ev    *SubagentStartedEvent
}

func newOpenState() *openState {
	return &openState{text: map[string]int{}, reason: map[string]int{}, rblock: map[string]int{}, tools: map[string]openTool{}, unresulted: map[string]openTool{}, subs: map[string]openSub{}}
}

func (s *openState) clone() *openState {
	c := newOpenState()
	c.started, c.threadID, c.runID, c.n, c.gen = s.started, s.threadID, s.runID, s.n, s.gen
	maps.Copy(c.text, s.text)
	maps.Copy(c.reason, s.reason)
	maps.Copy(c.rblock, s.rblock)
	maps.Copy(c.tools, s.tools)
	maps.Copy(c.unresulted, s.unresulted)
	maps.Copy(c.subs, s.subs)
	return c
}

// applyFrame applies a frame of the stream: only the frames that open or
// close something are decoded (frames keep their JSON only, once).
func (s *openState) applyFrame(f *Frame) { s.applyData(f.Type, f.Data) }

// applyData applies a frame of type typ with the JSON data, which is read
// only when stateEvent(typ) is not nil (nil data will do otherwise).
func (s *openState) applyData(typ events.EventType, data []byte) {
	s.n++
	if ev := stateEvent(typ); ev != nil && json.Unmarshal(data, ev) == nil {
		// A frame that does not decode cannot happen for frames this
		// package wrote.
		s.apply(ev)
	}
}

// stateEvent returns an empty event of type t when frames of that type
// change what is open, to decode them into; nil for every other type.
func stateEvent(t events.EventType) events.Event {
	switch t {
	case events.EventTypeRunStarted:
		return &events.RunStartedEvent{}
	case events.EventTypeTextMessageStart:
		return &events.TextMessageStartEvent{}
	case events.EventTypeTextMessageEnd:
		return &events.TextMessageEndEvent{}
	case events.EventTypeReasoningStart:
		return &events.ReasoningStartEvent{}
	case events.EventTypeReasoningEnd:
		return &events.ReasoningEndEvent{}
	case events.EventTypeReasoningMessageStart:
		return &events.ReasoningMessageStartEvent{}
	case events.EventTypeReasoningMessageEnd:
		return &events.ReasoningMessageEndEvent{}
	case events.EventTypeToolCallStart:
		return &events.ToolCallStartEvent{}
	case events.EventTypeToolCallEnd:
		return &events.ToolCallEndEvent{}
	case events.EventTypeToolCallResult:
		return &events.ToolCallResultEvent{}
	case EventSubagentStarted:
		return &SubagentStartedEvent{}
	case EventSubagentFinished:
		return &SubagentFinishedEvent{}
	case EventSubagentError:
		return &SubagentErrorEvent{}
	}
	return nil
}

// apply updates the state with one event.
func (s *openState) apply(ev events.Event) {
	s.gen++
	switch e := ev.(type) {
	case *events.RunStartedEvent:
		s.started, s.threadID, s.runID = true, e.ThreadIDValue, e.RunIDValue
	case *events.TextMessageStartEvent:
		s.text[e.MessageID] = s.n
	case *events.TextMessageEndEvent:
		delete(s.text, e.MessageID)
	case *events.ReasoningStartEvent:
		s.rblock[e.MessageID] = s.n
	case *events.ReasoningEndEvent:
		delete(s.rblock, e.MessageID)
	case *events.ReasoningMessageStartEvent:
		s.reason[e.MessageID] = s.n
	case *events.ReasoningMessageEndEvent:
		delete(s.reason, e.MessageID)
	case *events.ToolCallStartEvent:
		p := ""
		if e.ParentMessageID != nil {
			p = *e.ParentMessageID
		}
		s.tools[e.ToolCallID] = openTool{order: s.n, name: e.ToolCallName, parent: p}
	case *events.ToolCallEndEvent:
		if t, ok := s.tools[e.ToolCallID]; ok && len(s.unresulted) < maxUnresulted {
			s.unresulted[e.ToolCallID] = t
		}
		delete(s.tools, e.ToolCallID)
	case *events.ToolCallResultEvent:
		delete(s.unresulted, e.ToolCallID)
	case *SubagentStartedEvent:
		s.subs[e.SubagentRunID] = openSub{order: s.n, ev: e}
	case *SubagentFinishedEvent:
		delete(s.subs, e.SubagentRunID)
	case *SubagentErrorEvent:
		delete(s.subs, e.SubagentRunID)
	}
}

// maxUnresulted bounds the ended tool calls a state remembers until their
// result.
const maxUnresulted = 1024

// reopen returns the events that bring a fresh client to this state:
// RUN_STARTED, then every open text message, reasoning message, tool call
// (and, started and ended again, every tool call still waiting for its
// result) and subagent, in the order they were opened.
func (s *openState) reopen(at time.Time, threadID, runID string) []events.Event {
	out := []events.Event{events.NewRunStartedEvent(threadID, runID)}
	type item struct {
		order int
		ev    events.Event
	}
	var items []item
	for id, n := range s.text {
		items = append(items, item{n, events.NewTextMessageStartEvent(id, events.WithRole("assistant"))})
	}
	for id, n := range s.rblock {
		items = append(items, item{n, events.NewReasoningStartEvent(id)})
	}
	for id, n := range s.reason {
		items = append(items, item{n, events.NewReasoningMessageStartEvent(id, "reasoning")})
	}
	for id, t := range s.tools {
		var opts []events.ToolCallStartOption
		if t.parent != "" {
			opts = append(opts, events.WithParentMessageID(t.parent))
		}
		items = append(items, item{t.order, events.NewToolCallStartEvent(id, t.name, opts...)})
	}
	for id, t := range s.unresulted {
		var opts []events.ToolCallStartOption
		if t.parent != "" {
			opts = append(opts, events.WithParentMessageID(t.parent))
		}
		items = append(items, item{t.order, events.NewToolCallStartEvent(id, t.name, opts...)}, item{t.order, events.NewToolCallEndEvent(id)})
	}
	for _, sub := range s.subs {
		c := *sub.ev
		c.BaseEvent = base(EventSubagentStarted, at)
		items = append(items, item{sub.order, &c})
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].order < items[j].order })
	for _, it := range items {
		out = append(out, it.ev)
	}
	ms := at.UnixMilli()
	for _, ev := range out {
		ev.SetTimestamp(ms)
	}
	return out
}
