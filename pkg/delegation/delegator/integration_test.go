package delegator_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"

	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/clients/a2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/a2aremote"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

func TestDelegateStreamingHappyPath(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t,
		fakea2a.Working("Searching official A2A SDK examples..."),
		fakea2a.TextChunks("Comparing task ", "streaming and ", "artifact behavior."),
		dt.TextArtifact("a2a-sdk-notes.md", "text/markdown", "# Notes\nARTIFACT-BODY"),
		dt.AdaptorResultArtifact("Official a2a-go exposes SendStreamingMessage."),
		fakea2a.Completed(""),
	)
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	rec := e.Record(t, "run-1")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-1", ParentToolCallID: "toolu-1", Agent: "research", Objective: "Find the streaming API."})
	if res.Status != delegation.StatusCompleted || res.Error != nil {
		t.Fatalf("result %+v", res)
	}
	if res.DelegationID == "" || res.RemoteTaskID == "" || res.RemoteContextID == "" || res.RawTask == nil || res.RawTask.TaskID != res.RemoteTaskID || res.RemoteProtocol != "a2a" || res.Agent != "research" {
		t.Errorf("identifiers missing: %+v", res)
	}
	if res.Summary != "Official a2a-go exposes SendStreamingMessage." {
		t.Errorf("summary %q", res.Summary)
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].Name != "a2a-sdk-notes.md" || res.Artifacts[0].MimeType != "text/markdown" ||
		res.Artifacts[0].URI != artifact.URI(res.DelegationID, res.Artifacts[0].ID) {
		t.Errorf("artifacts %+v", res.Artifacts)
	}
	if len(res.Messages) == 0 || res.Messages[0].Text != "Comparing task streaming and artifact behavior." {
		t.Errorf("messages %+v", res.Messages)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	kinds := []delegation.DelegationEventKind{}
	for _, ev := range evs {
		if ev.DelegationID != res.DelegationID || ev.RunID != "run-1" || ev.ParentToolCallID != "toolu-1" || ev.AgentKey != "research" || ev.AgentName != "Research Agent" {
			t.Errorf("event header %+v", ev)
		}
		if len(kinds) == 0 || kinds[len(kinds)-1] != ev.Kind {
			kinds = append(kinds, ev.Kind)
		}
	}
	want := []delegation.DelegationEventKind{delegation.DelegationStarted, delegation.DelegationStatus, delegation.DelegationTextStart, delegation.DelegationTextDelta, delegation.DelegationTextEnd, delegation.DelegationArtifactCreated, delegation.DelegationFinished}
	if !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	var text strings.Builder
	for _, ev := range dt.OfKind(evs, delegation.DelegationTextDelta) {
		if !strings.HasPrefix(ev.RemoteMessageID, "final") { // the last word comes once, after the text
			text.WriteString(ev.Delta)
		}
	}
	if text.String() != "Comparing task streaming and artifact behavior." {
		t.Errorf("deltas %q", text.String())
	}
	fin := dt.OfKind(evs, delegation.DelegationFinished)[0]
	if fin.RemoteTaskID != res.RemoteTaskID || fin.RemoteContextID != res.RemoteContextID {
		t.Errorf("finished without remote ids: %+v", fin)
	}
	if fp, _ := evs[0].Raw["card_fingerprint"].(string); len(fp) != 64 {
		t.Errorf("started without card fingerprint: %+v", evs[0].Raw)
	}
	// The artifact is served by reference.
	art := dt.OfKind(evs, delegation.DelegationArtifactCreated)[0].Artifact
	h := httptest.NewServer(artifact.Handler(e.D.Artifacts()))
	defer h.Close()
	resp, err := http.Get(h.URL + "/agui/runs/run-1/delegations/" + res.DelegationID + "/artifacts/" + art.ID)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "# Notes\nARTIFACT-BODY" || resp.Header.Get("Content-Type") != "text/markdown; charset=utf-8" {
		t.Errorf("artifact GET: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	resp, err = http.Get(h.URL + "/agui/runs/other-run/delegations/" + res.DelegationID + "/artifacts/" + art.ID)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("artifact of another run: HTTP %d, want 404", resp.StatusCode)
	}
	h.Client().CloseIdleConnections()
	// Audit.
	recs := e.D.Audit().ListRun("run-1")
	if len(recs) != 1 || recs[0].RemoteTaskID != res.RemoteTaskID || recs[0].CardFingerprint == "" || recs[0].Status != delegation.StatusCompleted || len(recs[0].Events) == 0 || recs[0].ParentToolCallID != "toolu-1" {
		t.Errorf("audit %+v", recs)
	}
	for _, ev := range evs {
		if strings.Contains(ev.Text+ev.Delta, "ARTIFACT-BODY") {
			t.Errorf("artifact content inlined into an event: %+v", ev)
		}
	}
	dt.NoSecret(t, "events", evs)
	dt.NoSecret(t, "result", res)
	dt.NoSecret(t, "logs", e.Logs.String())
}

func TestDelegateNonStreamingFallbackPolls(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.Fake(t, fakea2a.Options{Name: "legacy", Streaming: false, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.AwaitRelease(), fakea2a.Working("Looking it up"), fakea2a.TextChunks("Legacy ", "answer."), fakea2a.Completed("Legacy result"))...)})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("legacy", srv)})
	rec := e.Record(t, "run-p")
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-p", Agent: "legacy", Objective: "Old school task."})
	}()
	st := rec.WaitKind(t, delegation.DelegationStatus, "polling")
	if st.Raw["reason"] != string(delegation.CodeCapabilityUnsupported) {
		t.Errorf("degraded status %+v", st)
	}
	sub := rec.WaitFor(t, "a task status", func(evs []delegation.DelegationEvent) bool {
		for _, ev := range evs {
			if ev.Kind == delegation.DelegationStatus && ev.RemoteTaskID != "" {
				return true
			}
		}
		return false
	})
	srv.Release(srvTaskID(t, sub))
	res := <-done
	// The task's output (its assistant text) is the answer, and the final
	// status message the remote's last word after it.
	if res.Status != delegation.StatusCompleted || res.Summary != "Legacy answer.\n\nLegacy result" || len(res.Messages) != 2 ||
		res.Messages[0].Text != "Legacy answer." || res.Messages[1].Text != "Legacy result" {
		t.Fatalf("result %+v", res)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	// The polled text is the subagent's text, then its last word.
	var ends []string
	for _, ev := range dt.OfKind(evs, delegation.DelegationTextEnd) {
		ends = append(ends, ev.Text)
	}
	if !slices.Equal(ends, []string{"Legacy answer.", "Legacy result"}) {
		t.Errorf("polled text messages %q, events %s", ends, dt.KindsOf(evs))
	}
	sends := srv.RequestsFor("SendMessage")
	if len(sends) != 1 || !sends[0].ReturnImmediately {
		t.Errorf("sends %+v", sends)
	}
	if len(srv.RequestsFor("SendStreamingMessage")) != 0 || len(srv.RequestsFor("GetTask")) == 0 {
		t.Errorf("requests %+v", srv.Requests())
	}
	if recs := e.D.Audit().ListRun("run-p"); len(recs) != 1 || recs[0].Mode != "polling" {
		t.Errorf("audit %+v", recs)
	}
}

func srvTaskID(t *testing.T, evs []delegation.DelegationEvent) a2a.TaskID {
	for _, ev := range evs {
		if ev.RemoteTaskID != "" {
			return a2a.TaskID(ev.RemoteTaskID)
		}
	}
	t.Fatal("no remote task id yet")
	return ""
}

func TestDelegateRemoteFailure(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Working("Trying"), fakea2a.Failed("quota exceeded"))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	rec := e.Record(t, "run-f")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-f", Agent: "research", Objective: "x"})
	if res.Status != delegation.StatusFailed || res.Error == nil || res.Error.Code != delegation.CodeRemoteFailed || res.Error.RemoteStatus != "failed" || !strings.Contains(res.Error.Message, "quota exceeded") || res.RemoteTaskID == "" {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	f := dt.OfKind(evs, delegation.DelegationFailed)
	if len(f) != 1 || f[0].Error == nil || f[0].Error.RemoteStatus != "failed" || f[0].Error.Code != delegation.CodeRemoteFailed {
		t.Errorf("failed events %+v", f)
	}
}

func TestDelegateRemoteRejected(t *testing.T) {
	srv := dt.StreamingFake(t, fakea2a.Rejected("not my job"))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-r", Agent: "research", Objective: "x"})
	if res.Error == nil || res.Error.Code != delegation.CodeRemoteRejected || res.Error.Retryable {
		t.Fatalf("result %+v", res)
	}
}

func TestDelegateRemoteTimeoutCancelsRemote(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Working("Thinking"), fakea2a.Hang())
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) { s.Policy.MaxTimeout = 300 * time.Millisecond; s.Tenant = "acme" })})
	rec := e.Record(t, "run-t")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-t", Agent: "research", Objective: "x", Constraints: registry.Constraints{TimeoutSeconds: 3600}})
	if res.Error == nil || res.Error.Code != delegation.CodeRemoteTimeout || !res.Error.Retryable || res.Error.RemoteStatus != "working" || res.Status != delegation.StatusFailed {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	cancels := srv.RequestsFor("CancelTask")
	if len(cancels) != 1 || string(cancels[0].TaskID) != res.RemoteTaskID || cancels[0].Metadata["reason"] != "host_timeout" || cancels[0].Tenant != "acme" {
		t.Errorf("cancel requests %+v", cancels)
	}
}

func TestDelegateParentCancellationCascades(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Working("Working hard"), fakea2a.Hang())
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) { s.Tenant = "acme" })})
	rec := e.Record(t, "run-c")
	ctx, cancel := context.WithCancel(dt.Ctx(t))
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(ctx, delegator.Request{RunID: "run-c", Agent: "research", Objective: "x"})
	}()
	rec.WaitKind(t, delegation.DelegationStatus, "working")
	cancel()
	res := <-done
	if res.Status != delegation.StatusCancelled || res.Error == nil || res.Error.Code != delegation.CodeCancelled {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	if c := dt.OfKind(evs, delegation.DelegationCancelled); len(c) != 1 {
		t.Errorf("cancelled events: %s", dt.KindsOf(evs))
	}
	cancels := srv.RequestsFor("CancelTask")
	if len(cancels) != 1 {
		t.Fatalf("cancel requests %+v", cancels)
	}
	c := cancels[0]
	if string(c.TaskID) != res.RemoteTaskID || c.Tenant != "acme" || c.Metadata["reason"] != "parent_cancelled" ||
		c.Metadata["delegation_id"] != res.DelegationID || c.Metadata["run_id"] != "run-c" || c.Metadata["agent"] != "research" {
		t.Errorf("cancel request %+v", c)
	}
	if st := e.D.Stats(); st.ActiveDelegations != 0 || st.CleanupWatchers != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestDelegateCancelUnconfirmedKeepsWatcher(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.Fake(t, fakea2a.Options{Streaming: true, Cancel: fakea2a.CancelRefuse, Behavior: fakea2a.Script(fakea2a.Working("busy"), fakea2a.Hang())})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) { c.CleanupAttempts = 100; c.CleanupInterval = 10 * time.Millisecond })
	rec := e.Record(t, "run-w")
	ctx, cancel := context.WithCancel(dt.Ctx(t))
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(ctx, delegator.Request{RunID: "run-w", Agent: "research", Objective: "x"})
	}()
	rec.WaitKind(t, delegation.DelegationStatus, "working")
	cancel()
	res := <-done
	if res.Status != delegation.StatusCancelled || res.Error == nil || res.Error.Code != delegation.CodeCancelPending {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	rec.WaitKind(t, delegation.DelegationStatus, string(delegation.CodeCancelPending))
	if st := e.D.Stats(); st.CleanupWatchers != 1 {
		t.Errorf("stats %+v, want one cleanup watcher", st)
	}
	// The watcher keeps trying after the tool call returned.
	// (A record whose TaskID is still empty is one the fake is filling in
	// right now: it names the method from the envelope before a2a-go's
	// interceptor sees the payload.)
	cleanups := func() (n int) {
		for _, c := range srv.RequestsFor("CancelTask")[1:] {
			if c.TaskID == "" {
				continue
			}
			if c.Metadata["reason"] != "cleanup" || c.Metadata["delegation_id"] != res.DelegationID {
				t.Errorf("watcher cancel %+v", c)
			}
			n++
		}
		return n
	}
	dt.WaitUntil(t, "watcher retries", func() bool { return cleanups() >= 2 })
	// Close stops the watcher (checked by checkLeaks).
}

func TestDelegateCancelHangIsBounded(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.Fake(t, fakea2a.Options{Streaming: true, Cancel: fakea2a.CancelHang, Behavior: fakea2a.Script(fakea2a.Working("busy"), fakea2a.Hang())})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) { c.CancelTimeout = 200 * time.Millisecond; c.CleanupInterval = time.Hour })
	rec := e.Record(t, "run-h")
	ctx, cancel := context.WithCancel(dt.Ctx(t))
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(ctx, delegator.Request{RunID: "run-h", Agent: "research", Objective: "x"})
	}()
	rec.WaitKind(t, delegation.DelegationStatus, "working")
	cancel()
	res := <-done
	if res.Error == nil || res.Error.Code != delegation.CodeCancelPending {
		t.Fatalf("result %+v", res)
	}
	evs := rec.WaitTerminals(t, 1)
	if c := dt.OfKind(evs, delegation.DelegationCancelled); len(c) != 1 || c[0].Status != "cancel_pending" {
		t.Errorf("events %s", dt.KindsOf(evs))
	}
}

func TestDelegateStreamDisconnectRecovers(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Working("first part"), fakea2a.DropStream(), fakea2a.AwaitSubscribe(),
		fakea2a.TextChunks("after ", "reconnect"), fakea2a.Completed("recovered"))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	rec := e.Record(t, "run-d")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-d", Agent: "research", Objective: "x"})
	if res.Status != delegation.StatusCompleted || res.Summary != "after reconnect\n\nrecovered" {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	if len(dt.OfKind(evs, delegation.DelegationStatus)) == 0 {
		t.Fatal("no status")
	}
	found := false
	for _, ev := range evs {
		found = found || (ev.Kind == delegation.DelegationStatus && ev.Status == string(delegation.CodeStreamInterrupted))
	}
	if !found {
		t.Errorf("no stream_interrupted status: %s", dt.KindsOf(evs))
	}
	if len(srv.RequestsFor("SubscribeToTask")) == 0 {
		t.Errorf("no resubscription: %+v", srv.Requests())
	}
	if recs := e.D.Audit().ListRun("run-d"); len(recs) != 1 || recs[0].Recovered != 1 {
		t.Errorf("audit %+v", recs)
	}
}

func TestDelegateStreamCutUnrecoverable(t *testing.T) {
	dt.CheckLeaks(t)
	// The stream closes cleanly before a terminal state and the raw task is
	// unknown to subscribe/get: recovery fails with stream_interrupted.
	srv := dt.Fake(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Behavior{RawStream: []string{
		fakea2a.RawTask("task-x", "ctx-x", "TASK_STATE_SUBMITTED"),
		fakea2a.RawStatus("task-x", "ctx-x", "TASK_STATE_WORKING", "half way"),
	}}})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) { c.A2A.RecoverAttempts = 2 })
	rec := e.Record(t, "run-u")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-u", Agent: "research", Objective: "x"})
	if res.Error == nil || res.Error.Code != delegation.CodeStreamInterrupted || !res.Error.Retryable || res.RemoteTaskID != "task-x" {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	dt.CheckLifecycle(t, rec.WaitTerminals(t, 1))
	// The task was last seen working: before the delegation fails, it is
	// cancelled, so it is never orphaned (docs/design.md#edge-cases,
	// guarantee 10).
	if cs := srv.RequestsFor("CancelTask"); len(cs) == 0 || cs[0].TaskID != "task-x" || cs[0].Metadata["reason"] != string(delegation.CodeStreamInterrupted) {
		t.Errorf("cancel requests %+v, want CancelTask of task-x with reason stream_interrupted", cs)
	}
}

func TestDelegateDuplicateTerminalEvents(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.Fake(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Behavior{RawStream: []string{
		fakea2a.RawTask("task-d", "ctx-d", "TASK_STATE_SUBMITTED"),
		fakea2a.RawStatus("task-d", "ctx-d", "TASK_STATE_WORKING", "go"),
		fakea2a.RawStatus("task-d", "ctx-d", "TASK_STATE_WORKING", "go"),
		fakea2a.RawArtifact("task-d", "ctx-d", a2aremote.ArtifactAssistantOutput, "Hello ", false, false),
		fakea2a.RawArtifact("task-d", "ctx-d", a2aremote.ArtifactAssistantOutput, "world", true, true),
		fakea2a.RawArtifact("task-d", "ctx-d", a2aremote.ArtifactAssistantOutput, "world", true, true),
		fakea2a.RawStatus("task-d", "ctx-d", "TASK_STATE_COMPLETED", "done"),
		fakea2a.RawStatus("task-d", "ctx-d", "TASK_STATE_COMPLETED", "done"),
		fakea2a.RawStatus("task-d", "ctx-d", "TASK_STATE_FAILED", "late"),
	}}})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	rec := e.Record(t, "run-dup")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-dup", Agent: "research", Objective: "x"})
	if res.Status != delegation.StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	var text strings.Builder
	for _, ev := range dt.OfKind(evs, delegation.DelegationTextDelta) {
		if !strings.HasPrefix(ev.RemoteMessageID, "final") { // the last word comes once, after the text
			text.WriteString(ev.Delta)
		}
	}
	working := 0
	for _, ev := range dt.OfKind(evs, delegation.DelegationStatus) {
		if ev.Status == "working" {
			working++
		}
	}
	if text.String() != "Hello world" || working != 1 {
		t.Errorf("text %q, events %s", text.String(), dt.KindsOf(evs))
	}
}

func TestDelegateTerminalBeforeStarted(t *testing.T) {
	srv := dt.Fake(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Behavior{RawStream: []string{
		fakea2a.RawStatus("task-q", "ctx-q", "TASK_STATE_COMPLETED", "instant"),
	}}})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	rec := e.Record(t, "run-q")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-q", Agent: "research", Objective: "x"})
	if res.Status != delegation.StatusCompleted || res.Summary != "instant" {
		t.Fatalf("result %+v", res)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	if evs[0].Kind != delegation.DelegationStarted || evs[len(evs)-1].Kind != delegation.DelegationFinished {
		t.Errorf("events %s", dt.KindsOf(evs))
	}
}

func TestDelegateArtifactTooLarge(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.HugeArtifact("huge.bin", 64<<10), dt.TextArtifact("small.txt", "text/plain", "ok"), fakea2a.Completed("done"))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) { s.Policy.MaxArtifactBytes = 4096 })})
	rec := e.Record(t, "run-big")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-big", Agent: "research", Objective: "x"})
	if res.Status != delegation.StatusCompleted || res.Error != nil || len(res.Artifacts) != 2 {
		t.Fatalf("result %+v", res)
	}
	big, small := res.Artifacts[0], res.Artifacts[1]
	if big.Error == nil || big.Error.Code != delegation.CodeArtifactTooLarge || big.URI != "" || small.Error != nil || small.URI == "" {
		t.Errorf("artifacts %+v %+v", big, small)
	}
	evs := rec.WaitTerminals(t, 1)
	arts := dt.OfKind(evs, delegation.DelegationArtifactCreated)
	if len(arts) != 2 || arts[0].Artifact.Error == nil || arts[0].Artifact.Error.Code != delegation.CodeArtifactTooLarge || arts[0].Artifact.SizeBytes != 64<<10 {
		t.Errorf("artifact events %+v", arts)
	}
	for _, ev := range evs {
		if len(ev.Text)+len(ev.Delta) > 4096 {
			t.Errorf("huge content inlined: %s", ev.Kind)
		}
	}
}

func TestDelegateInputRequiredAnswered(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.InputRequired("Which year?"), fakea2a.TextChunks("Answer for the year."), fakea2a.Completed("Done for 2024"))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) { s.Policy.AllowInputRequired = true })})
	rec := e.Record(t, "run-i")
	h := httptest.NewServer(e.D.InputHandler())
	defer h.Close()
	defer h.Client().CloseIdleConnections()
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-i", Agent: "research", Objective: "x"})
	}()
	ir := rec.WaitKind(t, delegation.DelegationInputRequired, "")
	if ir.Text != "Which year?" {
		t.Errorf("input_required %+v", ir)
	}
	select {
	case r := <-done:
		t.Fatalf("tool returned before the input was answered: %+v", r)
	default:
	}
	post := func(run, del, body string) int {
		resp, err := h.Client().Post(h.URL+"/agui/runs/"+run+"/delegations/"+del+"/input", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := post("run-i", ir.DelegationID, `{"nope": 1}`); c != 400 {
		t.Errorf("bad body: %d", c)
	}
	if c := post("other-run", ir.DelegationID, `{"text": "2024"}`); c != 404 {
		t.Errorf("other run: %d", c)
	}
	if c := post("run-i", ir.DelegationID, `{"text": "2024"}`); c != 202 {
		t.Errorf("answer: %d", c)
	}
	res := <-done
	if res.Status != delegation.StatusCompleted || res.Summary != "Answer for the year.\n\nDone for 2024" {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	if c := post("run-i", ir.DelegationID, `{"text": "again"}`); c != 404 {
		t.Errorf("answer after completion: %d", c)
	}
	var followUp bool
	for _, r := range srv.RequestsFor("SendStreamingMessage") {
		if string(r.TaskID) == res.RemoteTaskID && r.MessageText == "2024" {
			followUp = true
		}
	}
	if !followUp {
		t.Errorf("no follow-up message for the same task: %+v", srv.Requests())
	}
	dt.CheckLifecycle(t, rec.WaitTerminals(t, 1))
}

func TestAnswerInputNotWaiting(t *testing.T) {
	srv := dt.StreamingFake(t, fakea2a.Working("busy"), fakea2a.AwaitRelease(), fakea2a.Completed("ok"))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	rec := e.Record(t, "run-nw")
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-nw", Agent: "research", Objective: "x"})
	}()
	st := rec.WaitKind(t, delegation.DelegationStatus, "working")
	if err := e.D.AnswerInput(dt.Ctx(t), "run-nw", st.DelegationID, "hi"); err != delegator.ErrNotWaitingForInput {
		t.Errorf("AnswerInput = %v", err)
	}
	if err := e.D.AnswerInput(dt.Ctx(t), "run-nw", st.DelegationID, " "); err != delegator.ErrEmptyAnswer {
		t.Errorf("AnswerInput = %v", err)
	}
	srv.Release(a2a.TaskID(st.RemoteTaskID))
	<-done
}

func TestDelegateInputRequiredUnsupported(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.InputRequired("Need your password"), fakea2a.Completed("never"))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	rec := e.Record(t, "run-iu")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-iu", Agent: "research", Objective: "x"})
	if res.Error == nil || res.Error.Code != delegation.CodeInputRequiredUnsupported || res.Error.RemoteStatus != "input-required" {
		t.Fatalf("result %+v", res)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	if len(dt.OfKind(evs, delegation.DelegationInputRequired)) != 0 {
		t.Errorf("input_required surfaced against policy")
	}
	if c := srv.RequestsFor("CancelTask"); len(c) != 1 || c[0].Metadata["reason"] != "input_required_unsupported" {
		t.Errorf("cancel %+v", c)
	}
}

func TestDelegateInputTimeout(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.InputRequired("Which year?"), fakea2a.Completed("never"))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) {
		s.Policy.AllowInputRequired = true
		s.Policy.MaxTimeout = 300 * time.Millisecond
	})})
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-it", Agent: "research", Objective: "x"})
	if res.Error == nil || res.Error.Code != delegation.CodeInputRequired || res.Status != delegation.StatusInputRequired {
		t.Fatalf("result %+v", res)
	}
}

func TestDelegateAgentNotFoundMakesNoRequest(t *testing.T) {
	srv := dt.StreamingFake(t, fakea2a.Completed("x"))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	rec := e.Record(t, "run-nf")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-nf", Agent: "unknown", Objective: "x"})
	if res.Error == nil || res.Error.Code != delegation.CodeAgentNotFound || res.Error.Retryable {
		t.Fatalf("result %+v", res)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d outbound requests", n)
	}
	dt.CheckLifecycle(t, rec.WaitTerminals(t, 1))
}

func TestDelegateConcurrencyLimit(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Working("busy"), fakea2a.AwaitRelease(), fakea2a.Completed("ok"))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) { s.Policy.MaxConcurrentPerRun = 1 })})
	rec := e.Record(t, "run-cl")
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-cl", Agent: "research", Objective: "x"})
	}()
	st := rec.WaitKind(t, delegation.DelegationStatus, "working")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-cl", Agent: "research", Objective: "y"})
	if res.Error == nil || res.Error.Code != delegation.CodeConcurrencyLimit || !res.Error.Retryable {
		t.Errorf("second delegation %+v", res)
	}
	// Another run is not limited by this run's slot.
	other := make(chan delegation.Result, 1)
	go func() {
		other <- e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-cl2", Agent: "research", Objective: "z"})
	}()
	srv.Release(a2a.TaskID(st.RemoteTaskID))
	if r := <-done; r.Status != delegation.StatusCompleted {
		t.Errorf("first %+v", r)
	}
	dt.WaitUntil(t, "second run's task", func() bool { return len(srv.Tasks()) == 2 })
	for _, id := range srv.Tasks() {
		srv.Release(id)
	}
	if r := <-other; r.Status != delegation.StatusCompleted {
		t.Errorf("other run %+v", r)
	}
}

func TestDelegateContextPolicies(t *testing.T) {
	srv := dt.StreamingFake(t, fakea2a.Completed("ok"))
	for _, tc := range []struct {
		policy   string
		sameRun  bool // second delegation in the same run
		wantSame bool
	}{
		{registry.ContextEphemeral, true, false},
		{registry.ContextStickyPerRunAgent, true, true},
		{registry.ContextStickyPerRunAgent, false, false},
		{registry.ContextStickyPerParentThreadAgent, false, true},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) { s.Policy.ContextPolicy = tc.policy })})
			r1 := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-a", SessionKey: "chat-1", Agent: "research", Objective: "1"})
			run2 := "run-a"
			if !tc.sameRun {
				run2 = "run-b"
			}
			r2 := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: run2, SessionKey: "chat-1", Agent: "research", Objective: "2"})
			if r1.RemoteContextID == "" || r2.RemoteContextID == "" {
				t.Fatalf("no context ids: %+v %+v", r1, r2)
			}
			if same := r1.RemoteContextID == r2.RemoteContextID; same != tc.wantSame {
				t.Errorf("same context = %v, want %v", same, tc.wantSame)
			}
		})
	}
}

func TestDelegateMalformedCardFirstCall(t *testing.T) {
	srv := dt.Fake(t, fakea2a.Options{CardBody: []byte(`{"name": "x"}`)})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("broken", srv)})
	rec := e.Record(t, "run-mc")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-mc", Agent: "broken", Objective: "x"})
	if res.Error == nil || res.Error.Code != delegation.CodeAgentUnavailable || res.Error.Retryable {
		t.Fatalf("result %+v", res)
	}
	dt.CheckLifecycle(t, rec.WaitTerminals(t, 1))
	for _, r := range srv.Requests() {
		if r.Method != "AgentCard" {
			t.Errorf("request beyond the card: %+v", r)
		}
	}
}

func TestDelegateAuthFailureRedacted(t *testing.T) {
	srv := dt.Fake(t, fakea2a.Options{Streaming: true, RequireToken: "another-token-123456", Behavior: fakea2a.Script(fakea2a.Completed("x"))})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	rec := e.Record(t, "run-auth")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-auth", Agent: "research", Objective: "x"})
	if res.Error == nil || res.Error.Code != delegation.CodeAuthRequired || res.Error.Retryable {
		t.Fatalf("result %+v", res)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.NoSecret(t, "events", evs)
	dt.NoSecret(t, "result", res)
	dt.NoSecret(t, "logs", e.Logs.String())
	dt.NoSecret(t, "audit", e.D.Audit().ListRun("run-auth"))
}

func TestCloseCancelsActiveDelegations(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.Working("busy"), fakea2a.Hang())
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	rec := e.Record(t, "run-x")
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-x", Agent: "research", Objective: "x"})
	}()
	rec.WaitKind(t, delegation.DelegationStatus, "working")
	if err := e.D.Close(dt.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Status != delegation.StatusCancelled {
		t.Errorf("result %+v", res)
	}
	if cs := srv.RequestsFor("CancelTask"); len(cs) != 1 || cs[0].Metadata["reason"] != "host_shutdown" {
		t.Errorf("cancel %+v", cs)
	}
	if r := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-x", Agent: "research", Objective: "x"}); r.Error == nil || r.Error.Code != delegation.CodeAgentUnavailable {
		t.Errorf("after Close: %+v", r)
	}
}

func TestCapabilityUnsupported(t *testing.T) {
	legacy := dt.Fake(t, fakea2a.Options{Streaming: false, Behavior: fakea2a.Script(fakea2a.Completed("x"))})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{
		dt.SpecFor("strict", legacy, func(s *registry.RemoteAgentSpec) { s.Policy.RequireStreaming = true }),
	})
	for _, key := range []string{"strict"} { // AG-UI agents are delegated to: agui_test.go
		res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-cap", Agent: key, Objective: "x"})
		if res.Error == nil || res.Error.Code != delegation.CodeCapabilityUnsupported {
			t.Errorf("%s: %+v", key, res)
		}
	}
	for _, r := range legacy.Requests() {
		if r.Method != "AgentCard" {
			t.Errorf("request despite unsupported capability: %+v", r)
		}
	}
}

func TestDelegateEndpointOnlyAgent(t *testing.T) {
	srv := dt.StreamingFake(t, fakea2a.TextChunks("hi"), fakea2a.Completed("ok"))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{{Key: "direct", Protocol: delegation.ProtocolA2A, EndpointURL: srv.URL() + "/jsonrpc", AuthRef: "env:" + dt.SecretEnv,
		Capabilities: registry.RemoteCapabilities{Streaming: true}, Policy: registry.DefaultPolicy()}})
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-e", Agent: "direct", Objective: "x"})
	if res.Status != delegation.StatusCompleted || res.Summary != "hi\n\nok" {
		t.Fatalf("%+v %+v", res, res.Error)
	}
	if len(srv.RequestsFor("AgentCard")) != 0 || len(srv.RequestsFor("SendStreamingMessage")) != 1 {
		t.Errorf("requests %+v", srv.Requests())
	}
}

// TestRemoteEchoedSecretInIDsIsScrubbed: a remote A2A agent that echoes the
// host's credential into the ids and names it chooses (artifact id, name)
// never gets it onto the bus, into the result or into the audit.
func TestRemoteEchoedSecretInIDsIsScrubbed(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t,
		fakea2a.Working("working"),
		fakea2a.Artifact(fakea2a.ArtifactSpec{ID: "art-" + dt.SecretToken, Name: "notes-" + dt.SecretToken + ".md", Text: "body"}),
		fakea2a.Completed("done"),
	)
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	rec := e.Record(t, "run-echo")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-echo", Agent: "research", Objective: "x"})
	if res.Status != delegation.StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	rec.WaitTerminals(t, 1)
	dt.NoSecret(t, "bus events", rec.All())
	dt.NoSecret(t, "tool result", res)
	recs := e.D.Audit().ListRun("run-echo")
	dt.NoSecret(t, "audit", recs)
}

// TestDelegateGenericRemoteAnswerReachesTheParent: a generic A2A remote
// (not behind pkg/bridges/a2a: no agent-adaptor-result) streams its answer
// as artifacts and completes with a bare "done": the parent model receives
// the answer, the UI still gets the artifact by reference
// (docs/design.md#tool-contract).
func TestDelegateGenericRemoteAnswerReachesTheParent(t *testing.T) {
	dt.CheckLeaks(t)
	for _, tc := range []struct {
		name  string
		steps []any
		want  string
		arts  int
	}{
		{"assistant-output", []any{fakea2a.Working("Thinking..."), fakea2a.TextChunks("The answer ", "is 42."), fakea2a.Completed("done")}, "The answer is 42.", 0},
		{"text artifact", []any{fakea2a.Working("Thinking..."), dt.TextArtifact("answer.md", "text/markdown", "# 42\nThe answer."), fakea2a.Completed("done")}, "# 42\nThe answer.", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := dt.StreamingFake(t, tc.steps...)
			e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("generic", srv)})
			rec := e.Record(t, "run-g")
			res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-g", Agent: "generic", Objective: "What is the answer?"})
			// A bare final status such as "done" does not hide the output:
			// it follows it, as the remote's last word.
			if res.Status != delegation.StatusCompleted || res.Summary != tc.want+"\n\ndone" || len(res.Messages) != 2 || res.Messages[0].Text != tc.want || res.Messages[1].Text != "done" {
				t.Fatalf("result %+v", res)
			}
			if len(res.Artifacts) != tc.arts || (tc.arts > 0 && res.Artifacts[0].URI == "") {
				t.Errorf("artifacts %+v", res.Artifacts)
			}
			evs := rec.WaitTerminals(t, 1)
			dt.CheckLifecycle(t, evs)
			if fin := dt.OfKind(evs, delegation.DelegationFinished); len(fin) != 1 || fin[0].Text != res.Summary {
				t.Errorf("finished %+v", fin)
			}
		})
	}
}
