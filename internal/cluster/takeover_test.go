package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor/internal/testkit/aguiverify"
	"github.com/seed0634/agentadaptor/internal/testkit/natstest"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
)

// leaseCluster is newCluster with its lease.
func leaseCluster(t *testing.T, ns *natstest.Server, replica string, lease time.Duration) *Cluster {
	t.Helper()
	c, err := New(context.Background(), Config{URL: ns.URL(), CredsRef: ns.CredsRef(), Replica: replica, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// crash stops c as kill -9 would: its connection is closed first, so
// nothing it still holds (queued frames, audit writes, claim refreshes)
// reaches NATS; then its goroutines are stopped. A later Close does
// nothing.
func crash(c *Cluster) {
	c.closeOnce.Do(func() {
		c.nc.Close()
		c.lnc.Close()
		c.shutdown()
	})
}

// startLeases starts c's lease refresher only (no scanner, no control).
func startLeases(c *Cluster) { c.spawn(c.refreshLeases) }

// lostRun is a run whose replica died mid-delegation: its stream has a
// text message, a tool call and two subagents open, and two running
// delegations with remote task ids in the audit.
type lostRun struct {
	runID, sdkRunID, key string
}

const lostFrames = 9 // the frames the owner journals

func startLostRun(t *testing.T, owner *Cluster, runID string) lostRun {
	t.Helper()
	r := lostRun{runID: runID, sdkRunID: "sdk-" + runID, key: runKey("alice", runID)}
	at := time.Now()
	custom := func(kind delegation.DelegationEventKind, value map[string]any) events.Event {
		return agui.NewCustomEvent(string(kind), value, at)
	}
	evs := []events.Event{
		events.NewRunStartedEvent("t-"+runID, runID),
		events.NewTextMessageStartEvent("m1", events.WithRole("assistant")),
		events.NewTextMessageContentEvent("m1", "Asking the research agents."),
		events.NewToolCallStartEvent("tc1", "delegate_to_agent"),
		events.NewToolCallArgsEvent("tc1", `{"agent":"research"}`),
		custom(delegation.DelegationStarted, map[string]any{"delegationId": "d1", "agent": "research", "parentToolCallId": "tc1"}),
		custom(delegation.DelegationStatus, map[string]any{"delegationId": "d1", "agent": "research", "status": "working"}),
		custom(delegation.DelegationStarted, map[string]any{"delegationId": "d2", "agent": "writer", "parentToolCallId": "tc1"}),
		custom(delegation.DelegationTextDelta, map[string]any{"delegationId": "d2", "agent": "writer", "messageId": "x", "delta": "partial "}),
	}
	if len(evs) != lostFrames {
		t.Fatal("lostFrames")
	}
	startLeases(owner)
	rj := owner.Journal().Begin(subagentstream.JournalRun{RunID: runID, ThreadID: "t-" + runID, SDKRunID: r.sdkRunID, Owner: "alice"})
	for i, ev := range evs {
		ev.SetTimestamp(at.UnixMilli())
		data, err := ev.ToJSON()
		if err != nil {
			t.Fatal(err)
		}
		rj.Append(&subagentstream.Frame{ID: uint64(i + 1), Type: ev.Type(), Data: data})
	}
	for i, d := range []string{"d1", "d2"} { // started in this order: ended in this order
		owner.Audit().Begin(audit.Record{DelegationID: d, RunID: r.sdkRunID, AgentKey: "research", StartedAt: at.Add(time.Duration(i) * time.Millisecond),
			RemoteTaskID: fmt.Sprintf("task-%d", i+1)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := owner.flushJournals(ctx); err != nil {
		t.Fatal(err)
	}
	owner.audit.flush(ctx)
	if err := owner.audit.settle(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

// orphanCalls counts the EndOrphan calls of every replica per delegation.
type orphanCalls struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *orphanCalls) get(d string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[d]
}

// handler ends a delegation as the delegator's EndOrphan does: (the remote
// task is cancelled, counted here) and the record ends cancelled.
func (o *orphanCalls) handler(c *Cluster) func(context.Context, audit.Record) error {
	return func(_ context.Context, rec audit.Record) error {
		o.mu.Lock()
		if o.n == nil {
			o.n = map[string]int{}
		}
		o.n[rec.DelegationID]++
		o.mu.Unlock()
		rec.Status, rec.EndedAt = delegation.StatusCancelled, time.Now()
		c.Audit().End(rec)
		return nil
	}
}

// crashAtNth returns a crashAt hook stopping at the nth occurrence of
// step, and a channel closed when it did.
func crashAtNth(step string, nth int) (func(string) bool, <-chan struct{}) {
	var n atomic.Int32
	fired := make(chan struct{})
	var once sync.Once
	return func(s string) bool {
		if s != step || int(n.Add(1)) != nth {
			return false
		}
		once.Do(func() { close(fired) })
		return true
	}, fired
}

// scanUntil scans on c until cond holds (generous deadline).
func scanUntil(t *testing.T, c *Cluster, cond func() bool) {
	t.Helper()
	waitUntil(t, func() bool {
		_ = c.scanOnce()
		return cond()
	})
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// ended reports whether the run's cleanup is complete: its record is
// lost, its active entry gone and its claim done.
func ended(c *Cluster, r lostRun) bool {
	ctx, cancel := c.kvCtx(context.Background())
	defer cancel()
	rec, err := c.record(ctx, r.key)
	if err != nil || rec.End != EndLost {
		return false
	}
	if _, err := c.active.Get(ctx, r.key); !errors.Is(err, jetstream.ErrKeyNotFound) {
		return false
	}
	e, err := c.claims.Get(ctx, r.key)
	return err == nil && parseClaim(e.Value()).Done
}

type rawMsg struct {
	seq          uint64
	id, typ, end string
	data         []byte
	isMarker     bool
}

// subjectMsgs reads every message of the run's frames subject, a batch
// as one entry per frame.
func subjectMsgs(t *testing.T, c *Cluster, key string) []rawMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	subject := framesSubject(key)
	last, err := c.frames.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := c.js.OrderedConsumer(ctx, FramesStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		t.Fatal(err)
	}
	var out []rawMsg
	for {
		msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		md, err := msg.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		h := msg.Headers()
		if h.Get(hdrEnd) != "" {
			out = append(out, rawMsg{seq: md.Sequence.Stream, end: h.Get(hdrEnd), isMarker: true})
		} else {
			frames, err := decodeFrames(h, msg.Data())
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range frames {
				out = append(out, rawMsg{seq: md.Sequence.Stream, id: strconv.FormatUint(f.id, 10), typ: string(f.typ), data: f.data})
			}
		}
		if md.Sequence.Stream >= last.Sequence {
			return out
		}
	}
}

// checkClosedOnce checks the run's whole subject: frames with contiguous
// ids from 1, valid AG-UI, each open subagent failed once, exactly one
// RUN_ERROR host_lost as the last frame, then exactly one end marker.
func checkClosedOnce(t *testing.T, c *Cluster, r lostRun) []rawMsg {
	t.Helper()
	msgs := subjectMsgs(t, c, r.key)
	var frames []aguiverify.Frame
	failed := map[string]int{}
	runErrors, markers := 0, 0
	for i, m := range msgs {
		if m.isMarker {
			markers++
			if i != len(msgs)-1 || m.end != strconv.Itoa(len(frames)) {
				t.Fatalf("end marker %d (%+v) after %d frames, want one, last, Aa-End %d", i, m, len(frames), len(frames))
			}
			continue
		}
		if m.id != strconv.Itoa(len(frames)+1) {
			t.Fatalf("message %d has id %s, want %d (ids must be contiguous)", i, m.id, len(frames)+1)
		}
		frames = append(frames, aguiverify.Frame{ID: m.id, Data: m.data})
		if m.typ == string(events.EventTypeRunError) {
			runErrors++
			if !strings.Contains(string(m.data), `"code":"host_lost"`) {
				t.Fatalf("RUN_ERROR without host_lost: %s", m.data)
			}
		}
		var ev struct {
			Name  string         `json:"name"`
			Value map[string]any `json:"value"`
		}
		if json.Unmarshal(m.data, &ev) == nil && ev.Name == string(delegation.DelegationFailed) {
			id, _ := ev.Value["delegationId"].(string)
			failed[id]++
		}
	}
	if markers != 1 || runErrors != 1 || msgs[len(msgs)-2].typ != string(events.EventTypeRunError) {
		t.Fatalf("%d end markers and %d RUN_ERROR (the last frame: %s), want one each", markers, runErrors, msgs[len(msgs)-2].typ)
	}
	if failed["d1"] != 1 || failed["d2"] != 1 || len(failed) != 2 {
		t.Fatalf("subagent.failed per delegation: %v, want one each", failed)
	}
	// Everything the owner had open was closed: 2 subagents, the tool call
	// and the text message, then RUN_ERROR.
	if len(frames) != lostFrames+5 {
		t.Fatalf("%d frames, want %d", len(frames), lostFrames+5)
	}
	if err := aguiverify.Verify(frames); err != nil {
		t.Fatalf("invalid AG-UI stream: %v", err)
	}
	return msgs
}

// A replica that claimed a lost run and died at any point of its takeover
// leaves the run to another replica, which finishes the cleanup exactly
// once: the stream keeps what the dead one appended and gets only what is
// missing (one RUN_ERROR host_lost, contiguous ids, one end marker), each
// remote task is cancelled once (twice only if the dead one died between
// cancelling it and recording that), the record ends lost and the claim
// done. A completed takeover is never redone.
func TestTakeoverFinishedAfterClaimerDied(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	cases := []struct {
		name  string
		step  string
		nth   int
		twice string // the delegation that may be cancelled twice
	}{
		{name: "after the claim", step: "claimed", nth: 1},
		{name: "after the closing frames, before the end marker", step: "frame", nth: 1},
		{name: "after the end marker", step: "stream", nth: 1},
		{name: "after cancelling the first task", step: "orphan", nth: 1, twice: "d1"},
		{name: "after ending the delegations", step: "orphans", nth: 1},
		{name: "after the run record", step: "record", nth: 1},
		{name: "after the claim is done", step: "done", nth: 1},
		{name: "never: the cleanup completed", step: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const lease = time.Second
			ns := natstest.New(t)
			owner := leaseCluster(t, ns, "owner", lease)
			r := startLostRun(t, owner, "run-lost")
			crash(owner)

			var calls orphanCalls
			b := leaseCluster(t, ns, "b", lease)
			b.handlers = Handlers{EndOrphan: calls.handler(b)}
			if tc.step != "" {
				hook, fired := crashAtNth(tc.step, tc.nth)
				b.crashAt = hook
				scanUntil(t, b, func() bool { return closed(fired) })
				crash(b)
			} else {
				scanUntil(t, b, func() bool { return ended(b, r) })
			}

			s := leaseCluster(t, ns, "s", lease)
			s.handlers = Handlers{EndOrphan: calls.handler(s)}
			scanUntil(t, s, func() bool { return ended(s, r) })

			msgs := checkClosedOnce(t, s, r)
			for _, d := range []string{"d1", "d2"} {
				n := calls.get(d)
				if n != 1 && !(d == tc.twice && n == 2) {
					t.Fatalf("%s: %d CancelTask, want 1", d, n)
				}
			}
			waitUntil(t, func() bool {
				recs := s.Audit().ListRun(r.sdkRunID)
				return len(recs) == 2 && recs[0].Status == delegation.StatusCancelled && recs[1].Status == delegation.StatusCancelled
			})

			// Never redone: even an active entry written again (a stale
			// view) only gets removed.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			before, _ := s.record(ctx, r.key)
			cancelled := calls.get("d1") + calls.get("d2")
			if _, err := s.active.Put(ctx, r.key, []byte(r.runID)); err != nil {
				t.Fatal(err)
			}
			other := leaseCluster(t, ns, "other", lease)
			other.handlers = Handlers{EndOrphan: calls.handler(other)}
			scanUntil(t, other, func() bool { return ended(other, r) })
			_ = s.scanOnce()
			after, _ := s.record(ctx, r.key)
			if again := subjectMsgs(t, s, r.key); len(again) != len(msgs) {
				t.Fatalf("the stream grew from %d to %d messages", len(msgs), len(again))
			}
			if n := calls.get("d1") + calls.get("d2"); n != cancelled {
				t.Fatalf("delegations ended again: %d CancelTask, then %d", cancelled, n)
			}
			if !after.EndedAt.Equal(before.EndedAt) {
				t.Fatalf("the record was rewritten: %v then %v", before.EndedAt, after.EndedAt)
			}
		})
	}
}

// The scanners of running replicas finish the takeover of one that died
// midway (after the closing frames), as in production: Start, no test
// driving the scans.
func TestScannerFinishesADeadClaimersTakeover(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	const lease = time.Second
	ns := natstest.New(t)
	owner := leaseCluster(t, ns, "owner", lease)
	r := startLostRun(t, owner, "run-bg")
	crash(owner)

	var calls orphanCalls
	s := leaseCluster(t, ns, "s", lease) // connected as long as b: a running survivor
	b := leaseCluster(t, ns, "b", lease)
	hook, fired := crashAtNth("frame", 1)
	b.crashAt = hook
	if err := b.Start(Handlers{EndOrphan: calls.handler(b)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fired:
	case <-time.After(60 * time.Second):
		t.Fatal("b never claimed the lost run")
	}
	crash(b)
	crashed := time.Now()

	if err := s.Start(Handlers{EndOrphan: calls.handler(s)}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return ended(s, r) })
	t.Logf("the takeover was complete %v after its first holder died (lease %v)", time.Since(crashed).Round(10*time.Millisecond), lease)
	checkClosedOnce(t, s, r)
	if calls.get("d1") != 1 || calls.get("d2") != 1 {
		t.Fatalf("CancelTask: d1 %d, d2 %d, want 1 each", calls.get("d1"), calls.get("d2"))
	}
}

// blockingOrphans is an EndOrphan that blocks until released (or its
// context ends); entered is closed at its first call.
type blockingOrphans struct {
	entered, release chan struct{}
	once             sync.Once
	next             func(context.Context, audit.Record) error
}

func newBlockingOrphans(next func(context.Context, audit.Record) error) *blockingOrphans {
	return &blockingOrphans{entered: make(chan struct{}), release: make(chan struct{}), next: next}
}

func (o *blockingOrphans) handler(ctx context.Context, rec audit.Record) error {
	o.once.Do(func() { close(o.entered) })
	select {
	case <-o.release:
		return o.next(ctx, rec)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// claimTakeover runs b's scans in a goroutine until its takeover began
// (entered); the returned channel is closed when that scan returned.
func claimTakeover(t *testing.T, b *Cluster, entered <-chan struct{}) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !closed(entered) && b.ctx.Err() == nil {
			_ = b.scanOnce()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	select {
	case <-entered:
	case <-time.After(60 * time.Second):
		t.Fatal("b never claimed the lost run")
	}
	return done
}

func claimEntry(t *testing.T, c *Cluster, key string) jetstream.KeyValueEntry {
	t.Helper()
	ctx, cancel := c.kvCtx(context.Background())
	defer cancel()
	e, err := c.claims.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A replica ending a lost run keeps its claim while it works, however
// long (here a remote task's cancel that hangs): it refreshes the claim,
// another replica scanning meanwhile leaves it alone, and the run is ended
// once.
func TestLiveClaimIsKept(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	const lease = 3 * time.Second
	ns := natstest.New(t)
	owner := leaseCluster(t, ns, "owner", lease)
	r := startLostRun(t, owner, "run-live")
	crash(owner)

	var calls orphanCalls
	b := leaseCluster(t, ns, "b", lease)
	slow := newBlockingOrphans(calls.handler(b))
	b.handlers = Handlers{EndOrphan: slow.handler}
	done := claimTakeover(t, b, slow.entered)

	s := leaseCluster(t, ns, "s", lease)
	s.handlers = Handlers{EndOrphan: calls.handler(s)}
	first := claimEntry(t, s, r.key).Revision()
	// s scans while b refreshes its claim four times (more than a lease).
	scanUntil(t, s, func() bool { return claimEntry(t, s, r.key).Revision() >= first+4 })
	if v := parseClaim(claimEntry(t, s, r.key).Value()); v.Replica != "b" || v.Done {
		t.Fatalf("the claim of a live replica was taken: %+v", v)
	}
	if calls.get("d1")+calls.get("d2") != 0 {
		t.Fatal("s ended delegations of a run b is ending")
	}
	close(slow.release)
	<-done
	if !ended(s, r) {
		t.Fatal("b did not finish")
	}
	checkClosedOnce(t, s, r)
	if calls.get("d1") != 1 || calls.get("d2") != 1 {
		t.Fatalf("CancelTask: d1 %d, d2 %d, want 1 each", calls.get("d1"), calls.get("d2"))
	}
}

// A replica whose claim was taken over (it stalled longer than a lease)
// stops its takeover at its next refresh: it ends no more delegations,
// does not mark the claim done; the new holder finishes the run.
func TestTakenClaimStopsItsFormerHolder(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	const lease = time.Second
	ns := natstest.New(t)
	owner := leaseCluster(t, ns, "owner", lease)
	r := startLostRun(t, owner, "run-taken")
	crash(owner)

	var calls orphanCalls
	b := leaseCluster(t, ns, "b", lease)
	stuck := newBlockingOrphans(calls.handler(b)) // never released: ends with its context
	b.handlers = Handlers{EndOrphan: stuck.handler}
	done := claimTakeover(t, b, stuck.entered)

	// Another replica takes the claim over (as a scanner that saw it
	// unrefreshed for a lease would).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitUntil(t, func() bool {
		_, err := b.claims.Update(ctx, r.key, claimValue{Replica: "x"}.encode(), claimEntry(t, b, r.key).Revision())
		return err == nil
	})
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("b kept working on a claim it lost")
	}
	if v := parseClaim(claimEntry(t, b, r.key).Value()); v.Replica != "x" || v.Done {
		t.Fatalf("the claim after b stopped: %+v", v)
	}
	if rec, err := b.record(ctx, r.key); err != nil || rec.End != "" {
		t.Fatalf("b wrote the record after losing the claim: %+v %v", rec, err)
	}
	if _, err := b.active.Get(ctx, r.key); err != nil {
		t.Fatalf("b removed the active entry after losing the claim: %v", err)
	}
	if calls.get("d1")+calls.get("d2") != 0 {
		t.Fatal("b ended a delegation after losing the claim")
	}

	s := leaseCluster(t, ns, "s", lease)
	s.handlers = Handlers{EndOrphan: calls.handler(s)}
	scanUntil(t, s, func() bool { return ended(s, r) })
	checkClosedOnce(t, s, r)
	if calls.get("d1") != 1 || calls.get("d2") != 1 {
		t.Fatalf("CancelTask: d1 %d, d2 %d, want 1 each", calls.get("d1"), calls.get("d2"))
	}
}

// A replica that died after its run's terminal event, before its end
// marker: the survivor appends only the end marker (no frame after
// RUN_FINISHED).
func TestLostRunThatHadFinished(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	const lease = time.Second
	ns := natstest.New(t)
	owner := leaseCluster(t, ns, "owner", lease)
	startLeases(owner)
	rj := owner.Journal().Begin(subagentstream.JournalRun{RunID: "run-f", ThreadID: "t-f", SDKRunID: "sdk-f"})
	for i, ev := range []events.Event{
		events.NewRunStartedEvent("t-f", "run-f"),
		events.NewTextMessageStartEvent("m1", events.WithRole("assistant")),
		events.NewTextMessageContentEvent("m1", "Done."),
		events.NewTextMessageEndEvent("m1"),
		events.NewRunFinishedEvent("t-f", "run-f"),
	} {
		data, err := ev.ToJSON()
		if err != nil {
			t.Fatal(err)
		}
		rj.Append(&subagentstream.Frame{ID: uint64(i + 1), Type: ev.Type(), Data: data})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := owner.flushJournals(ctx); err != nil {
		t.Fatal(err)
	}
	crash(owner) // before rj.End: no end marker, the run stays active

	s := leaseCluster(t, ns, "s", lease)
	r := lostRun{runID: "run-f", sdkRunID: "sdk-f", key: token("run-f")}
	scanUntil(t, s, func() bool { return ended(s, r) })
	msgs := subjectMsgs(t, s, r.key)
	if len(msgs) != 6 || !msgs[5].isMarker || msgs[5].end != "5" || msgs[4].typ != string(events.EventTypeRunFinished) {
		t.Fatalf("the stream after the takeover: %+v", msgs)
	}
	var frames []aguiverify.Frame
	for _, m := range msgs[:5] {
		frames = append(frames, aguiverify.Frame{ID: m.id, Data: m.data})
	}
	if err := aguiverify.Verify(frames); err != nil {
		t.Fatal(err)
	}
}
