package a2a_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	client "github.com/seed0634/agentadaptor/pkg/clients/a2a"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

func TestStreamingHappyPath(t *testing.T) {
	cases := []struct {
		name     string
		bindings []a2a.TransportProtocol
		version  string
		want     client.TransportProtocol
	}{
		{"jsonrpc", []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC}, "", client.TransportJSONRPC},
		{"rest", []a2a.TransportProtocol{a2a.TransportProtocolHTTPJSON}, "", client.TransportHTTPJSON},
		{"card prefers rest", []a2a.TransportProtocol{a2a.TransportProtocolHTTPJSON, a2a.TransportProtocolJSONRPC}, "", client.TransportHTTPJSON},
		{"v0.3 jsonrpc", []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC}, "0.3", client.TransportJSONRPC},
		{"v0.3 rest", []a2a.TransportProtocol{a2a.TransportProtocolHTTPJSON}, "0.3", client.TransportHTTPJSON},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			leakCheck(t)
			f := fakea2a.New(t, fakea2a.Options{
				Streaming: true, Bindings: tc.bindings, ProtocolVersion: tc.version,
				Behavior: fakea2a.Script(fakea2a.Steps(
					fakea2a.Working("thinking"),
					fakea2a.TextChunks("Hel", "lo"),
					fakea2a.Artifact(fakea2a.ArtifactSpec{Name: "report.md", Text: "# Report", LastChunk: true}),
					fakea2a.Completed("done"),
				)...),
			})
			c := dial(t, f, client.Options{})
			if c.Transport() != tc.want {
				t.Fatalf("transport = %s, want %s", c.Transport(), tc.want)
			}
			if tc.version != "" && !c.Card().Legacy {
				t.Fatalf("card not detected as legacy: %+v", c.Card())
			}
			s, err := c.SendStreaming(testCtx(t), client.SendRequest{Text: "hi"})
			if err != nil {
				t.Fatalf("SendStreaming: %v", err)
			}
			evs := collect(t, s)
			if err := s.Err(); err != nil {
				t.Fatalf("stream err: %v", err)
			}
			var text strings.Builder
			var sawWorking, sawReport bool
			for _, ev := range evs {
				switch e := ev.(type) {
				case *a2a.TaskStatusUpdateEvent:
					if e.Status.State == a2a.TaskStateWorking {
						sawWorking = true
					}
				case *a2a.TaskArtifactUpdateEvent:
					if e.Artifact.Name == fakea2a.AssistantOutput {
						text.WriteString(client.TextOf(e.Artifact.Parts))
					}
					if e.Artifact.Name == "report.md" {
						sawReport = true
					}
				}
			}
			if !sawWorking || !sawReport || text.String() != "Hello" {
				t.Fatalf("working=%v report=%v text=%q events=%d", sawWorking, sawReport, text.String(), len(evs))
			}
			if got := terminalCount(evs); got != 1 || !s.Terminal() || s.State() != a2a.TaskStateCompleted {
				t.Fatalf("terminals=%d state=%s", got, s.State())
			}
			if s.TaskID() == "" || s.ContextID() == "" {
				t.Fatalf("ids not tracked")
			}
		})
	}
}

func TestNoStreamingCardFallsBackToSend(t *testing.T) {
	leakCheck(t)
	f := fakea2a.New(t, fakea2a.Options{Streaming: false,
		Behavior: fakea2a.Script(fakea2a.Working("w"), fakea2a.Completed("done"))})
	c := dial(t, f, client.Options{})
	if c.Card().Streaming() {
		t.Fatal("card should not advertise streaming")
	}
	s, err := c.SendStreaming(testCtx(t), client.SendRequest{Text: "hi"})
	if err != nil {
		t.Fatalf("SendStreaming: %v", err)
	}
	evs := collect(t, s)
	if s.Err() != nil || len(evs) != 1 || s.State() != a2a.TaskStateCompleted {
		t.Fatalf("events=%d state=%s err=%v", len(evs), s.State(), s.Err())
	}
	if n := len(f.RequestsFor("SendStreamingMessage")); n != 0 {
		t.Fatalf("streaming call reached a non-streaming agent %d times", n)
	}
	if n := len(f.RequestsFor("SendMessage")); n != 1 {
		t.Fatalf("SendMessage calls = %d, want 1", n)
	}
}

func TestSendReturnImmediatelyThenPoll(t *testing.T) {
	leakCheck(t)
	f := fakea2a.New(t, fakea2a.Options{Streaming: true,
		Behavior: fakea2a.Script(fakea2a.Working("w"), fakea2a.AwaitRelease(), fakea2a.Completed("done"))})
	c := dial(t, f, client.Options{})
	ctx := testCtx(t)
	res, err := c.Send(ctx, client.SendRequest{Text: "go", ReturnImmediately: true})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if res.Task == nil || client.IsTerminal(res.Task.Status.State) {
		t.Fatalf("want a non-terminal task, got %+v", res)
	}
	if r := f.RequestsFor("SendMessage"); len(r) != 1 || !r[0].ReturnImmediately {
		t.Fatalf("ReturnImmediately did not reach the wire: %+v", r)
	}
	// The task is parked on AwaitRelease, so it has an active execution:
	// subscribe now and let its terminal event say when a poll must see the
	// final state, instead of polling on a timer.
	sub, err := c.Subscribe(ctx, client.SubscribeRequest{TaskID: res.Task.ID})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	f.Release(res.Task.ID)
	collect(t, sub)
	if sub.Err() != nil || !sub.Terminal() {
		t.Fatalf("subscription: state %s, err %v", sub.State(), sub.Err())
	}
	// a2a-go stores an event before it broadcasts it, so the poll that
	// follows the terminal event sees the terminal state.
	last, err := c.GetTask(ctx, client.GetTaskRequest{TaskID: res.Task.ID})
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	if last.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("final state %s", last.Status.State)
	}
}

func TestGetTaskTenantAndHistoryReachServer(t *testing.T) {
	for _, b := range []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON} {
		t.Run(string(b), func(t *testing.T) {
			leakCheck(t)
			f := fakea2a.New(t, fakea2a.Options{Bindings: []a2a.TransportProtocol{b},
				Behavior: fakea2a.Script(fakea2a.Working("a"), fakea2a.Completed("done"))})
			c := dial(t, f, client.Options{})
			ctx := testCtx(t)
			res, err := c.Send(ctx, client.SendRequest{Text: "hi"})
			if err != nil || res.Task == nil {
				t.Fatalf("Send: %v %+v", err, res)
			}
			task, err := c.GetTask(ctx, client.GetTaskRequest{TaskID: res.Task.ID, Tenant: "acme", HistoryLength: new(1)})
			if err != nil {
				t.Fatalf("GetTask: %v", err)
			}
			if len(task.History) > 1 {
				t.Fatalf("history length %d > 1", len(task.History))
			}
			r := f.RequestsFor("GetTask")
			if len(r) != 1 || r[0].Tenant != "acme" || r[0].HistoryLength == nil || *r[0].HistoryLength != 1 || r[0].TaskID != res.Task.ID {
				t.Fatalf("GetTask record = %+v", r)
			}
			_, err = c.GetTask(ctx, client.GetTaskRequest{TaskID: "no-such-task"})
			if !errors.Is(err, clienterr.ErrNotFound) {
				t.Fatalf("unknown task: want ErrNotFound, got %v", err)
			}
		})
	}
}

func TestCancelTask(t *testing.T) {
	t.Run("tenant and metadata reach the server", func(t *testing.T) {
		leakCheck(t)
		f := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Script(fakea2a.Working("w"), fakea2a.Hang())})
		c := dial(t, f, client.Options{})
		ctx := testCtx(t)
		s, err := c.SendStreaming(ctx, client.SendRequest{Text: "go"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		meta := map[string]any{"reason": "parent_cancelled", "delegation_id": "d-1"}
		task, err := c.CancelTask(ctx, client.CancelTaskRequest{TaskID: s.TaskID(), Tenant: "acme", Metadata: meta})
		if err != nil {
			t.Fatalf("CancelTask: %v", err)
		}
		if task.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("state %s", task.Status.State)
		}
		r := f.RequestsFor("CancelTask")
		if len(r) != 1 || r[0].Tenant != "acme" || r[0].Metadata["reason"] != "parent_cancelled" || r[0].TaskID != s.TaskID() {
			t.Fatalf("CancelTask record = %+v", r)
		}
		evs := collect(t, s)
		if s.State() != a2a.TaskStateCanceled || terminalCount(evs) != 1 || s.Err() != nil {
			t.Fatalf("stream after cancel: state=%s terminals=%d err=%v", s.State(), terminalCount(evs), s.Err())
		}
	})
	t.Run("refused is Rejected", func(t *testing.T) {
		leakCheck(t)
		f := fakea2a.New(t, fakea2a.Options{Streaming: true, Cancel: fakea2a.CancelRefuse,
			Behavior: fakea2a.Script(fakea2a.Working("w"), fakea2a.Hang())})
		c := dial(t, f, client.Options{})
		ctx := testCtx(t)
		s, err := c.SendStreaming(ctx, client.SendRequest{Text: "go"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		_, err = c.CancelTask(ctx, client.CancelTaskRequest{TaskID: s.TaskID()})
		if !errors.Is(err, clienterr.ErrRejected) {
			t.Fatalf("want ErrRejected, got %v", err)
		}
	})
	t.Run("hanging cancel times out", func(t *testing.T) {
		leakCheck(t)
		f := fakea2a.New(t, fakea2a.Options{Streaming: true, Cancel: fakea2a.CancelHang,
			Behavior: fakea2a.Script(fakea2a.Working("w"), fakea2a.Hang())})
		c := dial(t, f, client.Options{RequestTimeout: 200 * time.Millisecond})
		ctx := testCtx(t)
		s, err := c.SendStreaming(ctx, client.SendRequest{Text: "go"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		_, err = c.CancelTask(ctx, client.CancelTaskRequest{TaskID: s.TaskID()})
		if !errors.Is(err, clienterr.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("want ErrTimeout, got %v", err)
		}
	})
}

func TestStreamDropThenRecover(t *testing.T) {
	for _, tc := range []struct {
		name string
		drop fakea2a.Step
	}{{"abrupt", fakea2a.DropStream()}, {"clean close", fakea2a.CloseStream()}} {
		t.Run(tc.name, func(t *testing.T) {
			leakCheck(t)
			f := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Script(
				fakea2a.Working("before"), tc.drop, fakea2a.AwaitSubscribe(),
				fakea2a.Working("after"), fakea2a.Completed("done"))})
			c := dial(t, f, client.Options{})
			ctx := testCtx(t)
			s, err := c.SendStreaming(ctx, client.SendRequest{Text: "go"})
			if err != nil {
				t.Fatal(err)
			}
			evs := collect(t, s)
			if !errors.Is(s.Err(), clienterr.ErrInterrupted) || len(evs) == 0 {
				t.Fatalf("want ErrInterrupted after %d events, got %v", len(evs), s.Err())
			}
			var seen []client.Event
			rep, err := client.RecoverTask(ctx, c, s.TaskID(), client.RecoverOptions{
				InitialBackoff: 10 * time.Millisecond, OnEvent: func(ev client.Event) { seen = append(seen, ev) }})
			if err != nil {
				t.Fatalf("RecoverTask: %v (%+v)", err, rep)
			}
			if rep.Outcome != client.RecoveryResubscribed || rep.State != a2a.TaskStateCompleted || rep.Task == nil || rep.Resubscribes != 1 {
				t.Fatalf("report = %+v", rep)
			}
			if terminalCount(seen) != 1 {
				t.Fatalf("terminals seen during recovery = %d", terminalCount(seen))
			}
		})
	}
}

func TestRecoverFinishedTaskPolls(t *testing.T) {
	leakCheck(t)
	// The task works, then its execution dies: the script ends without a
	// terminal step, which fakea2a turns into an executor error and a2a-go
	// into a failed task.
	f := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Script(fakea2a.Working("w"), fakea2a.AwaitRelease())})
	c := dial(t, f, client.Options{})
	ctx := testCtx(t)
	s, err := c.SendStreaming(ctx, client.SendRequest{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	for s.Next() {
		if s.State() == a2a.TaskStateWorking {
			f.Release(s.TaskID())
		}
	}
	// The failed task ending the stream is the event this test waits for.
	// a2a-go broadcasts a terminal event from the agent as soon as it is
	// stored, while the execution is still registered (a Subscribe then
	// still attaches to it); but the failed task of an execution that ended
	// in an error is the execution's result, which a2a-go publishes only
	// after unregistering the execution. So once the stream has delivered
	// it, the task has no active execution and recovery must poll.
	if s.Err() != nil || s.State() != a2a.TaskStateFailed {
		t.Fatalf("stream: want the failed task, got state %s, err %v", s.State(), s.Err())
	}
	rep, err := client.RecoverTask(ctx, c, s.TaskID(), client.RecoverOptions{Tenant: "acme", HistoryLength: new(0)})
	if err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	if rep.Outcome != client.RecoveryPolled || rep.State != a2a.TaskStateFailed || rep.Polls != 1 || rep.Resubscribes != 1 {
		t.Fatalf("report = %+v", rep)
	}
	if g := f.RequestsFor("GetTask"); len(g) != 1 || g[0].Tenant != "acme" || g[0].HistoryLength == nil {
		t.Fatalf("poll did not carry tenant/history: %+v", g)
	}

	// Unknown task: subscribe and get both say not found.
	rep, err = client.RecoverTask(ctx, c, "missing", client.RecoverOptions{InitialBackoff: time.Millisecond})
	if !errors.Is(err, clienterr.ErrNotFound) || rep.Outcome != client.RecoveryFailed {
		t.Fatalf("missing task: %v %+v", err, rep)
	}
}

func TestDuplicatesAndEventsAfterTerminal(t *testing.T) {
	const tid, cid = "task-1", "ctx-1"
	working := fakea2a.RawStatus(tid, cid, a2a.TaskStateWorking, "w")
	raw := []string{
		fakea2a.RawTask(tid, cid, a2a.TaskStateSubmitted),
		working,
		working,
		fakea2a.RawArtifact(tid, cid, "a", "x", false, true),
		fakea2a.RawArtifact(tid, cid, "a", "x", false, true),
		fakea2a.RawStatus(tid, cid, a2a.TaskStateCompleted, "done"),
		fakea2a.RawStatus(tid, cid, a2a.TaskStateWorking, "late"),
		fakea2a.RawStatus(tid, cid, a2a.TaskStateFailed, "late terminal"),
	}
	t.Run("default: exactly one terminal", func(t *testing.T) {
		leakCheck(t)
		f := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Behavior{RawStream: raw}})
		c := dial(t, f, client.Options{})
		s, err := c.SendStreaming(testCtx(t), client.SendRequest{Text: "go"})
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(t, s)
		if s.Err() != nil || terminalCount(evs) != 1 || !client.IsTerminalEvent(evs[len(evs)-1]) {
			t.Fatalf("err=%v terminals=%d last=%T", s.Err(), terminalCount(evs), evs[len(evs)-1])
		}
		if len(evs) != 4 || s.Dropped() != 2 || s.State() != a2a.TaskStateCompleted {
			t.Fatalf("events=%d dropped=%d state=%s", len(evs), s.Dropped(), s.State())
		}
	})
	t.Run("keep options pass everything", func(t *testing.T) {
		leakCheck(t)
		f := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Behavior{RawStream: raw}})
		c := dial(t, f, client.Options{})
		s, err := c.SendStreaming(testCtx(t), client.SendRequest{Text: "go"},
			client.StreamOptions{KeepAfterTerminal: true, KeepDuplicates: true})
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(t, s)
		if len(evs) != len(raw) || terminalCount(evs) != 2 {
			t.Fatalf("events=%d terminals=%d err=%v", len(evs), terminalCount(evs), s.Err())
		}
	})
	t.Run("scripted duplicate through a2a-go", func(t *testing.T) {
		leakCheck(t)
		f := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Script(
			fakea2a.Working("w"), fakea2a.Duplicate(), fakea2a.Completed("done"))})
		c := dial(t, f, client.Options{})
		s, err := c.SendStreaming(testCtx(t), client.SendRequest{Text: "go"})
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(t, s)
		if s.Err() != nil || terminalCount(evs) != 1 || s.Dropped() != 1 {
			t.Fatalf("err=%v terminals=%d dropped=%d", s.Err(), terminalCount(evs), s.Dropped())
		}
	})
}

func TestTerminalBeforeStarted(t *testing.T) {
	t.Run("scripted", func(t *testing.T) {
		leakCheck(t)
		f := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Script(fakea2a.Completed("instant"))})
		c := dial(t, f, client.Options{})
		s, err := c.SendStreaming(testCtx(t), client.SendRequest{Text: "go"})
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(t, s)
		if s.Err() != nil || terminalCount(evs) != 1 || s.State() != a2a.TaskStateCompleted {
			t.Fatalf("err=%v terminals=%d", s.Err(), terminalCount(evs))
		}
	})
	t.Run("terminal is the first frame", func(t *testing.T) {
		leakCheck(t)
		f := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Behavior{RawStream: []string{
			fakea2a.RawStatus("t-9", "c-9", a2a.TaskStateCompleted, "done")}}})
		c := dial(t, f, client.Options{})
		s, err := c.SendStreaming(testCtx(t), client.SendRequest{Text: "go"})
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(t, s)
		if s.Err() != nil || len(evs) != 1 || s.TaskID() != "t-9" || !s.Terminal() {
			t.Fatalf("err=%v events=%d task=%s", s.Err(), len(evs), s.TaskID())
		}
	})
}

func TestNeverTerminalEndsWithTimeout(t *testing.T) {
	leakCheck(t)
	f := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Script(fakea2a.Working("w"), fakea2a.Hang())})
	c := dial(t, f, client.Options{})
	ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
	defer cancel()
	s, err := c.SendStreaming(ctx, client.SendRequest{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, s)
	var e *clienterr.Error
	if !errors.As(s.Err(), &e) || e.Kind != clienterr.KindTimeout || !errors.Is(s.Err(), context.DeadlineExceeded) {
		t.Fatalf("want KindTimeout, got %v", s.Err())
	}
	if !e.Retryable() {
		t.Fatal("timeout should be retryable")
	}
}

func TestRemoteFailedAndRejected(t *testing.T) {
	for _, tc := range []struct {
		step  fakea2a.Step
		state a2a.TaskState
	}{{fakea2a.Failed("boom"), a2a.TaskStateFailed}, {fakea2a.Rejected("no"), a2a.TaskStateRejected}} {
		t.Run(string(tc.state), func(t *testing.T) {
			leakCheck(t)
			f := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Script(fakea2a.Working("w"), tc.step)})
			c := dial(t, f, client.Options{})
			s, err := c.SendStreaming(testCtx(t), client.SendRequest{Text: "go"})
			if err != nil {
				t.Fatal(err)
			}
			evs := collect(t, s)
			if s.Err() != nil || s.State() != tc.state || terminalCount(evs) != 1 {
				t.Fatalf("err=%v state=%s", s.Err(), s.State())
			}
			last := evs[len(evs)-1].(*a2a.TaskStatusUpdateEvent)
			if last.Status.Message == nil || client.TextOf(last.Status.Message.Parts) == "" {
				t.Fatal("terminal status message lost")
			}
		})
	}
}

func TestMalformedEventPayloads(t *testing.T) {
	const tid, cid = "task-m", "ctx-m"
	first := fakea2a.RawTask(tid, cid, a2a.TaskStateWorking)
	cases := map[string][]string{
		"invalid json":           {first, `{"statusUpdate": {`},
		"unknown event type":     {first, `{"surprise": {"x": 1}}`},
		"two event types":        {first, `{"task": {"id": "a", "status": {"state": "TASK_STATE_WORKING"}}, "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x"}]}}`},
		"artifact without body":  {first, `{"artifactUpdate": {"taskId": "task-m", "contextId": "ctx-m"}}`},
		"unknown state":          {first, `{"statusUpdate": {"taskId": "task-m", "contextId": "ctx-m", "status": {"state": "TASK_STATE_EXPLODED"}}}`},
		"event for another task": {first, fakea2a.RawStatus("other", cid, a2a.TaskStateWorking, "x")},
		"part without content":   {first, `{"artifactUpdate": {"taskId": "task-m", "artifact": {"artifactId": "a", "parts": [{}]}}}`},
		"malformed first frame":  {`not json at all`},
	}
	for name, frames := range cases {
		t.Run(name, func(t *testing.T) {
			leakCheck(t)
			f := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Behavior{RawStream: frames}})
			c := dial(t, f, client.Options{})
			s, err := c.SendStreaming(testCtx(t), client.SendRequest{Text: "go"})
			if err == nil {
				collect(t, s)
				err = s.Err()
			}
			if !errors.Is(err, clienterr.ErrProtocol) {
				t.Fatalf("want ErrProtocol, got %v", err)
			}
		})
	}
}

func TestHugeArtifact(t *testing.T) {
	leakCheck(t)
	const size = 4 << 20
	f := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Script(
		fakea2a.HugeArtifact("big.txt", size), fakea2a.Completed("done"))})
	// The 4 MiB artifact comes in one event: raise the event bound for it.
	c := dial(t, f, client.Options{MaxEventBytes: 2 * size})
	// Moving 4 MiB through a2a-go's server, SSE and this client is CPU-bound
	// under -race (about 6s alone, 30s seen with the machine loaded), so the
	// stream is bounded by the test binary's -timeout (t.Context) rather
	// than testCtx's 20s, a hang guard that here would turn load into a
	// failure.
	s, err := c.SendStreaming(t.Context(), client.SendRequest{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, ev := range collect(t, s) {
		if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok && a.Artifact.Name == "big.txt" {
			got += len(client.TextOf(a.Artifact.Parts))
		}
	}
	if s.Err() != nil || got != size {
		t.Fatalf("err=%v got %d bytes", s.Err(), got)
	}
}

func TestInputRequiredThenResume(t *testing.T) {
	leakCheck(t)
	f := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Script(
		fakea2a.Working("w"), fakea2a.InputRequired("which branch?"), fakea2a.Working("resumed"), fakea2a.Completed("done"))})
	c := dial(t, f, client.Options{})
	ctx := testCtx(t)
	s, err := c.SendStreaming(ctx, client.SendRequest{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, s)
	if s.Err() != nil || !client.IsInterrupted(s.State()) || client.IsTerminal(s.State()) {
		t.Fatalf("first leg: err=%v state=%s", s.Err(), s.State())
	}
	s2, err := c.SendStreaming(ctx, client.SendRequest{Text: "main", TaskID: s.TaskID(), ContextID: s.ContextID()})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, s2)
	if s2.Err() != nil || s2.State() != a2a.TaskStateCompleted || terminalCount(evs) != 1 || s2.TaskID() != s.TaskID() {
		t.Fatalf("second leg: err=%v state=%s", s2.Err(), s2.State())
	}
	r := f.RequestsFor("SendStreamingMessage")
	if len(r) != 2 || r[1].TaskID != s.TaskID() || r[1].MessageText != "main" {
		t.Fatalf("follow-up record = %+v", r)
	}
}

func TestRecoverGivesUpAfterMaxAttempts(t *testing.T) {
	leakCheck(t)
	f := fakea2a.New(t, fakea2a.Options{Streaming: true})
	c := dial(t, f, client.Options{})
	f.Close()
	rep, err := client.RecoverTask(testCtx(t), c, "t-1", client.RecoverOptions{MaxAttempts: 3, InitialBackoff: time.Millisecond})
	if !errors.Is(err, clienterr.ErrUnavailable) || rep.Outcome != client.RecoveryFailed || rep.Attempts != 3 || rep.Err == nil {
		t.Fatalf("err=%v report=%+v", err, rep)
	}
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	rep, err = client.RecoverTask(ctx, c, "t-1", client.RecoverOptions{})
	if !errors.Is(err, clienterr.ErrCanceled) || rep.Outcome != client.RecoveryFailed {
		t.Fatalf("cancelled: err=%v report=%+v", err, rep)
	}
}

func TestStreamCloseFromAnotherGoroutine(t *testing.T) {
	leakCheck(t)
	f := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Script(fakea2a.Working("w"), fakea2a.Hang())})
	c := dial(t, f, client.Options{})
	s, err := c.SendStreaming(testCtx(t), client.SendRequest{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	// The script hangs after "working": once the consumer has seen it, its
	// next Next can only end through Close.
	working, closed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(closed)
		<-working
		_ = s.Close()
	}()
	sawWorking := false
	for s.Next() {
		if s.State() == a2a.TaskStateWorking && !sawWorking {
			sawWorking = true
			close(working)
		}
	}
	if !sawWorking {
		close(working)
		<-closed
		t.Fatalf("the stream ended before the working state (state %s, err %v)", s.State(), s.Err())
	}
	<-closed
	if s.Err() != nil {
		t.Fatalf("Close should end the stream without error, got %v", s.Err())
	}
}

// A compliant server begins the stream of a follow-up message with the Task
// as it stands, still input-required. Without FollowUpOf that snapshot ends
// the stream at once (the bug this option fixes); with it, the stream goes
// on to the state the answer reaches.
func TestFollowUpStreamBeginsWithTheInterruptedSnapshot(t *testing.T) {
	leakCheck(t)
	f := fakea2a.New(t, fakea2a.Options{Streaming: true, FollowUpSnapshot: true, Behavior: fakea2a.Script(
		fakea2a.InputRequired("which branch?"), fakea2a.InputRequired("which commit?"), fakea2a.Working("resumed"), fakea2a.Completed("done"))})
	c := dial(t, f, client.Options{})
	ctx := testCtx(t)
	s, err := c.SendStreaming(ctx, client.SendRequest{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, s)
	if s.Err() != nil || s.State() != a2a.TaskStateInputRequired {
		t.Fatalf("first leg: err=%v state=%s", s.Err(), s.State())
	}
	// Without the option: the leading snapshot ends the stream, nothing
	// after the send is seen.
	naive, err := c.SendStreaming(ctx, client.SendRequest{Text: "main", TaskID: s.TaskID()})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, naive)
	if _, isTask := evs[0].(*a2a.Task); !isTask || len(evs) != 1 || naive.State() != a2a.TaskStateInputRequired {
		t.Fatalf("naive follow-up: %d events, state %s", len(evs), naive.State())
	}
	// The server processes that answer on its own and asks again; the
	// next follow-up starts from that second question.
	testenv.WaitUntil(t, "the second question", func() bool {
		task, err := c.GetTask(ctx, client.GetTaskRequest{TaskID: s.TaskID()})
		return err == nil && task.Status.State == a2a.TaskStateInputRequired && task.Status.Message != nil &&
			client.TextOf(task.Status.Message.Parts) == "which commit?"
	})
	f2 := client.StreamOptions{FollowUpOf: a2a.TaskStateInputRequired}
	s2, err := c.SendStreaming(ctx, client.SendRequest{Text: "abc123", TaskID: s.TaskID()}, f2)
	if err != nil {
		t.Fatal(err)
	}
	evs = collect(t, s2)
	if s2.Err() != nil || s2.State() != a2a.TaskStateCompleted || terminalCount(evs) != 1 {
		t.Fatalf("follow-up: err=%v state=%s events %d", s2.Err(), s2.State(), len(evs))
	}
	if task, isTask := evs[0].(*a2a.Task); !isTask || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("first event %T, want the input-required snapshot", evs[0])
	}
}

// A follow-up stream that closes cleanly after the leading snapshot is a
// cut, not the interrupted state it restated.
func TestFollowUpStreamCutAfterTheSnapshot(t *testing.T) {
	leakCheck(t)
	f := fakea2a.New(t, fakea2a.Options{Streaming: true, FollowUpSnapshot: true, Behavior: fakea2a.Script(
		fakea2a.InputRequired("which branch?"), fakea2a.CloseStream(), fakea2a.Completed("done"))})
	c := dial(t, f, client.Options{})
	ctx := testCtx(t)
	s, err := c.SendStreaming(ctx, client.SendRequest{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, s)
	s2, err := c.SendStreaming(ctx, client.SendRequest{Text: "main", TaskID: s.TaskID()}, client.StreamOptions{FollowUpOf: a2a.TaskStateInputRequired})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, s2)
	if !errors.Is(s2.Err(), clienterr.ErrInterrupted) || s2.State() != "" {
		t.Fatalf("err=%v state=%q, want an interrupted stream with no state reached", s2.Err(), s2.State())
	}
}
