package subagentstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// JournalRun describes a run whose frames a Hub hands to its Journal.
type JournalRun struct {
	// RunID is the AG-UI runId and ThreadID the AG-UI threadId. A runId
	// is unique per principal, not globally (docs/design.md#secrets): a
	// journal keys its records by Owner and RunID together.
	RunID, ThreadID string
	// SDKRunID is the SDK's run id (the one delegations and audit records
	// use).
	SDKRunID string
	// Owner is the principal that started the run (see HubOptions.Owner).
	Owner string
	// Cancel cancels the run, as POST .../cancel does (e.g. when the
	// journal learns that the run was ended elsewhere).
	Cancel func(context.Context) error
}

// Journal receives every frame of the runs a Hub merges, with its id, in
// cursor order: what another process needs to serve the same stream
// (docs/design.md#scale-out). Set it as HubOptions.Journal.
type Journal interface {
	// Begin is called when the hub starts a run's stream, before its first
	// frame. A nil RunJournal journals nothing for the run.
	Begin(run JournalRun) RunJournal
}

// RunJournal receives one run's frames from its Stream.
type RunJournal interface {
	// Append is called once per frame, in cursor order, with the stream's
	// lock held: it must not block (buffer, bounded). The frame is
	// immutable and may be retained.
	Append(f *Frame)
	// End is called once, after the stream's last frame. complete is true
	// when the stream ended with its terminal event (RUN_FINISHED or
	// RUN_ERROR), false when it was cut (its Hub closed first).
	End(complete bool)
}

// ServingJournal is a RunJournal that decides what the run's clients see:
// the Hub serves them Served() instead of the merged stream. A cluster's
// journal serves only the frames its journal has committed, so that every
// process serves the same frames under the same ids, the run's own process
// included (docs/design.md#scale-out). Served is called once, right after
// Begin, before the run's first frame.
type ServingJournal interface {
	RunJournal
	Served() *Stream
}

// Source serves the streams of runs that this Hub does not merge itself
// (runs of another process, read from a journal), for EventsHandler. Set
// it as HubOptions.Source.
type Source interface {
	// Open returns the stream of the run with this AG-UI runId that the
	// requester of ctx may read (the source keys runs by principal and
	// runId, as JournalRun), the principal that started it, and a release
	// function to call when the caller no longer reads it. It returns an
	// error wrapping ErrNoRun when the source knows no such run (or it
	// ended longer ago than it retains runs); other errors mean the source
	// is unavailable.
	Open(ctx context.Context, runID string) (st *Stream, owner string, release func(), err error)
	// Known reports whether the source holds or retains a run of this
	// principal ("" without principals) with this runId, which a new run
	// of the principal must then not take.
	Known(principal, runID string) bool
}

// ErrNoRun is wrapped by Source.Open for a run the source does not know.
var ErrNoRun = errors.New("subagentstream: no such run")

// isTerminalType reports whether t ends an AG-UI run.
func isTerminalType(t events.EventType) bool {
	return t == events.EventTypeRunFinished || t == events.EventTypeRunError
}

// endJournal tells the stream's journal that the stream ended.
func (s *Stream) endJournal() {
	j := s.opts.journal
	if j == nil {
		return
	}
	s.mu.Lock()
	var last events.EventType
	switch {
	case len(s.log) > 0:
		last = s.log[len(s.log)-1].Type
	case s.packed.len() > 0:
		last = s.packed.frameType(s.packed.len() - 1)
	}
	s.mu.Unlock()
	j.End(isTerminalType(last))
}

// openSource opens the run with this AG-UI runId from the hub's Source for
// requester: nil stream (and a nil error) when there is no such run for
// requester.
func (h *Hub) openSource(ctx context.Context, requester string, runID string) (*Stream, func(), error) {
	st, owner, release, err := h.opts.Source.Open(ctx, runID)
	if errors.Is(err, ErrNoRun) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if h.opts.Owner != nil && owner != requester {
		release()
		return nil, nil, nil // another principal's run: as if it did not exist
	}
	return st, release, nil
}

// Defaults of a Mirror.
const (
	// MirrorMaxAhead bounds the frames a Mirror holds while an earlier one
	// is missing.
	MirrorMaxAhead = 4096
)

// ErrMirrorGap is returned by Mirror.Append when too many frames arrived
// ahead of a missing one.
var ErrMirrorGap = errors.New("subagentstream: too many frames ahead of a missing one")

// Mirror is a Stream fed from outside: the frames of a run that another
// process merges, appended with their ids (from a Journal). Its Stream
// serves Subscribe(after) exactly as the original does: replay, then live,
// re-opening what was open at the cursor. Frames may arrive out of order
// or twice; a Mirror applies each id once, in order. It has no goroutine.
type Mirror struct {
	s *Stream

	mu      sync.Mutex
	ahead   map[uint64]*Frame
	endAt   uint64 // the run ended after this frame (0: not known yet)
	ended   bool
	subs    map[string]map[string]any // open delegations (CUSTOM mode): id -> last value
	subsOrd map[string]int
	n       int
}

// NewMirror returns an empty mirror of the run with the AG-UI threadId and
// the run key (a JournalRun.RunID): its frames carry the runId of the key.
func NewMirror(threadID, runKey string, opts Options) *Mirror {
	opts.journal = nil
	_, runID := sse.SplitRunKey(runKey)
	s := makeStream(threadID, runID, opts)
	return &Mirror{s: s, ahead: map[uint64]*Frame{}, subs: map[string]map[string]any{}, subsOrd: map[string]int{}}
}

// Stream returns the mirrored stream.
func (m *Mirror) Stream() *Stream { return m.s }

// LastID returns the id of the last frame applied.
func (m *Mirror) LastID() uint64 {
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	return m.s.lastID
}

// Ended reports whether the mirrored stream has ended.
func (m *Mirror) Ended() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ended
}

// Append adds the frame with this id (its type and JSON as the original
// stream wrote them). A frame already applied is ignored; one ahead of a
// missing frame is held until the gap fills (at most MirrorMaxAhead). Frames
// after the end are ignored. The call that ends the stream packs its
// replay log for its retention, as a Hub's stream's end does.
func (m *Mirror) Append(id uint64, typ events.EventType, data []byte) error {
	return m.add(id, func() *Frame { return mirrorFrame(id, typ, data) })
}

// AppendFrame is Append for a frame of a Stream of this process (e.g. one
// its journal has committed): the frame keeps what subscribers need to
// coalesce it and its receipt time (Observer.Relayed). f is copied; the
// caller's frame is not changed.
func (m *Mirror) AppendFrame(f *Frame) error {
	return m.add(f.ID, func() *Frame { cp := *f; return &cp })
}

func (m *Mirror) add(id uint64, frame func() *Frame) error {
	m.mu.Lock()
	ended, err := m.appendLocked(id, frame)
	m.mu.Unlock()
	if ended {
		m.s.compact() // outside m.mu: Ended and Append callers do not wait for it
	}
	return err
}

// appendLocked is Append under m.mu; ended reports that it ended the stream.
func (m *Mirror) appendLocked(id uint64, frame func() *Frame) (ended bool, err error) {
	if m.ended || id == 0 {
		return false, nil
	}
	last := m.LastID()
	switch {
	case id <= last:
		return false, nil
	case id > last+1:
		if _, dup := m.ahead[id]; !dup {
			if len(m.ahead) >= MirrorMaxAhead {
				return false, fmt.Errorf("%w: frame %d of run %s is missing", ErrMirrorGap, last+1, m.s.runID)
			}
			m.ahead[id] = frame()
		}
		return false, nil
	}
	m.applyLocked(frame())
	for {
		next := m.LastID() + 1
		f, ok := m.ahead[next]
		if !ok {
			break
		}
		delete(m.ahead, next)
		m.applyLocked(f)
	}
	return m.maybeEndLocked(), nil
}

// End records that the run ended after frame last: once every frame up to
// it was applied, the stream ends (subscribers get io.EOF after it) and
// its replay log is packed.
func (m *Mirror) End(last uint64) {
	m.mu.Lock()
	ended := false
	if !m.ended {
		if m.endAt == 0 || last < m.endAt {
			m.endAt = last
		}
		ended = m.maybeEndLocked()
	}
	m.mu.Unlock()
	if ended {
		m.s.compact()
	}
}

// Stop ends the mirror where it is (e.g. when its reader stops), without
// a terminal event. Its replay log is not packed: Stop is how a mirror's
// owner lets it go (a run's end, by End or Abort, packs it for retention).
func (m *Mirror) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopLocked()
}

// maybeEndLocked ends the stream once every frame up to the end is
// applied; it reports whether it ended it.
func (m *Mirror) maybeEndLocked() bool {
	if m.endAt > 0 && m.LastID() >= m.endAt {
		return m.stopLocked()
	}
	return false
}

// stopLocked ends the stream, without packing its log; it reports whether
// it ended it (false: it had ended already).
func (m *Mirror) stopLocked() bool {
	if m.ended {
		return false
	}
	m.ended = true
	clear(m.ahead)
	m.s.finish(false)
	close(m.s.done)
	return true
}

func (m *Mirror) applyLocked(f *Frame) {
	if f.Type == events.EventTypeCustom {
		m.track(f)
	}
	m.s.append(f) // numbers it LastID()+1, which is f's id
}

// track follows the open delegations of CUSTOM mode.
func (m *Mirror) track(f *Frame) {
	var ev struct {
		Name  string         `json:"name"`
		Value map[string]any `json:"value"`
	}
	if json.Unmarshal(f.Data, &ev) != nil || ev.Value == nil {
		return
	}
	id, _ := ev.Value["delegationId"].(string)
	if id == "" {
		return
	}
	switch delegation.DelegationEventKind(ev.Name) {
	case delegation.DelegationFinished, delegation.DelegationFailed, delegation.DelegationCancelled:
		delete(m.subs, id)
		delete(m.subsOrd, id)
	default:
		if _, open := m.subs[id]; !open && ev.Name != string(delegation.DelegationStarted) {
			return
		}
		if _, open := m.subs[id]; !open {
			m.n++
			m.subsOrd[id] = m.n
		}
		m.subs[id] = ev.Value
	}
}

// mirrorFrame rebuilds a frame from the wire, with what subscribers need to
// coalesce a subagent text delta.
func mirrorFrame(id uint64, typ events.EventType, data []byte) *Frame {
	f := &Frame{ID: id, Type: typ, Data: data}
	if typ != events.EventTypeCustom {
		return f
	}
	var ev struct {
		Name          string         `json:"name"`
		Value         map[string]any `json:"value"`
		Timestamp     *int64         `json:"timestamp"`
		SubagentRunID string         `json:"subagentRunId"`
	}
	if json.Unmarshal(data, &ev) != nil || ev.Value == nil {
		return f
	}
	f.delegation, _ = ev.Value["delegationId"].(string)
	if ev.SubagentRunID != "" {
		f.delegation = ev.SubagentRunID
	}
	text, _ := ev.Value["delta"].(string)
	if ev.Name != string(delegation.DelegationTextDelta) || f.delegation == "" {
		return f
	}
	msgID, _ := ev.Value["messageId"].(string)
	at := time.Now()
	if ev.Timestamp != nil {
		at = time.UnixMilli(*ev.Timestamp)
	}
	value, name, attributed := ev.Value, ev.Name, ev.SubagentRunID
	f.delta = &deltaInfo{delegationID: f.delegation, messageID: msgID, text: text, rebuild: func(text string) events.Event {
		v := maps.Clone(value)
		v["delta"] = text
		if attributed != "" {
			return &AttributedCustomEvent{BaseEvent: base(events.EventTypeCustom, at), SubagentRunID: attributed, Name: name, Value: v}
		}
		return agui.NewCustomEvent(name, v, at)
	}}
	return f
}

// Abort ends a stream whose run was lost (its process died): it appends
// frames that close everything still open — every open subagent (failed
// with the code, synthesized), text message, reasoning and tool call — then
// RUN_ERROR with the code and message, and returns the appended frames
// (with their ids) for the journal. A stream that never started gets
// RUN_STARTED first. It returns nil when the stream has already ended. The
// ended stream's replay log is packed for its retention.
func (m *Mirror) Abort(code, message string) []*Frame {
	m.mu.Lock()
	out, ended := m.abortLocked(code, message)
	m.mu.Unlock()
	if ended {
		m.s.compact()
	}
	return out
}

func (m *Mirror) abortLocked(code, message string) (_ []*Frame, ended bool) {
	if m.ended {
		return nil, false
	}
	clear(m.ahead)
	s := m.s
	at := s.opts.Clock()
	var out []*Frame
	for _, ev := range m.closingLocked(code, message, at, true) {
		if f := s.frame(ev); f != nil {
			s.append(f)
			out = append(out, f)
		}
	}
	m.subs, m.subsOrd = map[string]map[string]any{}, map[string]int{}
	m.endAt = m.LastID()
	return out, m.stopLocked()
}

// Closing returns the frames that would end the stream as Abort does —
// closing everything open at the mirror's last frame, then RUN_ERROR with
// the code and message, timestamped at — with their ids, without
// appending them: a journal's writer publishes them, and every mirror
// (this one too) appends them from there. Unlike Abort, a stream without
// any frame gets no RUN_STARTED: only the RUN_ERROR (which an AG-UI client
// accepts as a run's first event). It returns nil when the stream ended.
func (m *Mirror) Closing(code, message string, at time.Time) []*Frame {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended {
		return nil
	}
	s := m.s
	next := m.LastID()
	var out []*Frame
	for _, ev := range m.closingLocked(code, message, at, false) {
		if f := s.frame(ev); f != nil {
			next++
			f.ID = next
			out = append(out, f)
		}
	}
	return out
}

// closingLocked returns the events that close what is open, then
// RUN_ERROR; startEmpty prefixes RUN_STARTED to a stream that never
// started.
func (m *Mirror) closingLocked(code, message string, at time.Time, startEmpty bool) []events.Event {
	s := m.s
	s.mu.Lock()
	st := s.tailBase.clone()
	for _, f := range s.log {
		st.applyFrame(f)
	}
	s.mu.Unlock()
	var evs []events.Event
	if !st.started && startEmpty {
		evs = append(evs, events.NewRunStartedEvent(s.threadID, s.runID))
	}
	// Subagents first (CUSTOM mode, then SUBAGENT_STARTED ones), then what
	// the parent had open, most recently opened first.
	ids := make([]string, 0, len(m.subs))
	for id := range m.subs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return m.subsOrd[ids[i]] < m.subsOrd[ids[j]] })
	for _, id := range ids {
		v := maps.Clone(m.subs[id])
		for _, k := range []string{"delta", "text", "status", "artifact", "messageId"} {
			delete(v, k)
		}
		v["error"] = map[string]any{"code": code, "message": message, "retryable": false}
		v["synthesized"] = true
		evs = append(evs, agui.NewCustomEvent(string(delegation.DelegationFailed), v, at))
	}
	type item struct {
		order int
		ev    events.Event
	}
	var items []item
	for id := range st.subs {
		items = append(items, item{1 << 30, &SubagentErrorEvent{BaseEvent: base(EventSubagentError, at), SubagentRunID: id, Message: message, Code: code}})
	}
	for id, n := range st.text {
		items = append(items, item{n, events.NewTextMessageEndEvent(id)})
	}
	for id, n := range st.reason {
		items = append(items, item{n, events.NewReasoningMessageEndEvent(id)})
	}
	for id, n := range st.rblock {
		items = append(items, item{n, events.NewReasoningEndEvent(id)})
	}
	for id, t := range st.tools {
		items = append(items, item{t.order, events.NewToolCallEndEvent(id)})
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].order > items[j].order })
	for _, it := range items {
		evs = append(evs, it.ev)
	}
	evs = append(evs, events.NewRunErrorEvent(message, events.WithErrorCode(code), events.WithRunID(s.runID)))
	for _, ev := range evs {
		ev.SetTimestamp(at.UnixMilli())
	}
	return evs
}

// requester is the principal r acts for ("" without HubOptions.Owner).
func (h *Hub) requester(r *http.Request) string {
	if h.opts.Owner == nil {
		return ""
	}
	return h.opts.Owner(r)
}

// Hold counts a client that follows the run from elsewhere (another
// process serving the run's journal) as attached: while held, the run's
// reconnect grace does not start. release ends the hold (once; later calls
// do nothing). ok is false when the hub holds no stream for the run key.
func (h *Hub) Hold(key string) (release func(), ok bool) {
	h.mu.Lock()
	_, ok = h.streams[key]
	h.mu.Unlock()
	if !ok {
		return nil, false
	}
	h.attach(key)
	return sync.OnceFunc(func() { h.detach(key) }), true
}
