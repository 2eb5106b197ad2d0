package subagentstream

import (
	"context"
	"log/slog"
	"slices"
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
	// ReplayFrames and ReplayBytes bound the per-run replay log by its
	// number of frames and their JSON bytes, uncompressed: the log is
	// packed as it grows (docs/design.md#replay-and-reconnect), so it
	// holds much less memory than ReplayBytes.
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

// Stream is one run's merged AG-UI stream: its frames with a global
// cursor, a bounded replay log (packed as it grows, packed.go) and the
// subscribers it fans frames out to. Its merge (a merger, whose goroutine is started
// by start) appends the frames; a Mirror appends another process's. Its
// identity and options never change; everything else is guarded by mu.
// Done is closed when the stream has ended.
type Stream struct {
	opts     Options
	threadID string
	runID    string // AG-UI runId
	sdkRunID string

	mu sync.Mutex
	// The replay log is the frames firstID..lastID: those before tailID
	// packed (packed.go), the rest, the tail, in log. logBytes is the JSON
	// of firstID..lastID, uncompressed (what ReplayBytes bounds), tailBytes
	// that of the tail.
	log       []*Frame
	logBytes  int
	tailBytes int
	// packed holds the frames from packed.first up to the tail; those
	// before firstID are trimmed, and kept until their block goes.
	packed packedLog
	// tailBase is what is open before log[0] (nil once an ended stream's
	// log is all packed).
	tailBase *openState
	// blockState is the state of the packed prefix's last block, which
	// the next block shares while nothing opened or closed.
	blockState *openState
	firstID    uint64 // the first frame of the log
	// packAt is the tail's JSON bytes at which it is packed (0: the
	// default; negative: only when the stream ends, as tests compare);
	// unpackable is set when the log cannot be packed (more than 256
	// frame types): it is then kept as it is.
	packAt     int
	unpackable bool
	lastID     uint64
	subs       map[*Subscriber]struct{}
	ended      bool
	done       chan struct{} // closed once, by whoever ends the stream (its merge goroutine, or its Mirror)
	grown      chan struct{} // closed by the next append; made by waitID, nil when nobody waits
}

// newStream returns the stream of a started run; start begins merging it.
func newStream(h *agentadaptor.RunHandle, threadID, runID string, opts Options) *Stream {
	s := makeStream(threadID, runID, opts)
	s.sdkRunID = h.RunID()
	return s
}

// makeStream returns an empty stream, without a merge goroutine (a
// Mirror's, until start for a Hub's).
func makeStream(threadID, runID string, opts Options) *Stream {
	opts.defaults()
	return &Stream{
		opts: opts, threadID: threadID, runID: runID,
		tailBase: newOpenState(), firstID: 1, subs: map[*Subscriber]struct{}{}, done: make(chan struct{}),
	}
}

// start runs the merge goroutine over the run's payloads and its bus
// events until the stream ends (or ctx does); ended, if set, is called on
// that goroutine as its last act, before Done is closed. The stream
// subscribes to the run's bus events (merger.subscribe) before start
// returns.
func (s *Stream) start(ctx context.Context, h *agentadaptor.RunHandle, bus delegation.EventBus, ended func()) {
	tr := s.opts.Translator
	tr.ThreadID, tr.RunID = s.threadID, s.runID
	if tr.Clock == nil {
		tr.Clock = s.opts.Clock
	}
	m := newMerger(s)
	m.subscribe(ctx, bus, h.RunID())
	go func() {
		defer close(s.done)
		if ended != nil {
			defer ended()
		}
		m.run(ctx, h.StreamEvents(), agui.NewTranslator(tr))
	}()
}

// Done is closed when the stream has emitted its terminal event (or its
// context ended).
func (s *Stream) Done() <-chan struct{} { return s.done }

// RunID returns the stream's AG-UI runId.
func (s *Stream) RunID() string { return s.runID }

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

// compact packs what remains unpacked of the replay log of an ended stream
// (packed.go), for its retention. Frames that subscribers still have
// queued stay theirs.
func (s *Stream) compact() {
	s.packTail(true)
}

// packTail moves the log's tail into its packed prefix: when the stream
// ends (final), or while it is live once the tail has grown past its
// threshold. It runs on the goroutine that appends (or ended the stream),
// so that nothing else changes the log meanwhile; the frames are
// compressed outside the lock, which only the swap takes.
func (s *Stream) packTail(final bool) {
	s.mu.Lock()
	ok := s.ended && len(s.log) > 0
	if !final {
		ok = s.tailFull()
	}
	if !ok || s.unpackable {
		s.mu.Unlock()
		return
	}
	frames := slices.Clone(s.log)
	st, prev := s.tailBase.clone(), s.blockState
	s.mu.Unlock()
	maxBlock := packBlockBytes
	if !final {
		maxBlock = 1<<31 - 1 // one block: the tail is about a block's worth
	}
	part := packFrames(frames, st, prev, maxBlock)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.log) < len(frames) || s.log[0] != frames[0] || s.log[len(frames)-1] != frames[len(frames)-1] {
		return // cannot happen: only this goroutine changes the log
	}
	if part == nil || !s.packed.add(part) {
		s.unpackable = true
		return
	}
	n := len(frames)
	clear(s.log[:n])
	if n == len(s.log) {
		s.log = s.log[:0] // reuse the array from its start
	} else {
		s.log = s.log[n:]
	}
	for _, f := range frames {
		s.tailBytes -= len(f.Data)
	}
	s.tailBase, s.blockState = part.end, part.last
	if final && len(s.log) == 0 {
		// Nothing reads the state at the end of an ended stream: every
		// cursor a subscriber may still give is before it.
		s.log, s.tailBase = nil, nil
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
// bound is detached and disconnected. Subscribers with direct writes get
// f on their connection before it returns.
func (s *Stream) append(f *Frame) {
	var buf [4]*Subscriber
	direct, pack := s.queue(f, buf[:0])
	s.written(direct, pack)
}

// written writes to the direct subscribers what queue left them, then
// packs the log's tail if queue said it was due: on the goroutine that
// appended, as packTail needs.
func (s *Stream) written(direct []*Subscriber, pack bool) {
	for _, sub := range direct {
		sub.writeDirect()
	}
	if pack {
		s.packTail(false)
	}
}

// queue is append without the writes: it numbers f, logs it, hands it to
// every subscriber and disconnects the ones cut, and returns direct with
// the subscribers that write directly and now have f to write (each once,
// whatever direct held already) and whether the tail is to be packed. The
// caller calls written with them, at once or after more frames (the
// merger does so once per payload or bus batch, so that the frames one
// parent event makes go out in one write).
func (s *Stream) queue(f *Frame, direct []*Subscriber) ([]*Subscriber, bool) {
	s.mu.Lock()
	s.lastID++
	f.ID = s.lastID
	s.log = append(s.log, f)
	s.logBytes += len(f.Data)
	s.tailBytes += len(f.Data)
	for s.lastID > s.firstID && (s.lastID-s.firstID >= uint64(s.opts.ReplayFrames) || s.logBytes > s.opts.ReplayBytes) {
		s.trimFirst()
	}
	var cut []*Subscriber
	for sub := range s.subs {
		c, d := sub.push(f)
		if c {
			delete(s.subs, sub)
			cut = append(cut, sub)
		}
		if d && !slices.Contains(direct, sub) {
			direct = append(direct, sub)
		}
	}
	if s.grown != nil {
		close(s.grown)
		s.grown = nil
	}
	if s.opts.journal != nil {
		s.opts.journal.Append(f)
	}
	pack := s.tailFull()
	s.mu.Unlock()
	for _, sub := range cut {
		sub.disconnect()
	}
	return direct, pack
}

// tailFull reports whether a live stream's tail is to be packed.
func (s *Stream) tailFull() bool {
	limit := s.packAt
	if limit == 0 {
		limit = livePackBytes
	}
	return !s.ended && !s.unpackable && limit > 0 && (s.tailBytes >= limit || len(s.log) >= livePackFrames)
}

// trimFirst drops the log's first frame: from the packed prefix, whose
// first block goes once none of its frames is left, or from the tail,
// whose state at its start then moves past it.
func (s *Stream) trimFirst() {
	p := &s.packed
	if p.len() > 0 {
		s.logBytes -= int(p.size[s.firstID-p.first])
		s.firstID++
		if len(p.blocks) == 1 && s.firstID == p.first+uint64(p.len()) || len(p.blocks) > 1 && s.firstID == p.blocks[1].first {
			p.dropBlock()
		}
		return
	}
	old := s.log[0]
	s.tailBase.applyFrame(old)
	s.logBytes -= len(old.Data)
	s.tailBytes -= len(old.Data)
	s.log[0] = nil
	s.log = s.log[1:]
	s.firstID++
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
