package a2adelegation

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/internal/fakea2a"
)

func TestDelegateStreamingHappyPath(t *testing.T) {
	checkLeaks(t)
	srv := streamingFake(t,
		fakea2a.Working("Searching official A2A SDK examples..."),
		fakea2a.TextChunks("Comparing task ", "streaming and ", "artifact behavior."),
		textArtifact("a2a-sdk-notes.md", "text/markdown", "# Notes\nARTIFACT-BODY"),
		adaptorResultArtifact("Official a2a-go exposes SendStreamingMessage."),
		fakea2a.Completed(""),
	)
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv)})
	rec := e.record(t, "run-1")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-1", ParentToolCallID: "toolu-1", Agent: "research", Objective: "Find the streaming API."})
	if res.Status != StatusCompleted || res.Error != nil {
		t.Fatalf("result %+v", res)
	}
	if res.DelegationID == "" || res.RemoteTaskID == "" || res.RemoteContextID == "" || res.RawTask == nil || res.RawTask.TaskID != res.RemoteTaskID || res.RemoteProtocol != "a2a" || res.Agent != "research" {
		t.Errorf("identifiers missing: %+v", res)
	}
	if res.Summary != "Official a2a-go exposes SendStreamingMessage." {
		t.Errorf("summary %q", res.Summary)
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].Name != "a2a-sdk-notes.md" || res.Artifacts[0].MimeType != "text/markdown" ||
		res.Artifacts[0].URI != ArtifactURI(res.DelegationID, res.Artifacts[0].ID) {
		t.Errorf("artifacts %+v", res.Artifacts)
	}
	if len(res.Messages) == 0 || res.Messages[0].Text != "Comparing task streaming and artifact behavior." {
		t.Errorf("messages %+v", res.Messages)
	}
	evs := rec.waitTerminals(t, 1)
	checkLifecycle(t, evs)
	kinds := []DelegationEventKind{}
	for _, ev := range evs {
		if ev.DelegationID != res.DelegationID || ev.RunID != "run-1" || ev.ParentToolCallID != "toolu-1" || ev.AgentKey != "research" || ev.AgentName != "Research Agent" {
			t.Errorf("event header %+v", ev)
		}
		if len(kinds) == 0 || kinds[len(kinds)-1] != ev.Kind {
			kinds = append(kinds, ev.Kind)
		}
	}
	want := []DelegationEventKind{DelegationStarted, DelegationStatus, DelegationTextStart, DelegationTextDelta, DelegationTextEnd, DelegationArtifactCreated, DelegationFinished}
	if !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	var text string
	for _, ev := range ofKind(evs, DelegationTextDelta) {
		text += ev.Delta
	}
	if text != "Comparing task streaming and artifact behavior." {
		t.Errorf("deltas %q", text)
	}
	fin := ofKind(evs, DelegationFinished)[0]
	if fin.RemoteTaskID != res.RemoteTaskID || fin.RemoteContextID != res.RemoteContextID {
		t.Errorf("finished without remote ids: %+v", fin)
	}
	if fp, _ := evs[0].Raw["card_fingerprint"].(string); len(fp) != 64 {
		t.Errorf("started without card fingerprint: %+v", evs[0].Raw)
	}
	// The artifact is served by reference.
	art := ofKind(evs, DelegationArtifactCreated)[0].Artifact
	h := httptest.NewServer(e.svc.ArtifactHandler())
	defer h.Close()
	resp, err := http.Get(h.URL + "/agui/runs/run-1/delegations/" + res.DelegationID + "/artifacts/" + art.ID)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "# Notes\nARTIFACT-BODY" || resp.Header.Get("Content-Type") != "text/markdown" {
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
	recs := e.svc.Audit().ListRun("run-1")
	if len(recs) != 1 || recs[0].RemoteTaskID != res.RemoteTaskID || recs[0].CardFingerprint == "" || recs[0].Status != StatusCompleted || len(recs[0].Events) == 0 || recs[0].ParentToolCallID != "toolu-1" {
		t.Errorf("audit %+v", recs)
	}
	for _, ev := range evs {
		if strings.Contains(ev.Text+ev.Delta, "ARTIFACT-BODY") {
			t.Errorf("artifact content inlined into an event: %+v", ev)
		}
	}
	noSecret(t, "events", evs)
	noSecret(t, "result", res)
	noSecret(t, "logs", e.logs.String())
}

func TestDelegateNonStreamingFallbackPolls(t *testing.T) {
	checkLeaks(t)
	srv := fake(t, fakea2a.Options{Name: "legacy", Streaming: false, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.AwaitRelease(), fakea2a.Working("Looking it up"), fakea2a.TextChunks("Legacy ", "answer."), fakea2a.Completed("Legacy result"))...)})
	e := newEnv(t, []RemoteAgentSpec{specFor("legacy", srv)})
	rec := e.record(t, "run-p")
	done := make(chan Result, 1)
	go func() {
		done <- e.svc.Delegate(tctx(t), Request{RunID: "run-p", Agent: "legacy", Objective: "Old school task."})
	}()
	st := rec.waitKind(t, DelegationStatus, "polling")
	if st.Raw["reason"] != string(CodeCapabilityUnsupported) {
		t.Errorf("degraded status %+v", st)
	}
	sub := rec.waitFor(t, "a task status", func(evs []DelegationEvent) bool {
		for _, ev := range evs {
			if ev.Kind == DelegationStatus && ev.RemoteTaskID != "" {
				return true
			}
		}
		return false
	})
	srv.Release(srvTaskID(t, sub))
	res := <-done
	if res.Status != StatusCompleted || res.Summary != "Legacy result" {
		t.Fatalf("result %+v", res)
	}
	evs := rec.waitTerminals(t, 1)
	checkLifecycle(t, evs)
	for _, k := range []DelegationEventKind{DelegationTextStart, DelegationTextDelta, DelegationTextEnd} {
		if n := len(ofKind(evs, k)); n != 0 {
			t.Errorf("%d fake %s events in polling mode", n, k)
		}
	}
	sends := srv.RequestsFor("SendMessage")
	if len(sends) != 1 || !sends[0].ReturnImmediately {
		t.Errorf("sends %+v", sends)
	}
	if len(srv.RequestsFor("SendStreamingMessage")) != 0 || len(srv.RequestsFor("GetTask")) == 0 {
		t.Errorf("requests %+v", srv.Requests())
	}
	if recs := e.svc.Audit().ListRun("run-p"); len(recs) != 1 || recs[0].Mode != "polling" {
		t.Errorf("audit %+v", recs)
	}
}

func srvTaskID(t *testing.T, evs []DelegationEvent) a2aTaskID {
	for _, ev := range evs {
		if ev.RemoteTaskID != "" {
			return a2aTaskID(ev.RemoteTaskID)
		}
	}
	t.Fatal("no remote task id yet")
	return ""
}

func TestDelegateRemoteFailure(t *testing.T) {
	checkLeaks(t)
	srv := streamingFake(t, fakea2a.Working("Trying"), fakea2a.Failed("quota exceeded"))
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv)})
	rec := e.record(t, "run-f")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-f", Agent: "research", Objective: "x"})
	if res.Status != StatusFailed || res.Error == nil || res.Error.Code != CodeRemoteFailed || res.Error.RemoteStatus != "failed" || !strings.Contains(res.Error.Message, "quota exceeded") || res.RemoteTaskID == "" {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.waitTerminals(t, 1)
	checkLifecycle(t, evs)
	f := ofKind(evs, DelegationFailed)
	if len(f) != 1 || f[0].Error == nil || f[0].Error.RemoteStatus != "failed" || f[0].Error.Code != CodeRemoteFailed {
		t.Errorf("failed events %+v", f)
	}
}

func TestDelegateRemoteRejected(t *testing.T) {
	srv := streamingFake(t, fakea2a.Rejected("not my job"))
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv)})
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-r", Agent: "research", Objective: "x"})
	if res.Error == nil || res.Error.Code != CodeRemoteRejected || res.Error.Retryable {
		t.Fatalf("result %+v", res)
	}
}

func TestDelegateRemoteTimeoutCancelsRemote(t *testing.T) {
	checkLeaks(t)
	srv := streamingFake(t, fakea2a.Working("Thinking"), fakea2a.Hang())
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv, func(s *RemoteAgentSpec) { s.Policy.MaxTimeout = 300 * timeMillisecond; s.Tenant = "acme" })})
	rec := e.record(t, "run-t")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-t", Agent: "research", Objective: "x", Constraints: Constraints{TimeoutSeconds: 3600}})
	if res.Error == nil || res.Error.Code != CodeRemoteTimeout || !res.Error.Retryable || res.Error.RemoteStatus != "working" || res.Status != StatusFailed {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.waitTerminals(t, 1)
	checkLifecycle(t, evs)
	cancels := srv.RequestsFor("CancelTask")
	if len(cancels) != 1 || string(cancels[0].TaskID) != res.RemoteTaskID || cancels[0].Metadata["reason"] != "host_timeout" || cancels[0].Tenant != "acme" {
		t.Errorf("cancel requests %+v", cancels)
	}
}

func TestDelegateParentCancellationCascades(t *testing.T) {
	checkLeaks(t)
	srv := streamingFake(t, fakea2a.Working("Working hard"), fakea2a.Hang())
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv, func(s *RemoteAgentSpec) { s.Tenant = "acme" })})
	rec := e.record(t, "run-c")
	ctx, cancel := contextWithCancel(tctx(t))
	done := make(chan Result, 1)
	go func() { done <- e.svc.Delegate(ctx, Request{RunID: "run-c", Agent: "research", Objective: "x"}) }()
	rec.waitKind(t, DelegationStatus, "working")
	cancel()
	res := <-done
	if res.Status != StatusCancelled || res.Error == nil || res.Error.Code != CodeCancelled {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.waitTerminals(t, 1)
	checkLifecycle(t, evs)
	if c := ofKind(evs, DelegationCancelled); len(c) != 1 {
		t.Errorf("cancelled events: %s", kindsOf(evs))
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
	if st := e.svc.Stats(); st.ActiveDelegations != 0 || st.CleanupWatchers != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestDelegateCancelUnconfirmedKeepsWatcher(t *testing.T) {
	checkLeaks(t)
	srv := fake(t, fakea2a.Options{Streaming: true, Cancel: fakea2a.CancelRefuse, Behavior: fakea2a.Script(fakea2a.Working("busy"), fakea2a.Hang())})
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv)}, func(c *Config) { c.CleanupAttempts = 100; c.CleanupInterval = 10 * timeMillisecond })
	rec := e.record(t, "run-w")
	ctx, cancel := contextWithCancel(tctx(t))
	done := make(chan Result, 1)
	go func() { done <- e.svc.Delegate(ctx, Request{RunID: "run-w", Agent: "research", Objective: "x"}) }()
	rec.waitKind(t, DelegationStatus, "working")
	cancel()
	res := <-done
	if res.Status != StatusCancelled || res.Error == nil || res.Error.Code != CodeCancelPending {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.waitTerminals(t, 1)
	checkLifecycle(t, evs)
	rec.waitKind(t, DelegationStatus, string(CodeCancelPending))
	if st := e.svc.Stats(); st.CleanupWatchers != 1 {
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
	waitUntil(t, "watcher retries", func() bool { return cleanups() >= 2 })
	// Close stops the watcher (checked by checkLeaks).
}

func TestDelegateCancelHangIsBounded(t *testing.T) {
	checkLeaks(t)
	srv := fake(t, fakea2a.Options{Streaming: true, Cancel: fakea2a.CancelHang, Behavior: fakea2a.Script(fakea2a.Working("busy"), fakea2a.Hang())})
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv)}, func(c *Config) { c.CancelTimeout = 200 * timeMillisecond; c.CleanupInterval = timeHour })
	rec := e.record(t, "run-h")
	ctx, cancel := contextWithCancel(tctx(t))
	done := make(chan Result, 1)
	go func() { done <- e.svc.Delegate(ctx, Request{RunID: "run-h", Agent: "research", Objective: "x"}) }()
	rec.waitKind(t, DelegationStatus, "working")
	cancel()
	res := <-done
	if res.Error == nil || res.Error.Code != CodeCancelPending {
		t.Fatalf("result %+v", res)
	}
	evs := rec.waitTerminals(t, 1)
	if c := ofKind(evs, DelegationCancelled); len(c) != 1 || c[0].Status != "cancel_pending" {
		t.Errorf("events %s", kindsOf(evs))
	}
}

func TestDelegateStreamDisconnectRecovers(t *testing.T) {
	checkLeaks(t)
	srv := streamingFake(t, fakea2a.Working("first part"), fakea2a.DropStream(), fakea2a.AwaitSubscribe(),
		fakea2a.TextChunks("after ", "reconnect"), fakea2a.Completed("recovered"))
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv)})
	rec := e.record(t, "run-d")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-d", Agent: "research", Objective: "x"})
	if res.Status != StatusCompleted || res.Summary != "recovered" {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.waitTerminals(t, 1)
	checkLifecycle(t, evs)
	if len(ofKind(evs, DelegationStatus)) == 0 {
		t.Fatal("no status")
	}
	found := false
	for _, ev := range evs {
		found = found || (ev.Kind == DelegationStatus && ev.Status == string(CodeStreamInterrupted))
	}
	if !found {
		t.Errorf("no stream_interrupted status: %s", kindsOf(evs))
	}
	if len(srv.RequestsFor("SubscribeToTask")) == 0 {
		t.Errorf("no resubscription: %+v", srv.Requests())
	}
	if recs := e.svc.Audit().ListRun("run-d"); len(recs) != 1 || recs[0].Recovered != 1 {
		t.Errorf("audit %+v", recs)
	}
}

func TestDelegateStreamCutUnrecoverable(t *testing.T) {
	checkLeaks(t)
	// The stream closes cleanly before a terminal state and the raw task is
	// unknown to subscribe/get: recovery fails with stream_interrupted.
	srv := fake(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Behavior{RawStream: []string{
		fakea2a.RawTask("task-x", "ctx-x", "TASK_STATE_SUBMITTED"),
		fakea2a.RawStatus("task-x", "ctx-x", "TASK_STATE_WORKING", "half way"),
	}}})
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv)}, func(c *Config) { c.RecoverAttempts = 2 })
	rec := e.record(t, "run-u")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-u", Agent: "research", Objective: "x"})
	if res.Error == nil || res.Error.Code != CodeStreamInterrupted || !res.Error.Retryable || res.RemoteTaskID != "task-x" {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	checkLifecycle(t, rec.waitTerminals(t, 1))
}

func TestDelegateDuplicateTerminalEvents(t *testing.T) {
	checkLeaks(t)
	srv := fake(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Behavior{RawStream: []string{
		fakea2a.RawTask("task-d", "ctx-d", "TASK_STATE_SUBMITTED"),
		fakea2a.RawStatus("task-d", "ctx-d", "TASK_STATE_WORKING", "go"),
		fakea2a.RawStatus("task-d", "ctx-d", "TASK_STATE_WORKING", "go"),
		fakea2a.RawArtifact("task-d", "ctx-d", ArtifactAssistantOutput, "Hello ", false, false),
		fakea2a.RawArtifact("task-d", "ctx-d", ArtifactAssistantOutput, "world", true, true),
		fakea2a.RawArtifact("task-d", "ctx-d", ArtifactAssistantOutput, "world", true, true),
		fakea2a.RawStatus("task-d", "ctx-d", "TASK_STATE_COMPLETED", "done"),
		fakea2a.RawStatus("task-d", "ctx-d", "TASK_STATE_COMPLETED", "done"),
		fakea2a.RawStatus("task-d", "ctx-d", "TASK_STATE_FAILED", "late"),
	}}})
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv)})
	rec := e.record(t, "run-dup")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-dup", Agent: "research", Objective: "x"})
	if res.Status != StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	evs := rec.waitTerminals(t, 1)
	checkLifecycle(t, evs)
	var text string
	for _, ev := range ofKind(evs, DelegationTextDelta) {
		text += ev.Delta
	}
	working := 0
	for _, ev := range ofKind(evs, DelegationStatus) {
		if ev.Status == "working" {
			working++
		}
	}
	if text != "Hello world" || working != 1 {
		t.Errorf("text %q, events %s", text, kindsOf(evs))
	}
}

func TestDelegateTerminalBeforeStarted(t *testing.T) {
	srv := fake(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Behavior{RawStream: []string{
		fakea2a.RawStatus("task-q", "ctx-q", "TASK_STATE_COMPLETED", "instant"),
	}}})
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv)})
	rec := e.record(t, "run-q")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-q", Agent: "research", Objective: "x"})
	if res.Status != StatusCompleted || res.Summary != "instant" {
		t.Fatalf("result %+v", res)
	}
	evs := rec.waitTerminals(t, 1)
	checkLifecycle(t, evs)
	if evs[0].Kind != DelegationStarted || evs[len(evs)-1].Kind != DelegationFinished {
		t.Errorf("events %s", kindsOf(evs))
	}
}

func TestDelegateArtifactTooLarge(t *testing.T) {
	checkLeaks(t)
	srv := streamingFake(t, fakea2a.HugeArtifact("huge.bin", 64<<10), textArtifact("small.txt", "text/plain", "ok"), fakea2a.Completed("done"))
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv, func(s *RemoteAgentSpec) { s.Policy.MaxArtifactBytes = 4096 })})
	rec := e.record(t, "run-big")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-big", Agent: "research", Objective: "x"})
	if res.Status != StatusCompleted || res.Error != nil || len(res.Artifacts) != 2 {
		t.Fatalf("result %+v", res)
	}
	big, small := res.Artifacts[0], res.Artifacts[1]
	if big.Error == nil || big.Error.Code != CodeArtifactTooLarge || big.URI != "" || small.Error != nil || small.URI == "" {
		t.Errorf("artifacts %+v %+v", big, small)
	}
	evs := rec.waitTerminals(t, 1)
	arts := ofKind(evs, DelegationArtifactCreated)
	if len(arts) != 2 || arts[0].Artifact.Error == nil || arts[0].Artifact.Error.Code != CodeArtifactTooLarge || arts[0].Artifact.SizeBytes != 64<<10 {
		t.Errorf("artifact events %+v", arts)
	}
	for _, ev := range evs {
		if len(ev.Text)+len(ev.Delta) > 4096 {
			t.Errorf("huge content inlined: %s", ev.Kind)
		}
	}
}

func TestDelegateInputRequiredAnswered(t *testing.T) {
	checkLeaks(t)
	srv := streamingFake(t, fakea2a.InputRequired("Which year?"), fakea2a.TextChunks("Answer for the year."), fakea2a.Completed("Done for 2024"))
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv, func(s *RemoteAgentSpec) { s.Policy.AllowInputRequired = true })})
	rec := e.record(t, "run-i")
	h := httptest.NewServer(e.svc.InputHandler())
	defer h.Close()
	defer h.Client().CloseIdleConnections()
	done := make(chan Result, 1)
	go func() { done <- e.svc.Delegate(tctx(t), Request{RunID: "run-i", Agent: "research", Objective: "x"}) }()
	ir := rec.waitKind(t, DelegationInputRequired, "")
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
	if res.Status != StatusCompleted || res.Summary != "Done for 2024" {
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
	checkLifecycle(t, rec.waitTerminals(t, 1))
}

func TestAnswerInputNotWaiting(t *testing.T) {
	srv := streamingFake(t, fakea2a.Working("busy"), fakea2a.AwaitRelease(), fakea2a.Completed("ok"))
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv)})
	rec := e.record(t, "run-nw")
	done := make(chan Result, 1)
	go func() { done <- e.svc.Delegate(tctx(t), Request{RunID: "run-nw", Agent: "research", Objective: "x"}) }()
	st := rec.waitKind(t, DelegationStatus, "working")
	if err := e.svc.AnswerInput(tctx(t), "run-nw", st.DelegationID, "hi"); err != ErrNotWaitingForInput {
		t.Errorf("AnswerInput = %v", err)
	}
	if err := e.svc.AnswerInput(tctx(t), "run-nw", st.DelegationID, " "); err != ErrEmptyAnswer {
		t.Errorf("AnswerInput = %v", err)
	}
	srv.Release(a2aTaskID(st.RemoteTaskID))
	<-done
}

func TestDelegateInputRequiredUnsupported(t *testing.T) {
	checkLeaks(t)
	srv := streamingFake(t, fakea2a.InputRequired("Need your password"), fakea2a.Completed("never"))
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv)})
	rec := e.record(t, "run-iu")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-iu", Agent: "research", Objective: "x"})
	if res.Error == nil || res.Error.Code != CodeInputRequiredUnsupported || res.Error.RemoteStatus != "input-required" {
		t.Fatalf("result %+v", res)
	}
	evs := rec.waitTerminals(t, 1)
	checkLifecycle(t, evs)
	if len(ofKind(evs, DelegationInputRequired)) != 0 {
		t.Errorf("input_required surfaced against policy")
	}
	if c := srv.RequestsFor("CancelTask"); len(c) != 1 || c[0].Metadata["reason"] != "input_required_unsupported" {
		t.Errorf("cancel %+v", c)
	}
}

func TestDelegateInputTimeout(t *testing.T) {
	checkLeaks(t)
	srv := streamingFake(t, fakea2a.InputRequired("Which year?"), fakea2a.Completed("never"))
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv, func(s *RemoteAgentSpec) {
		s.Policy.AllowInputRequired = true
		s.Policy.MaxTimeout = 300 * timeMillisecond
	})})
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-it", Agent: "research", Objective: "x"})
	if res.Error == nil || res.Error.Code != CodeInputRequired || res.Status != StatusInputRequired {
		t.Fatalf("result %+v", res)
	}
}

func TestDelegateAgentNotFoundMakesNoRequest(t *testing.T) {
	srv := streamingFake(t, fakea2a.Completed("x"))
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv)})
	rec := e.record(t, "run-nf")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-nf", Agent: "unknown", Objective: "x"})
	if res.Error == nil || res.Error.Code != CodeAgentNotFound || res.Error.Retryable {
		t.Fatalf("result %+v", res)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d outbound requests", n)
	}
	checkLifecycle(t, rec.waitTerminals(t, 1))
}

func TestDelegateConcurrencyLimit(t *testing.T) {
	checkLeaks(t)
	srv := streamingFake(t, fakea2a.Working("busy"), fakea2a.AwaitRelease(), fakea2a.Completed("ok"))
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv, func(s *RemoteAgentSpec) { s.Policy.MaxConcurrentPerRun = 1 })})
	rec := e.record(t, "run-cl")
	done := make(chan Result, 1)
	go func() { done <- e.svc.Delegate(tctx(t), Request{RunID: "run-cl", Agent: "research", Objective: "x"}) }()
	st := rec.waitKind(t, DelegationStatus, "working")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-cl", Agent: "research", Objective: "y"})
	if res.Error == nil || res.Error.Code != CodeConcurrencyLimit || !res.Error.Retryable {
		t.Errorf("second delegation %+v", res)
	}
	// Another run is not limited by this run's slot.
	other := make(chan Result, 1)
	go func() { other <- e.svc.Delegate(tctx(t), Request{RunID: "run-cl2", Agent: "research", Objective: "z"}) }()
	srv.Release(a2aTaskID(st.RemoteTaskID))
	if r := <-done; r.Status != StatusCompleted {
		t.Errorf("first %+v", r)
	}
	waitUntil(t, "second run's task", func() bool { return len(srv.Tasks()) == 2 })
	for _, id := range srv.Tasks() {
		srv.Release(id)
	}
	if r := <-other; r.Status != StatusCompleted {
		t.Errorf("other run %+v", r)
	}
}

func TestDelegateContextPolicies(t *testing.T) {
	srv := streamingFake(t, fakea2a.Completed("ok"))
	for _, tc := range []struct {
		policy   string
		sameRun  bool // second delegation in the same run
		wantSame bool
	}{
		{ContextEphemeral, true, false},
		{ContextStickyPerRunAgent, true, true},
		{ContextStickyPerRunAgent, false, false},
		{ContextStickyPerParentThreadAgent, false, true},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			e := newEnv(t, []RemoteAgentSpec{specFor("research", srv, func(s *RemoteAgentSpec) { s.Policy.ContextPolicy = tc.policy })})
			r1 := e.svc.Delegate(tctx(t), Request{RunID: "run-a", SessionKey: "chat-1", Agent: "research", Objective: "1"})
			run2 := "run-a"
			if !tc.sameRun {
				run2 = "run-b"
			}
			r2 := e.svc.Delegate(tctx(t), Request{RunID: run2, SessionKey: "chat-1", Agent: "research", Objective: "2"})
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
	srv := fake(t, fakea2a.Options{CardBody: []byte(`{"name": "x"}`)})
	e := newEnv(t, []RemoteAgentSpec{specFor("broken", srv)})
	rec := e.record(t, "run-mc")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-mc", Agent: "broken", Objective: "x"})
	if res.Error == nil || res.Error.Code != CodeAgentUnavailable || res.Error.Retryable {
		t.Fatalf("result %+v", res)
	}
	checkLifecycle(t, rec.waitTerminals(t, 1))
	for _, r := range srv.Requests() {
		if r.Method != "AgentCard" {
			t.Errorf("request beyond the card: %+v", r)
		}
	}
}

func TestDelegateAuthFailureRedacted(t *testing.T) {
	srv := fake(t, fakea2a.Options{Streaming: true, RequireToken: "another-token-123456", Behavior: fakea2a.Script(fakea2a.Completed("x"))})
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv)})
	rec := e.record(t, "run-auth")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-auth", Agent: "research", Objective: "x"})
	if res.Error == nil || res.Error.Code != CodeAgentUnavailable || res.Error.Retryable {
		t.Fatalf("result %+v", res)
	}
	evs := rec.waitTerminals(t, 1)
	noSecret(t, "events", evs)
	noSecret(t, "result", res)
	noSecret(t, "logs", e.logs.String())
	noSecret(t, "audit", e.svc.Audit().ListRun("run-auth"))
}

func TestCloseCancelsActiveDelegations(t *testing.T) {
	checkLeaks(t)
	srv := streamingFake(t, fakea2a.Working("busy"), fakea2a.Hang())
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv)})
	rec := e.record(t, "run-x")
	done := make(chan Result, 1)
	go func() { done <- e.svc.Delegate(tctx(t), Request{RunID: "run-x", Agent: "research", Objective: "x"}) }()
	rec.waitKind(t, DelegationStatus, "working")
	if err := e.svc.Close(tctx(t)); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Status != StatusCancelled {
		t.Errorf("result %+v", res)
	}
	if cs := srv.RequestsFor("CancelTask"); len(cs) != 1 || cs[0].Metadata["reason"] != "host_shutdown" {
		t.Errorf("cancel %+v", cs)
	}
	if r := e.svc.Delegate(tctx(t), Request{RunID: "run-x", Agent: "research", Objective: "x"}); r.Error == nil || r.Error.Code != CodeAgentUnavailable {
		t.Errorf("after Close: %+v", r)
	}
}

func TestCapabilityUnsupported(t *testing.T) {
	legacy := fake(t, fakea2a.Options{Streaming: false, Behavior: fakea2a.Script(fakea2a.Completed("x"))})
	e := newEnv(t, []RemoteAgentSpec{
		specFor("strict", legacy, func(s *RemoteAgentSpec) { s.Policy.RequireStreaming = true }),
	})
	for _, key := range []string{"strict"} { // AG-UI agents are delegated to: agui_test.go
		res := e.svc.Delegate(tctx(t), Request{RunID: "run-cap", Agent: key, Objective: "x"})
		if res.Error == nil || res.Error.Code != CodeCapabilityUnsupported {
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
	srv := streamingFake(t, fakea2a.TextChunks("hi"), fakea2a.Completed("ok"))
	e := newEnv(t, []RemoteAgentSpec{{Key: "direct", Protocol: ProtocolA2A, EndpointURL: srv.URL() + "/jsonrpc", AuthRef: "env:" + secretEnv,
		Capabilities: RemoteCapabilities{Streaming: true}, Policy: DefaultPolicy()}})
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-e", Agent: "direct", Objective: "x"})
	if res.Status != StatusCompleted || res.Summary != "ok" {
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
	checkLeaks(t)
	srv := streamingFake(t,
		fakea2a.Working("working"),
		fakea2a.Artifact(fakea2a.ArtifactSpec{ID: "art-" + secretToken, Name: "notes-" + secretToken + ".md", Text: "body"}),
		fakea2a.Completed("done"),
	)
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv)})
	rec := e.record(t, "run-echo")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-echo", Agent: "research", Objective: "x"})
	if res.Status != StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	rec.waitTerminals(t, 1)
	noSecret(t, "bus events", rec.all())
	noSecret(t, "tool result", res)
	recs := e.svc.Audit().ListRun("run-echo")
	noSecret(t, "audit", recs)
}
