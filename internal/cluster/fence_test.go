package cluster

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor/internal/testkit/natstest"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
)

// testRun is a run journaled by one replica, driven by the test as the
// hub would: frames appended in order, the run's Cancel counted.
type testRun struct {
	t         *testing.T
	c         *Cluster
	rj        *runJournal
	runID     string
	next      uint64
	cancelled atomic.Int32
}

func beginRun(t *testing.T, c *Cluster, runID string, reserve bool) *testRun {
	t.Helper()
	r := &testRun{t: t, c: c, runID: runID}
	if reserve {
		if _, err := c.Reserve(context.Background(), "alice", runID, "t-"+runID); err != nil {
			t.Fatal(err)
		}
	}
	rj := c.Journal().Begin(subagentstream.JournalRun{RunID: runID, ThreadID: "t-" + runID, SDKRunID: "sdk-" + runID, Owner: "alice",
		Cancel: func(context.Context) error { r.cancelled.Add(1); return nil }})
	r.rj = rj.(*runJournal)
	return r
}

func (r *testRun) append(ev events.Event) {
	r.t.Helper()
	ev.SetTimestamp(1700000000000)
	data, err := ev.ToJSON()
	if err != nil {
		r.t.Fatal(err)
	}
	r.next++
	r.rj.Append(&subagentstream.Frame{ID: r.next, Type: ev.Type(), Data: data})
}

// served reads everything the run's served stream holds until it ends.
func served(t *testing.T, rj *runJournal) []*subagentstream.Frame {
	t.Helper()
	sub, err := rj.Served().Subscribe(0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []*subagentstream.Frame
	for {
		f, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("the served stream did not end; it holds %d frames", len(out))
			}
			return out
		}
		if f.ID > 0 {
			out = append(out, f)
		}
	}
}

// journalFrames reads the run's frames from the journal, as another
// replica's mirror does, until its end.
func journalFrames(t *testing.T, c *Cluster, key, runID string) []*subagentstream.Frame {
	t.Helper()
	m := subagentstream.NewMirror("t-"+runID, runID, subagentstream.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.readFrom(ctx, framesSubject(key), 1, m, true, nil); err != nil && !m.Ended() {
		t.Fatal(err)
	}
	sub, err := m.Stream().Subscribe(0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var out []*subagentstream.Frame
	for {
		f, err := sub.Next(ctx)
		if err != nil {
			return out
		}
		out = append(out, f)
	}
}

func sameFrames(t *testing.T, what string, got, want []*subagentstream.Frame) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d frames, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i].ID != want[i].ID || string(got[i].Data) != string(want[i].Data) {
			t.Fatalf("%s: frame %d is %d %s, want %d %s", what, i, got[i].ID, got[i].Data, want[i].ID, want[i].Data)
		}
	}
}

func terminals(fs []*subagentstream.Frame) int {
	n := 0
	for _, f := range fs {
		if isTerminal(f.Type) {
			n++
		}
	}
	return n
}

// A replica whose run another replica ended (here: its journal got
// another writer's closing frames after its committed ones) has its next
// append refused: it stops the run (Cancel once), writes nothing more, and
// serves its own client the journal's history — the same frames under the
// same ids as every replica, and one terminal.
func TestFencedAppendServesTheJournal(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ns := natstest.New(t)
	a := leaseCluster(t, ns, "a", 5*time.Second)
	startLeases(a)
	b := leaseCluster(t, ns, "b", 5*time.Second)
	r := beginRun(t, a, "run-fence", true)
	r.append(events.NewRunStartedEvent("t-run-fence", "run-fence"))
	r.append(events.NewTextMessageStartEvent("m1", events.WithRole("assistant")))
	r.append(events.NewTextMessageContentEvent("m1", "committed"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.flushJournals(ctx); err != nil {
		t.Fatal(err)
	}
	// b ends the run, as a survivor would (its replica looked dead).
	rec, err := b.record(ctx, r.rj.key)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.closeStream(ctx, r.rj.key, rec); err != nil {
		t.Fatal(err)
	}
	// a goes on: its frames must not land.
	r.append(events.NewTextMessageContentEvent("m1", " and more from a"))
	r.append(events.NewTextMessageEndEvent("m1"))
	r.append(events.NewRunFinishedEvent("t-run-fence", "run-fence"))
	r.rj.End(true)

	own := served(t, r.rj)
	all := journalFrames(t, b, r.rj.key, "run-fence")
	sameFrames(t, "a's own client vs the journal", own, all)
	if terminals(all) != 1 || all[len(all)-1].Type != events.EventTypeRunError {
		t.Fatalf("the journal must end with one RUN_ERROR host_lost: %d terminals, last %s", terminals(all), all[len(all)-1].Type)
	}
	waitUntil(t, func() bool { return r.cancelled.Load() == 1 })
	if err := a.flushJournals(ctx); err != nil {
		t.Fatal(err)
	}
	if n := r.cancelled.Load(); n != 1 {
		t.Fatalf("the run was cancelled %d times, want once", n)
	}
	if again := journalFrames(t, b, r.rj.key, "run-fence"); len(again) != len(all) {
		t.Fatalf("a wrote after it was fenced: %d frames, then %d", len(all), len(again))
	}
}

// The same when another replica ended the run before any of its frames
// was committed (its journal held nothing: a lone RUN_ERROR host_lost):
// the owner's first append is refused, and its own client gets that
// RUN_ERROR as the run's whole history — never nothing.
func TestFencedFirstAppendServesTheJournal(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ns := natstest.New(t)
	a := leaseCluster(t, ns, "a", 5*time.Second)
	startLeases(a)
	b := leaseCluster(t, ns, "b", 5*time.Second)
	r := beginRun(t, a, "run-first", true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, err := b.record(ctx, r.rj.key)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.closeStream(ctx, r.rj.key, rec); err != nil {
		t.Fatal(err)
	}
	r.append(events.NewRunStartedEvent("t-run-first", "run-first"))
	r.append(events.NewRunFinishedEvent("t-run-first", "run-first"))
	r.rj.End(true)

	own := served(t, r.rj)
	all := journalFrames(t, b, r.rj.key, "run-first")
	sameFrames(t, "a's own client vs the journal", own, all)
	if len(all) != 1 || all[0].Type != events.EventTypeRunError || !strings.Contains(string(all[0].Data), `"code":"host_lost"`) {
		t.Fatalf("the journal must hold one RUN_ERROR host_lost: %d frames", len(all))
	}
	waitUntil(t, func() bool { return r.cancelled.Load() == 1 })
}

// A replica that cannot renew its lease stops publishing before the lease
// could expire by its own clock: frames appended after that wait, and when
// another replica has ended the run meanwhile, they never reach the
// journal; the replica's client gets the journal's end.
func TestNoPublishingOnAnExpiredLease(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	const lease = time.Second
	ns := natstest.New(t)
	a := leaseCluster(t, ns, "a", lease) // no refresher: its leases are never renewed
	b := leaseCluster(t, ns, "b", lease)
	r := beginRun(t, a, "run-stale", true)
	r.append(events.NewRunStartedEvent("t-run-stale", "run-stale"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.flushJournals(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	waitUntil(t, func() bool {
		r.rj.mu.Lock()
		defer r.rj.mu.Unlock()
		return time.Now().After(r.rj.validUntil)
	})
	r.append(events.NewTextMessageStartEvent("m1", events.WithRole("assistant")))
	r.append(events.NewTextMessageContentEvent("m1", "too late"))
	// b takes the run over once the lease expired on the server.
	var calls orphanCalls
	b.handlers = Handlers{EndOrphan: calls.handler(b)}
	scanUntil(t, b, func() bool {
		_, err := b.record(ctx, r.rj.key)
		return err == nil && ended(b, lostRun{runID: "run-stale", key: r.rj.key})
	})
	all := journalFrames(t, b, r.rj.key, "run-stale")
	for _, f := range all {
		if string(f.Type) == string(events.EventTypeTextMessageContent) {
			t.Fatalf("a published after its lease could have expired: %s", f.Data)
		}
	}
	// a learns it (its refresher finds the lease gone and the claim).
	startLeases(a)
	own := served(t, r.rj)
	sameFrames(t, "a's own client vs the journal", own, all)
	waitUntil(t, func() bool { return r.cancelled.Load() == 1 })
}

// A replica that stalls midway through making a run known (its
// reservation's writes, or a publisher's for a run without one; starved or
// paused) while its lease expires: another replica scanning for lost runs
// after any of those writes either leaves the run alone or ends it for
// good, so that the owner — which learns it was taken over from its lease
// and the claim — serves its own client the journal's end. Never a run
// claimed whose journal nobody ends, its client left waiting.
func TestStalledRunStartEndsOnce(t *testing.T) {
	for _, reserve := range []bool{true, false} {
		t.Run(map[bool]string{true: "reserved", false: "unreserved"}[reserve], func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			const lease = time.Second
			ns := natstest.New(t)
			a := leaseCluster(t, ns, "a", lease) // no refresher while it starts the run
			b := leaseCluster(t, ns, "b", lease)
			runID := "run-stall"
			key := runKey("alice", runID)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var mu sync.Mutex
			var steps []string
			a.wrote = func(step string) {
				// a stalls after this write until its lease is gone; b
				// scans meanwhile. (On the publisher's goroutine for a run
				// without a reservation: no t.Fatal here.)
				for {
					_, err := b.leases.Get(ctx, key)
					if errors.Is(err, jetstream.ErrKeyNotFound) {
						break
					}
					if ctx.Err() != nil {
						t.Errorf("after %s: the lease never went", step)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
				if err := b.scanOnce(); err != nil {
					t.Errorf("after %s: %v", step, err)
				}
				mu.Lock()
				steps = append(steps, step)
				mu.Unlock()
			}
			r := beginRun(t, a, runID, reserve)
			r.append(events.NewRunStartedEvent("t-"+runID, runID))
			r.append(events.NewTextMessageStartEvent("m1", events.WithRole("assistant")))
			waitUntil(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(steps) == 3
			})
			startLeases(a)

			own := served(t, r.rj)
			all := journalFrames(t, b, key, runID)
			sameFrames(t, "a's own client vs the journal", own, all)
			if terminals(all) != 1 || all[len(all)-1].Type != events.EventTypeRunError || !strings.Contains(string(all[len(all)-1].Data), `"code":"host_lost"`) {
				t.Fatalf("the journal must end with one RUN_ERROR host_lost: %d terminals, last %s", terminals(all), all[len(all)-1].Data)
			}
			waitUntil(t, func() bool { return r.cancelled.Load() == 1 })
			waitUntil(t, func() bool { return ended(b, lostRun{runID: runID, key: key}) })
		})
	}
}

// Two replicas reserving the same runId at once: exactly one gets it; the
// runId stays taken after the run (409 for a reuse), and a reservation no
// run took is given back.
func TestReserveOnceAcrossReplicas(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ns := natstest.New(t)
	cs := []*Cluster{newCluster(t, ns, "a"), newCluster(t, ns, "b"), newCluster(t, ns, "c")}
	for _, c := range cs {
		startLeases(c)
	}
	for round := range 10 {
		runID := "run-" + string(rune('a'+round))
		var wg sync.WaitGroup
		var won, lost atomic.Int32
		res := make([]*Reservation, len(cs))
		for i, c := range cs {
			wg.Go(func() {
				r, err := c.Reserve(context.Background(), "alice", runID, "t")
				switch {
				case err == nil:
					won.Add(1)
					res[i] = r
				case errors.Is(err, ErrRunIDInUse):
					lost.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if won.Load() != 1 || lost.Load() != 2 {
			t.Fatalf("%s: %d reservations won, %d refused; want 1 and 2", runID, won.Load(), lost.Load())
		}
		// Another principal's runId is its own.
		other, err := cs[0].Reserve(context.Background(), "bob", runID, "t")
		if err != nil {
			t.Fatalf("bob's %s: %v", runID, err)
		}
		other.Release()
		for _, r := range res {
			r.Release() // no run began: given back
		}
		again, err := cs[1].Reserve(context.Background(), "alice", runID, "t")
		if err != nil {
			t.Fatalf("%s after its release: %v", runID, err)
		}
		again.Release()
	}
	// A runId whose run began stays taken.
	r := beginRun(t, cs[0], "run-used", true)
	r.append(events.NewRunStartedEvent("t-run-used", "run-used"))
	if _, err := cs[2].Reserve(context.Background(), "alice", "run-used", "t"); !errors.Is(err, ErrRunIDInUse) {
		t.Fatalf("a runId in use: %v", err)
	}
	// ... and after it ended (its record is kept).
	r.append(events.NewRunFinishedEvent("t-run-used", "run-used"))
	r.rj.End(true)
	waitUntil(t, func() bool {
		_, err := cs[0].active.Get(context.Background(), r.rj.key)
		return err != nil
	})
	if _, err := cs[2].Reserve(context.Background(), "alice", "run-used", "t"); !errors.Is(err, ErrRunIDInUse) {
		t.Fatalf("the runId of an ended run: %v", err)
	}
}

// Exactly one replica cancels each remote task; the same replica may ask
// again (its retries), and is then told that it asked before, so that it
// reads the task before it sends the cancellation again.
func TestClaimCancelOnce(t *testing.T) {
	ns := natstest.New(t)
	a, b := newCluster(t, ns, "a"), newCluster(t, ns, "b")
	ctx := context.Background()
	for i, tc := range []struct {
		c    *Cluster
		want delegator.CancelTurn
	}{{a, delegator.CancelMine}, {b, delegator.CancelOthers}, {a, delegator.CancelMineAgain}, {b, delegator.CancelOthers}} {
		got, err := tc.c.ClaimCancel(ctx, "sdk-1", "del-1")
		if err != nil || got != tc.want {
			t.Fatalf("ask %d (%s): %v %v, want %v", i, tc.c.Replica(), got, err, tc.want)
		}
	}
	if got, err := b.ClaimCancel(ctx, "sdk-1", "del-2"); err != nil || got != delegator.CancelMine {
		t.Fatalf("another delegation: %v %v", got, err)
	}
}

// The README's NATS configuration refuses a client without credentials
// (and a client with another key), and lets the replicas' user do what a
// replica does (every test of this package runs with it).
func TestNATSRefusesUnauthenticated(t *testing.T) {
	ns := natstest.New(t)
	if nc, err := nats.Connect(ns.URL(), nats.Timeout(5*time.Second)); err == nil {
		nc.Close()
		t.Fatal("a client without credentials was let in")
	}
	_, err := New(context.Background(), Config{URL: ns.URL(), Replica: "x", ConnectTimeout: 5 * time.Second})
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("a replica without credentials: %v", err)
	}
	c := newCluster(t, ns, "ok")
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
}

// A run whose replica died before any of its frames was committed (no
// client saw anything) gets a lone RUN_ERROR host_lost from the replica
// that ends it: no invented RUN_STARTED.
func TestEmptyJournalGetsALoneRunError(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	const lease = time.Second
	ns := natstest.New(t)
	owner := leaseCluster(t, ns, "owner", lease)
	r := beginRun(t, owner, "run-empty", true)
	crash(owner)
	s := leaseCluster(t, ns, "s", lease)
	scanUntil(t, s, func() bool { return ended(s, lostRun{runID: "run-empty", key: r.rj.key}) })
	all := journalFrames(t, s, r.rj.key, "run-empty")
	if len(all) != 1 || all[0].ID != 1 || all[0].Type != events.EventTypeRunError || !strings.Contains(string(all[0].Data), `"code":"host_lost"`) {
		for _, f := range all {
			t.Logf("%d %s", f.ID, f.Data)
		}
		t.Fatalf("the journal of a run without frames: %d frames, want one RUN_ERROR host_lost", len(all))
	}
}
