// Package subagentstream merges a parent run's AG-UI events with the run's
// delegation events into one ordered AG-UI stream (docs/design.md#stream-modes): the
// remote agent's progress appears inside the parent's single SSE stream,
// nested under the parent tool call that delegated to it, and survives slow
// consumers and browser reconnects.
//
// # Ordering and grouping
//
// A [Stream] owns one merge goroutine per run; on a bus that offers inline
// subscriptions (delegation.InlineSubscriber, as MemoryBus does) a
// delegation event is merged on the goroutine that published it while
// nothing waits, so that no goroutine is woken per event
// (docs/design.md#how-the-mux-orders-a-run). Parent events pass unchanged
// (they are the pkg/bridges/agui translation of the run's payloads);
// delegation events become CUSTOM subagent.* events whose value has the
// camelCase shape of docs/design.md#subagent-wire-shape ([Value]), or, by [Mode], AG-UI 1.x
// SUBAGENT_STARTED/FINISHED/ERROR or tool-nested events. One global cursor
// per run is assigned here and is the SSE id of every frame.
//
// Delegations are grouped by runId + parentToolCallId + delegationId. The
// parent tool call comes from the event (strong correlation); when it is
// missing, the delegation claims the oldest unclaimed delegate_to_* tool
// call of the parent by call order (medium correlation), or stays unclaimed
// under the run until one appears, when a subagent.status "correlated" event
// carries the resolved parentToolCallId.
//
// Guarantees: every subagent shows a started event before anything else
// (synthesized, value.synthesized=true, if the remote skipped it) and
// exactly one terminal event, after which its events are dropped; a parent
// TOOL_CALL_RESULT of a delegation tool call is held until that delegation's
// terminal event has been emitted (bounded by HoldTimeout), so the subagent
// ends before the parent sees its result; before the parent's terminal
// event every open subagent is closed with a synthesized subagent.failed
// (code parent_run_ended) or subagent.cancelled (parent cancelled). Unknown
// kinds are forwarded as CUSTOM events or ignored ([UnknownPolicy]).
//
// # Replay and reconnect
//
// Each Stream keeps a bounded replay log. [Hub.EventsHandler] serves
// GET /agui/runs/{runId}/events: with Last-Event-ID it replays after the
// cursor and continues live. AG-UI has no resumption of its own, so a
// resumed stream starts with frames without ids that re-open what was open at
// the cursor (RUN_STARTED, text and reasoning messages, tool calls,
// subagents): it validates on its own. A cursor older than the log gets a
// stream.replay_gap marker after the re-opening of the log's first state; the
// terminal event is never replayed partially. Malformed cursors are 400,
// unknown runs or cursors 404, a complete stream 204. The log is packed as
// it grows: only a short tail of the newest frames is kept as one struct
// per frame; older ones are in compressed blocks with an index and the
// open state at each block's start, and the tail is packed too when the
// stream ends. The answers are the same; a subscriber decompresses what it
// replays one block at a time, without the stream's lock. ReplayFrames and
// ReplayBytes bound the log by frames and uncompressed JSON bytes.
//
// # Backpressure (docs/design.md#backpressure)
//
// Each [Subscriber] has its own queue. Critical and structural frames are
// never dropped; repeated statuses are de-duplicated at the mux; under a
// slow client, subagent text deltas are coalesced per (delegation, message)
// with their order kept; past a byte bound deltas are dropped and a
// stream.dropped marker says how many. Memory is bounded per run (replay log)
// and per subscriber, in every lane: a subscriber that falls behind its bound
// (Options.SubscriberMaxQueued, SubscriberMaxQueuedBytes) with a frame that
// may not be dropped is disconnected ([ErrTooSlow]; its SSE response ends
// without a terminal event, even while a write to it is blocked) and resumes
// from the replay log with Last-Event-ID. The stream's own bus subscription
// is the lossless one: the bus makes publishers wait rather than lose an
// event the replay log needs.
//
// A client's response over plain HTTP/1.1 is written on its hijacked
// connection: the goroutine that appends a frame writes it there without
// blocking, and the response's own goroutine writes what the socket did not
// take (HubOptions.NoHijack keeps every response on its ResponseWriter, as
// TLS and HTTP/2 do). The hub owns those connections: [Hub.Wait] waits for
// them to be written to their end and [Hub.Close] closes them.
//
// This package must not import concrete adapters (pkg/adapters/*); it reads
// delegation events only through pkg/delegation's EventBus, and depends on
// no remote protocol, no MCP and no other delegation package.
package subagentstream
