package subagentstream

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// Mode selects how delegation events are rendered.
type Mode int

const (
	// ModeCustom (the default) renders every delegation event as an AG-UI
	// CUSTOM event named subagent.* with the value of
	// docs/design.md#subagent-wire-shape. Valid under
	// @ag-ui/core 1.0.0 and 0.0.59.
	ModeCustom Mode = iota
	// ModeStandard renders the lifecycle as AG-UI 1.x SUBAGENT_STARTED /
	// SUBAGENT_FINISHED / SUBAGENT_ERROR (subagentRunId = delegationId) and
	// progress as CUSTOM subagent.* events attributed with subagentRunId.
	// AG-UI 1.x clients only: 0.0.59 does not know SUBAGENT_*.
	ModeStandard
	// ModeToolNested renders ModeCustom's events and also wraps each
	// delegation in a synthetic tool call "subagent:<agentKey>" (id
	// "subagent-<delegationId>") whose result is the final status, for
	// frontends that only render tool calls.
	ModeToolNested
)

// UnknownPolicy says what to do with delegation events of an unknown kind.
type UnknownPolicy int

const (
	// ForwardUnknown renders them as CUSTOM events named after their kind.
	ForwardUnknown UnknownPolicy = iota
	// IgnoreUnknown drops them.
	IgnoreUnknown
)

// Defaults of Options.
const (
	DefaultHoldTimeout        = 5 * time.Second
	DefaultReplayFrames       = 20000
	DefaultReplayBytes        = 16 << 20
	DefaultSubscriberBuffer   = 1024
	DefaultSubscriberMaxBytes = 4 << 20
)

// Options configure a Stream.
type Options struct {
	Mode       Mode
	IncludeRaw bool // include DelegationEvent.Raw as value.raw
	Unknown    UnknownPolicy
	// IsDelegationTool reports whether a parent tool call is a delegation
	// (for call-order correlation and for holding its result until the
	// subagent's terminal event). Default: the tool name, after any
	// "mcp__<server>__" prefix, starts with "delegate_to_".
	IsDelegationTool func(name string) bool
	// HoldTimeout bounds how long a parent TOOL_CALL_RESULT or terminal
	// event waits for an open subagent's terminal event.
	HoldTimeout time.Duration
	// ReplayFrames and ReplayBytes bound the per-run replay buffer.
	ReplayFrames int
	ReplayBytes  int
	// SubscriberBuffer is the queue length beyond which a subscriber's text
	// deltas are coalesced; SubscriberMaxBytes bounds its queued delta text,
	// beyond which deltas are dropped and a stream.dropped marker is sent.
	SubscriberBuffer   int
	SubscriberMaxBytes int
	// SubscriberMaxQueued and SubscriberMaxQueuedBytes bound the frames a
	// subscriber holds that arrived while it was attached (every kind:
	// lifecycle, status, artifact, parent events, deltas) by count and by
	// JSON bytes. A subscriber that would exceed either with a frame it may
	// not drop is disconnected (ErrTooSlow; its SSE response ends without
	// a terminal event) and resumes with Last-Event-ID from the replay log
	// (docs/design.md#backpressure). Default: half of ReplayFrames and of
	// ReplayBytes (at least SubscriberBuffer and SubscriberMaxBytes, so
	// that coalescing and dropping deltas act first), so that what a
	// disconnected client lacks is still in the log when it comes back;
	// keep explicit values below the replay bounds for the same reason.
	SubscriberMaxQueued      int
	SubscriberMaxQueuedBytes int
	// Translator configures the parent's AG-UI translation; ThreadID and
	// RunID are set by the stream.
	Translator agui.Options
	Clock      func() time.Time
	Logger     *slog.Logger
	// Observer, if set, receives the stream's measurements for the host's
	// metrics (docs/design.md#observability); nil measures nothing.
	Observer Observer

	// journal receives the stream's frames (set by the Hub from
	// HubOptions.Journal; see journal.go).
	journal RunJournal
}

// Observer receives what the mux measures for the host's telemetry
// (docs/design.md#observability). Its methods are called on the streaming
// path (some under the stream's locks): they must be cheap and must not
// block or call back into the stream.
type Observer interface {
	// Relayed reports that a subagent frame was written to a client; received
	// is when the host received the remote event it carries (the delegation
	// event's Time, set when the delegator published it).
	Relayed(received time.Time)
	// Dropped reports n text deltas dropped for a slow consumer at stage
	// ([DropSDK], [DropBus] or [DropMux]).
	Dropped(stage string, n int)
}

// The stages at which text deltas are dropped under backpressure
// (docs/design.md#backpressure), as [Observer.Dropped] names them.
const (
	DropSDK = "sdk" // the core SDK's run queue (a stream.dropped payload)
	DropBus = "bus" // the delegation bus subscription (a stream.dropped status)
	DropMux = "mux" // a mux subscriber, i.e. one SSE client
)

func (o *Options) defaults() {
	if o.IsDelegationTool == nil {
		o.IsDelegationTool = DefaultIsDelegationTool
	}
	if o.HoldTimeout <= 0 {
		o.HoldTimeout = DefaultHoldTimeout
	}
	if o.ReplayFrames <= 0 {
		o.ReplayFrames = DefaultReplayFrames
	}
	if o.ReplayBytes <= 0 {
		o.ReplayBytes = DefaultReplayBytes
	}
	if o.SubscriberBuffer <= 0 {
		o.SubscriberBuffer = DefaultSubscriberBuffer
	}
	if o.SubscriberMaxBytes <= 0 {
		o.SubscriberMaxBytes = DefaultSubscriberMaxBytes
	}
	if o.SubscriberMaxQueued <= 0 {
		o.SubscriberMaxQueued = max(o.ReplayFrames/2, o.SubscriberBuffer)
	}
	if o.SubscriberMaxQueuedBytes <= 0 {
		o.SubscriberMaxQueuedBytes = max(o.ReplayBytes/2, o.SubscriberMaxBytes)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// DefaultIsDelegationTool matches delegate_to_agent and the named shortcuts
// (delegate_to_*), bare or as Claude's mcp__<server>__<tool>.
func DefaultIsDelegationTool(name string) bool {
	if i := strings.LastIndex(name, "__"); i >= 0 {
		name = name[i+2:]
	}
	return strings.HasPrefix(name, "delegate_to_")
}

// Frame is one event of a run's merged stream with its cursor.
type Frame struct {
	// ID is the run's cursor, strictly increasing; 0 for frames that only
	// exist in one subscriber's view (a resumed stream's re-opening
	// preamble, a drop marker), which carry no id line.
	ID   uint64
	Type events.EventType
	// Data is the event's JSON.
	Data []byte
	// delegation is the delegation a subagent frame belongs to ("" for a
	// parent frame); delta makes a subagent text delta coalescable.
	delegation string
	delta      *deltaInfo
	// received is when the host received the remote event the frame
	// carries (zero for parent and mux-made frames), for Observer.Relayed.
	received time.Time
}

// deltaInfo makes a subagent text delta frame coalescable: reframe
// encodes the delta with other text, from id and ts on the direct path
// (encode.go), with rebuild on the general one.
type deltaInfo struct {
	delegationID, messageID, text string
	id                            *identity
	ts                            int64
	rebuild                       func(text string) events.Event
}

// reframe returns the frame of the same delta event carrying text.
func (d *deltaInfo) reframe(s *Stream, text string) *Frame {
	if d.id != nil {
		return fastDeltaFrame(d.ts, d.id, d.messageID, text)
	}
	f := s.frame(d.rebuild(text))
	if f != nil {
		f.delta = &deltaInfo{delegationID: d.delegationID, messageID: d.messageID, text: text, rebuild: d.rebuild}
	}
	return f
}

// group is one delegation as the mux sees it.
type group struct {
	id, parent string
	last       delegation.DelegationEvent // identity fields of the last event
	started    bool
	terminal   bool
	lastStatus string
	// parked: the delegation returned its question to the parent and waits
	// without a terminal event (delegation.StatusInputReturned); its tool
	// call's result is not held for it.
	parked bool
	// continuations are the parent tool calls that continued the
	// delegation (raw continue_tool_call_id of its input_provided events):
	// their results wait for it like the first call's.
	continuations map[string]bool
	// ident is the identity of the last directly encoded event, shared by
	// the following ones while it stays the same.
	ident *identity
}

// identityFor returns ev's identity, reusing the group's when unchanged
// (no allocation then).
func (g *group) identityFor(runID string, ev *delegation.DelegationEvent) *identity {
	if g.ident == nil || !g.ident.is(runID, ev) {
		id := identityOf(runID, ev)
		g.ident = &id
	}
	return g.ident
}

// Stream merges one run's parent events and delegation events into one
// ordered AG-UI stream with a global cursor, keeps a bounded replay log and
// fans frames out to subscribers. Its merge goroutine is started by
// newStream and ends after the parent's terminal event; Done is closed then.
type Stream struct {
	opts     Options
	threadID string
	runID    string // AG-UI runId
	sdkRunID string

	mu       sync.Mutex
	log      []*Frame
	logBytes int
	// packed replaces log once the stream has ended (packed.go): the same
	// frames, compacted for the stream's retention.
	packed  *packedLog
	base    *openState // state before log[0]
	firstID uint64     // id of log[0]
	lastID  uint64
	subs    map[*Subscriber]struct{}
	ended   bool
	done    chan struct{}
	grown   chan struct{} // closed by the next append; made by waitID, nil when nobody waits

	// Owned by the merge goroutine.
	groups     map[string]*group
	order      []string // delegation ids in start order
	pending    []string // parent delegation tool calls not yet claimed
	unclaimed  []string // delegations without a parent tool call
	held       []events.Event
	holdUntil  time.Time
	cancelled  bool
	seenParent map[string]bool   // delegation tool calls seen
	continued  map[string]string // continuing tool call id -> delegation id
	received   time.Time         // the Time of the bus event being handled, stamped on its frames
}

// newStream returns the stream of a started run; start begins merging it.
func newStream(h *agentadaptor.RunHandle, threadID, runID string, opts Options) *Stream {
	s := makeStream(threadID, runID, opts)
	s.sdkRunID = h.RunID()
	s.groups, s.seenParent, s.continued = map[string]*group{}, map[string]bool{}, map[string]string{}
	return s
}

// makeStream returns an empty stream without merge state (a Mirror's).
func makeStream(threadID, runID string, opts Options) *Stream {
	opts.defaults()
	return &Stream{
		opts: opts, threadID: threadID, runID: runID,
		base: newOpenState(), firstID: 1, subs: map[*Subscriber]struct{}{}, done: make(chan struct{}),
	}
}

// start runs the merge goroutine over the run's payloads and its bus
// subscription until the stream ends (or ctx does); ended, if set, is
// called on that goroutine as its last act, before Done is closed.
func (s *Stream) start(ctx context.Context, h *agentadaptor.RunHandle, sub *delegation.Subscription, ended func()) {
	tr := s.opts.Translator
	tr.ThreadID, tr.RunID = s.threadID, s.runID
	if tr.Clock == nil {
		tr.Clock = s.opts.Clock
	}
	go func() {
		defer close(s.done)
		if ended != nil {
			defer ended()
		}
		s.merge(ctx, h.StreamEvents(), sub, agui.NewTranslator(tr))
	}()
}

// Done is closed when the stream has emitted its terminal event (or its
// context ended).
func (s *Stream) Done() <-chan struct{} { return s.done }

// RunID returns the stream's AG-UI runId.
func (s *Stream) RunID() string { return s.runID }

func (s *Stream) merge(ctx context.Context, payloads <-chan agentadaptor.StreamPayload, sub *delegation.Subscription, tr *agui.Translator) {
	defer s.forgetMergeState()
	defer sub.Close()
	// The bus subscription is read directly from its queue when the bus
	// offers that (delegation.DirectSubscriber: no goroutine, no hand-off
	// per event), otherwise through its channel.
	var bus <-chan delegation.DelegationEvent = sub.C
	ready := sub.Ready()
	drainDirect := func() {
		for ready != nil {
			ev, ok, end := sub.TryNext()
			if end {
				ready = nil
				return
			}
			if !ok {
				return
			}
			s.onDelegation(ev)
		}
	}
	var timer *time.Timer
	var timerC <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// The parent's RUN_STARTED opens the stream: delegation events wait on
	// the bus until the first parent event was translated.
	started := false
	for !tr.Done() || len(s.held) > 0 {
		// Delegation events published before a parent event was even
		// produced must come first: drain the bus before each parent event.
		drained := !started
		if started && ready != nil {
			drainDirect()
		}
		for !drained {
			select {
			case ev, ok := <-bus:
				if !ok {
					bus = nil
					drained = true
					break
				}
				s.onDelegation(ev)
			default:
				drained = true
			}
		}
		s.release(false)
		if len(s.held) > 0 && timerC == nil {
			d := time.Until(s.holdUntil)
			timer = time.NewTimer(max(d, 0))
			timerC = timer.C
		}
		if tr.Done() && len(s.held) == 0 {
			break
		}
		var in <-chan agentadaptor.StreamPayload = payloads
		if tr.Done() {
			in = nil
		}
		busC, readyC := bus, ready
		if !started {
			busC, readyC = nil, nil
		}
		select {
		case p, ok := <-in:
			started = true
			if !ok {
				payloads = nil
				for _, ev := range tr.Close(agui.CodeStreamEnded, "") {
					s.onParent(ev)
				}
				continue
			}
			if p.Kind == agentadaptor.KindStreamDropped && s.opts.Observer != nil {
				s.opts.Observer.Dropped(DropSDK, p.Dropped)
			}
			for _, ev := range tr.Translate(p) {
				s.onParent(ev)
			}
		case ev, ok := <-busC:
			if !ok {
				bus = nil
				continue
			}
			s.onDelegation(ev)
		case <-readyC:
			drainDirect()
		case <-timerC:
			timer, timerC = nil, nil
			if !s.opts.Clock().Before(s.holdUntil) {
				s.release(true)
			}
		case <-ctx.Done():
			s.finish(false) // the hub is closing: nothing is kept
			return
		}
	}
	s.finish(true)
}

// forgetMergeState drops what only the merge goroutine used, once it is
// done: an ended stream kept for reconnects holds its replay log and
// little else.
func (s *Stream) forgetMergeState() {
	s.groups, s.order, s.pending, s.unclaimed, s.held = nil, nil, nil, nil, nil
	s.seenParent, s.continued = nil, nil
}

// finish ends the stream: its subscribers get io.EOF after their queues,
// its journal is told, and, with compact, its replay log is packed for the
// stream's retention.
func (s *Stream) finish(compact bool) {
	s.mu.Lock()
	s.ended = true
	subs := s.subs
	s.subs = map[*Subscriber]struct{}{}
	s.mu.Unlock()
	for sub := range subs {
		sub.end()
	}
	s.endJournal()
	if compact {
		s.compact()
	}
}

// compact packs the replay log of an ended stream (packed.go). Nothing is
// appended to an ended stream, so the log is read outside the lock (as
// Subscribe reads it under the lock: both only read), and only the swap
// takes the lock. Frames that subscribers still have queued stay theirs.
func (s *Stream) compact() {
	s.mu.Lock()
	log, ok := s.log, s.ended && s.packed == nil
	s.mu.Unlock()
	if !ok || len(log) == 0 {
		return
	}
	p := packLog(log)
	if p == nil {
		return
	}
	s.mu.Lock()
	s.packed, s.log = p, nil
	s.mu.Unlock()
}

// onParent handles one parent AG-UI event: correlation bookkeeping, then
// emit it or hold it until the subagents it waits for have ended.
func (s *Stream) onParent(ev events.Event) {
	if e, ok := ev.(*events.ToolCallStartEvent); ok && s.opts.IsDelegationTool(e.ToolCallName) {
		s.seenParent[e.ToolCallID] = true
		if s.continued[e.ToolCallID] != "" {
			// It continues a delegation already shown: no new one to pair.
			s.emitNow(ev)
			return
		}
		if len(s.unclaimed) > 0 {
			id := s.unclaimed[0]
			s.unclaimed = s.unclaimed[1:]
			g := s.groups[id]
			g.parent = e.ToolCallID
			s.emitNow(ev)
			st := g.last
			st.Kind, st.Status, st.ParentToolCallID = delegation.DelegationStatus, "correlated", e.ToolCallID
			st.Delta, st.Text, st.Artifact, st.Error, st.Raw = "", "", nil, nil, nil
			s.emitDelegation(g, st)
			return
		}
		s.pending = append(s.pending, e.ToolCallID)
	}
	if e, ok := ev.(*events.RunErrorEvent); ok && e.Code != nil && *e.Code == agui.CodeCancelled {
		s.cancelled = true
	}
	if len(s.held) == 0 && s.blocks(ev) {
		s.holdUntil = s.opts.Clock().Add(s.holdDuration(ev))
	}
	if len(s.held) > 0 || s.blocks(ev) {
		s.held = append(s.held, ev)
		return
	}
	s.emitNow(ev)
}

func (s *Stream) holdDuration(ev events.Event) time.Duration {
	if e, ok := ev.(*events.ToolCallResultEvent); ok && !s.hasGroupFor(e.ToolCallID) {
		// The delegation may have failed before publishing anything: wait
		// only for the bus to catch up.
		return min(s.opts.HoldTimeout, 250*time.Millisecond)
	}
	return s.opts.HoldTimeout
}

func (s *Stream) hasGroupFor(toolCallID string) bool {
	for _, g := range s.groups {
		if g.parent == toolCallID || g.continuations[toolCallID] {
			return true
		}
	}
	return false
}

// blocks reports whether ev must wait for subagent terminal events.
func (s *Stream) blocks(ev events.Event) bool {
	switch e := ev.(type) {
	case *events.ToolCallResultEvent:
		if !s.seenParent[e.ToolCallID] {
			return false
		}
		found := false
		for _, g := range s.groups {
			if g.parent == e.ToolCallID || g.continuations[e.ToolCallID] {
				found = true
				if !g.terminal && !g.parked {
					return true
				}
			}
		}
		return !found || len(s.unclaimed) > 0 && s.anyOpen(s.unclaimed)
	case *events.RunFinishedEvent, *events.RunErrorEvent:
		return s.anyOpen(s.order)
	}
	return false
}

func (s *Stream) anyOpen(ids []string) bool {
	for _, id := range ids {
		if g := s.groups[id]; g != nil && !g.terminal {
			return true
		}
	}
	return false
}

// release emits held events that no longer block. With force (the hold
// timed out) the head is released even if it still blocks; a held terminal
// event then first closes every open subagent.
func (s *Stream) release(force bool) {
	for len(s.held) > 0 {
		head := s.held[0]
		if s.blocks(head) {
			if !force {
				return
			}
			if _, isResult := head.(*events.ToolCallResultEvent); !isResult {
				s.closeOpenGroups()
			}
		}
		force = false
		s.held = s.held[1:]
		s.emitNow(head)
		if len(s.held) > 0 && s.blocks(s.held[0]) {
			s.holdUntil = s.opts.Clock().Add(s.holdDuration(s.held[0]))
			return
		}
	}
}

// closeOpenGroups synthesizes a terminal event for every open delegation,
// saying why, before the parent's terminal event.
func (s *Stream) closeOpenGroups() {
	for _, id := range s.order {
		g := s.groups[id]
		if g.terminal {
			continue
		}
		ev := g.last
		ev.Delta, ev.Text, ev.Artifact, ev.Status = "", "", nil, ""
		ev.Raw = map[string]any{"synthesized": true}
		if s.cancelled {
			ev.Kind = delegation.DelegationCancelled
			ev.Error = &delegation.DelegationError{Code: delegation.CodeCancelled, Message: "the parent run was cancelled before the remote agent reported a terminal state"}
		} else {
			ev.Kind = delegation.DelegationFailed
			ev.Error = &delegation.DelegationError{Code: delegation.CodeParentRunEnded, Message: "the parent run ended before the remote agent reported a terminal state"}
		}
		s.emitDelegation(g, ev)
	}
}

// onDelegation handles one bus event: grouping, correlation, lifecycle
// guarantees (started first, one terminal), de-duplication.
func (s *Stream) onDelegation(ev delegation.DelegationEvent) {
	if ev.DelegationID == "" {
		return
	}
	if s.opts.Observer != nil && ev.Kind == delegation.DelegationStatus && ev.Status == delegation.StatusStreamDropped {
		if n, ok := ev.Raw["dropped"].(int); ok { // the bus's own marker (a remote's Raw is decoded JSON)
			s.opts.Observer.Dropped(DropBus, n)
		}
	}
	s.received = ev.Time
	defer func() { s.received = time.Time{} }()
	if !ev.Kind.Known() && s.opts.Unknown == IgnoreUnknown {
		return
	}
	g := s.groups[ev.DelegationID]
	if g == nil {
		g = &group{id: ev.DelegationID, parent: ev.ParentToolCallID}
		s.groups[g.id] = g
		s.order = append(s.order, g.id)
		if g.parent != "" {
			s.pending = remove(s.pending, g.parent)
		} else if len(s.pending) > 0 {
			g.parent = s.pending[0]
			s.pending = s.pending[1:]
		} else {
			s.unclaimed = append(s.unclaimed, g.id)
		}
	} else if ev.ParentToolCallID != "" && g.parent == "" {
		g.parent = ev.ParentToolCallID
		s.unclaimed = remove(s.unclaimed, g.id)
		s.pending = remove(s.pending, g.parent)
	}
	if g.terminal {
		return // nothing after a delegation's terminal event
	}
	if ev.Kind == delegation.DelegationStatus && ev.Status == delegation.StatusInputProvided {
		if id, _ := ev.Raw["continue_tool_call_id"].(string); id != "" && id != g.parent {
			if g.continuations == nil {
				g.continuations = map[string]bool{}
			}
			g.continuations[id] = true
			s.continued[id] = g.id
			s.pending = remove(s.pending, id)
		}
	}
	switch {
	case ev.Kind == delegation.DelegationStatus && ev.Status == delegation.StatusInputReturned:
		g.parked = true
	case ev.Kind == delegation.DelegationStatus && (ev.Status == delegation.StatusCorrelated || ev.Status == delegation.StatusStreamDropped):
	default:
		g.parked = false
	}
	switch {
	case ev.Kind == delegation.DelegationStarted && g.started:
		return
	case ev.Kind == delegation.DelegationStatus:
		if ev.Status == g.lastStatus && ev.Text == "" {
			return
		}
		g.lastStatus = ev.Status
	}
	if ev.ParentToolCallID == "" {
		ev.ParentToolCallID = g.parent
	}
	if !g.started && ev.Kind != delegation.DelegationStarted {
		st := ev
		st.Kind, st.Delta, st.Text, st.Artifact, st.Error, st.Status = delegation.DelegationStarted, "", "", nil, nil, ""
		st.Raw = map[string]any{"synthesized": true}
		s.emitDelegation(g, st)
	}
	s.emitDelegation(g, ev)
}

func remove(list []string, v string) []string {
	for i, x := range list {
		if x == v {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}

// emitDelegation renders ev per mode and emits it.
func (s *Stream) emitDelegation(g *group, ev delegation.DelegationEvent) {
	g.last = ev
	if ev.Kind == delegation.DelegationStarted {
		g.started = true
	}
	if ev.Kind.Terminal() {
		g.terminal = true
	}
	at := ev.Time
	if at.IsZero() {
		at = s.opts.Clock()
	}
	name := string(ev.Kind)
	if name == "" {
		name = "subagent.unknown"
	}
	synthesized := ev.Raw != nil && ev.Raw["synthesized"] == true
	if fastEncodable(&ev, s.opts.Mode, s.opts.IncludeRaw) {
		s.emitFast(g, &ev, name, at, synthesized)
		return
	}
	value := Value(ev, s.runID, s.opts.IncludeRaw)
	if synthesized {
		value["synthesized"] = true
	}
	custom := func() events.Event {
		if s.opts.Mode == ModeStandard {
			return &AttributedCustomEvent{BaseEvent: base(events.EventTypeCustom, at), SubagentRunID: ev.DelegationID, Name: name, Value: value}
		}
		return agui.NewCustomEvent(name, value, at)
	}
	switch s.opts.Mode {
	case ModeStandard:
		switch {
		case ev.Kind == delegation.DelegationStarted:
			n := ev.AgentName
			if n == "" {
				n = ev.AgentKey
			}
			s.emitNow(&SubagentStartedEvent{BaseEvent: base(EventSubagentStarted, at), SubagentRunID: ev.DelegationID, Name: n, ParentToolCallID: ev.ParentToolCallID})
			return
		case ev.Kind == delegation.DelegationFinished:
			s.emitNow(&SubagentFinishedEvent{BaseEvent: base(EventSubagentFinished, at), SubagentRunID: ev.DelegationID, Result: value, Outcome: map[string]any{"type": "success"}})
			return
		case ev.Kind.Terminal():
			msg, code := "the subagent was cancelled", string(delegation.CodeCancelled)
			if ev.Error != nil {
				msg, code = ev.Error.Message, string(ev.Error.Code)
			}
			if msg == "" {
				msg = code
			}
			s.emitNow(&SubagentErrorEvent{BaseEvent: base(EventSubagentError, at), SubagentRunID: ev.DelegationID, Message: msg, Code: code})
			return
		}
		s.emitDelegationCustom(ev, custom)
	case ModeToolNested:
		callID := "subagent-" + ev.DelegationID
		if ev.Kind == delegation.DelegationStarted {
			s.emitNow(events.NewToolCallStartEvent(callID, "subagent:"+ev.AgentKey))
		}
		s.emitDelegationCustom(ev, custom)
		if ev.Kind.Terminal() {
			s.emitNow(events.NewToolCallEndEvent(callID))
			res, _ := json.Marshal(value)
			s.emitNow(events.NewToolCallResultEvent("result-"+callID, callID, string(res)))
		}
	default:
		s.emitDelegationCustom(ev, custom)
	}
}

// emitFast emits a delegation event encoded directly (encode.go), in
// ModeCustom or ModeToolNested.
func (s *Stream) emitFast(g *group, ev *delegation.DelegationEvent, name string, at time.Time, synthesized bool) {
	callID := ""
	if s.opts.Mode == ModeToolNested {
		callID = "subagent-" + ev.DelegationID
		if ev.Kind == delegation.DelegationStarted {
			s.emitNow(events.NewToolCallStartEvent(callID, "subagent:"+ev.AgentKey))
		}
	}
	id := g.identityFor(s.runID, ev)
	ts := at.UnixMilli()
	var f *Frame
	if ev.Kind == delegation.DelegationTextDelta {
		f = fastDeltaFrame(ts, id, ev.RemoteMessageID, ev.Delta)
	} else {
		f = fastFrame(name, ts, id, ev.RemoteMessageID, ev.Delta, synthesized)
	}
	s.append(f)
	if callID != "" && ev.Kind.Terminal() {
		value := Value(*ev, s.runID, s.opts.IncludeRaw)
		if synthesized {
			value["synthesized"] = true
		}
		s.emitNow(events.NewToolCallEndEvent(callID))
		res, _ := json.Marshal(value)
		s.emitNow(events.NewToolCallResultEvent("result-"+callID, callID, string(res)))
	}
}

func (s *Stream) emitDelegationCustom(ev delegation.DelegationEvent, build func() events.Event) {
	f := s.frame(build())
	if f == nil {
		return
	}
	if ev.Kind == delegation.DelegationTextDelta {
		mode := s.opts.Mode
		at, runID, raw := ev.Time, s.runID, s.opts.IncludeRaw
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
	s.append(f)
}

// emitNow validates, numbers and publishes one event.
func (s *Stream) emitNow(ev events.Event) {
	if f := s.frame(ev); f != nil {
		s.append(f)
	}
}

func (s *Stream) frame(ev events.Event) *Frame {
	if ev.Timestamp() == nil {
		ev.SetTimestamp(s.opts.Clock().UnixMilli())
	}
	if err := ev.Validate(); err != nil {
		s.opts.Logger.Error("subagentstream: dropping an invalid event", "run_id", s.runID, "type", ev.Type(), "err", err)
		return nil
	}
	data, err := ev.ToJSON()
	if err != nil {
		s.opts.Logger.Error("subagentstream: dropping an unencodable event", "run_id", s.runID, "type", ev.Type(), "err", err)
		return nil
	}
	return &Frame{Type: ev.Type(), Data: data, delegation: eventDelegation(ev)}
}

// append numbers f, adds it to the replay log (trimming it to its bounds)
// and hands it to every subscriber; a subscriber that falls behind its
// bound is detached and disconnected.
func (s *Stream) append(f *Frame) {
	s.mu.Lock()
	s.lastID++
	f.ID = s.lastID
	if f.received.IsZero() {
		f.received = s.received // a Mirror's copy of a local frame keeps its own
	}
	s.log = append(s.log, f)
	s.logBytes += len(f.Data)
	for len(s.log) > 1 && (len(s.log) > s.opts.ReplayFrames || s.logBytes > s.opts.ReplayBytes) {
		old := s.log[0]
		s.base.applyFrame(old)
		s.logBytes -= len(old.Data)
		s.log[0] = nil
		s.log = s.log[1:]
		s.firstID++
	}
	var cut []*Subscriber
	for sub := range s.subs {
		if sub.push(f) {
			delete(s.subs, sub)
			cut = append(cut, sub)
		}
	}
	if s.grown != nil {
		close(s.grown)
		s.grown = nil
	}
	if s.opts.journal != nil {
		s.opts.journal.Append(f)
	}
	s.mu.Unlock()
	for _, sub := range cut {
		sub.disconnect()
	}
}

// waitID waits until the stream holds frame id, ends, or ctx ends; it
// reports whether the stream holds frame id.
func (s *Stream) waitID(ctx context.Context, id uint64) bool {
	for {
		s.mu.Lock()
		if s.lastID >= id {
			s.mu.Unlock()
			return true
		}
		if s.ended {
			s.mu.Unlock()
			return false
		}
		if s.grown == nil {
			s.grown = make(chan struct{})
		}
		grown := s.grown
		s.mu.Unlock()
		select {
		case <-grown:
		case <-s.done:
		case <-ctx.Done():
			return false
		}
	}
}

// SDKRunID returns the SDK run id of the stream's run (the id delegation
// events and runtime services use).
func (s *Stream) SDKRunID() string { return s.sdkRunID }
