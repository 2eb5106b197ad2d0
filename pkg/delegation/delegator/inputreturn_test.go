package delegator_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// returnPolicy is the input_required policy "return".
func returnPolicy(mod ...func(*registry.DelegationPolicy)) func(*registry.RemoteAgentSpec) {
	return func(s *registry.RemoteAgentSpec) {
		s.Policy.InputRequired = registry.InputRequiredReturn
		for _, m := range mod {
			m(&s.Policy)
		}
	}
}

// checkParked asserts the result of a call that returned the remote's question.
func checkParked(t *testing.T, res delegation.Result, question string) {
	t.Helper()
	if res.Status != delegation.StatusInputRequired || res.Question != question || res.Continue == nil || res.Continue.DelegationID != res.DelegationID ||
		res.Error == nil || res.Error.Code != delegation.CodeInputRequired || !res.Error.Retryable || res.Error.RemoteStatus != "input-required" ||
		!strings.Contains(res.Error.Message, question) || !strings.Contains(res.Error.Message, res.DelegationID) {
		t.Fatalf("parked result %+v err %+v", res, res.Error)
	}
}

// TestInputRequiredReturnAndContinue: the call returns at once with the
// question; the parent continues the same delegation (same id, same remote
// task and context) with its answer; the UI sees one subagent: started,
// input_required, input_returned, input_provided, ... one terminal.
func TestInputRequiredReturnAndContinue(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.Fake(t, fakea2a.Options{Name: "research", Streaming: true, FollowUpSnapshot: true, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.Working("Drafting."), fakea2a.InputRequired("Which year?"), fakea2a.InputRequired("Which month?"),
		fakea2a.TextChunks("Report for May 2024."), fakea2a.Completed(""))...)})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, returnPolicy())})
	if err := e.D.BeginRun("run-r"); err != nil {
		t.Fatal(err)
	}
	rec := e.Record(t, "run-r")
	var progress []string
	first := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-r", ParentToolCallID: "toolu-1", Agent: "research", Objective: "Write the report.",
		OnEvent: func(ev delegation.DelegationEvent) { progress = append(progress, string(ev.Kind)) }})
	checkParked(t, first, "Which year?")
	if first.RemoteTaskID == "" || first.RemoteContextID == "" {
		t.Errorf("remote ids %+v", first)
	}
	if n := dt.CountTerminals(rec.All()); n != 0 {
		t.Fatalf("a parked delegation emitted %d terminal events", n)
	}
	if st := e.D.Stats(); st.ActiveDelegations != 1 {
		t.Errorf("stats %+v: the parked delegation must stay active", st)
	}
	// The UI cannot answer a question that went to the parent.
	if err := e.D.AnswerInput(dt.Ctx(t), "run-r", first.DelegationID, "2023"); err != delegator.ErrNotWaitingForInput {
		t.Errorf("AnswerInput on a parked delegation = %v", err)
	}
	progressAtPark := len(progress)

	second := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-r", ParentToolCallID: "toolu-2", Agent: "research", Objective: "2024", Continue: first.DelegationID})
	checkParked(t, second, "Which month?")
	if second.DelegationID != first.DelegationID || second.RemoteTaskID != first.RemoteTaskID || second.RemoteContextID != first.RemoteContextID {
		t.Errorf("the continued delegation changed identity: %+v vs %+v", second, first)
	}
	if len(progress) != progressAtPark {
		t.Errorf("the first call's progress hook was called after it returned: %v", progress[progressAtPark:])
	}
	third := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-r", ParentToolCallID: "toolu-3", Agent: "research", Objective: "May", Continue: first.DelegationID})
	if third.Status != delegation.StatusCompleted || third.Error != nil || third.Summary != "Report for May 2024." || third.Continue != nil || third.Question != "" ||
		third.DelegationID != first.DelegationID {
		t.Fatalf("final result %+v err %+v", third, third.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	var statuses []string
	for _, ev := range evs {
		if ev.DelegationID != first.DelegationID || ev.ParentToolCallID != "toolu-1" {
			t.Errorf("event of another subagent or tool call: %+v", ev)
		}
		if ev.Kind == delegation.DelegationStatus && (ev.Status == delegation.StatusInputReturned || ev.Status == delegation.StatusInputProvided) {
			statuses = append(statuses, ev.Status)
			if ev.Status == delegation.StatusInputProvided && ev.Raw["continue_tool_call_id"] == nil {
				t.Errorf("input_provided without the continuing call: %+v", ev)
			}
		}
	}
	if want := "input_returned input_provided input_returned input_provided"; strings.Join(statuses, " ") != want {
		t.Errorf("statuses %q, want %q", statuses, want)
	}
	if n := len(dt.OfKind(evs, delegation.DelegationInputRequired)); n != 2 {
		t.Errorf("%d input_required events, want 2: %s", n, dt.KindsOf(evs))
	}
	var answers []string
	for _, r := range srv.RequestsFor("SendStreamingMessage")[1:] {
		if string(r.TaskID) != first.RemoteTaskID {
			t.Errorf("follow-up to another task: %+v", r)
		}
		answers = append(answers, r.MessageText)
	}
	if strings.Join(answers, ",") != "2024,May" {
		t.Errorf("answers %q", answers)
	}
	if recs := e.D.Audit().ListRun("run-r"); len(recs) != 1 || recs[0].Status != delegation.StatusCompleted {
		t.Errorf("audit %+v", recs)
	}
	if st := e.D.Stats(); st.ActiveDelegations != 0 {
		t.Errorf("stats %+v", st)
	}
	// The delegation ended: it cannot be continued again.
	again := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-r", Agent: "research", Objective: "June", Continue: first.DelegationID})
	if again.Error == nil || again.Error.Code != delegation.CodeInvalidInput {
		t.Errorf("continue after the end: %+v", again)
	}
	if err := e.D.EndRun(dt.Ctx(t), "run-r"); err != nil {
		t.Fatal(err)
	}
	dt.NoSecret(t, "results", first, second, third)
	dt.NoSecret(t, "events", evs)
}

// TestContinueRefusals: a continue must name a parked delegation of the
// same run, to the same agent, with the answer only; every refusal is
// invalid_input and leaves the parked delegation as it was.
func TestContinueRefusals(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.InputRequired("Which year?"), fakea2a.TextChunks("Done."), fakea2a.Completed(""))
	busy := dt.Fake(t, fakea2a.Options{Name: "review", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(fakeWorkingThenRelease()...)...)})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, returnPolicy()), dt.SpecFor("review", busy, returnPolicy())})
	rec := e.Record(t, "run-c")
	parked := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-c", Agent: "research", Objective: "x"})
	checkParked(t, parked, "Which year?")
	running := make(chan delegation.Result, 1)
	go func() {
		running <- e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-c", Agent: "review", Objective: "y"})
	}()
	st := rec.WaitKind(t, delegation.DelegationStatus, "working")

	for name, req := range map[string]delegator.Request{
		"other run":     {RunID: "run-other", Agent: "research", Objective: "2024", Continue: parked.DelegationID},
		"unknown":       {RunID: "run-c", Agent: "research", Objective: "2024", Continue: "del-000000000000000000000000"},
		"not an id":     {RunID: "run-c", Agent: "research", Objective: "2024", Continue: "https://evil.example/x"},
		"other agent":   {RunID: "run-c", Agent: "review", Objective: "2024", Continue: parked.DelegationID},
		"running":       {RunID: "run-c", Agent: "review", Objective: "2024", Continue: st.DelegationID},
		"no answer":     {RunID: "run-c", Agent: "research", Objective: " ", Continue: parked.DelegationID},
		"with input":    {RunID: "run-c", Agent: "research", Objective: "2024", Continue: parked.DelegationID, Input: delegator.TaskInput{Prompt: "p"}},
		"with timeouts": {RunID: "run-c", Agent: "research", Objective: "2024", Continue: parked.DelegationID, Constraints: registry.Constraints{TimeoutSeconds: 5}},
	} {
		res := e.D.Delegate(dt.Ctx(t), req)
		if res.Status != delegation.StatusFailed || res.Error == nil || res.Error.Code != delegation.CodeInvalidInput || res.Continue != nil {
			t.Errorf("%s: %+v", name, res)
		}
		if strings.Contains(res.Error.Message, "evil.example") {
			t.Errorf("%s: the model's text echoed: %s", name, res.Error.Message)
		}
	}
	busy.Release(srvTaskID(t, []delegation.DelegationEvent{st}))
	<-running
	// Still parked: the right continue works.
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-c", Agent: "research", Objective: "2024", Continue: parked.DelegationID})
	if res.Status != delegation.StatusCompleted || res.Summary != "Done." {
		t.Fatalf("continue %+v", res)
	}
	dt.CheckLifecycle(t, rec.WaitTerminals(t, 2))
}

// TestParkedDelegationTimesOut: nobody continues it: after max_timeout the
// remote task is cancelled (input_timeout) and the subagent ends with one
// terminal event; it can no longer be continued.
func TestParkedDelegationTimesOut(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.InputRequired("Which year?"), fakea2a.Completed("never"))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, returnPolicy(func(p *registry.DelegationPolicy) { p.MaxTimeout = 200 * time.Millisecond }))})
	rec := e.Record(t, "run-t")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-t", Agent: "research", Objective: "x"})
	checkParked(t, res, "Which year?")
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	failed := dt.OfKind(evs, delegation.DelegationFailed)
	if len(failed) != 1 || failed[0].Error == nil || failed[0].Error.Code != delegation.CodeInputRequired {
		t.Fatalf("terminal %s", dt.KindsOf(evs))
	}
	dt.WaitUntil(t, "the remote cancel", func() bool { return len(srv.RequestsFor("CancelTask")) > 0 })
	if c := srv.RequestsFor("CancelTask")[0]; c.Metadata["reason"] != "input_timeout" || c.Metadata["delegation_id"] != res.DelegationID {
		t.Errorf("cancel %+v", c)
	}
	dt.WaitUntil(t, "the delegation to end", func() bool { return e.D.Stats().ActiveDelegations == 0 })
	if recs := e.D.Audit().ListRun("run-t"); len(recs) != 1 || recs[0].Status != delegation.StatusInputRequired {
		t.Errorf("audit %+v", recs)
	}
	late := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-t", Agent: "research", Objective: "2024", Continue: res.DelegationID})
	if late.Error == nil || late.Error.Code != delegation.CodeInvalidInput {
		t.Errorf("continue after the timeout: %+v", late)
	}
}

// TestParkedDelegationEndsWithTheRun: EndRun (and the delegator's Close)
// cancel parked delegations' remote tasks and wait for them.
func TestParkedDelegationEndsWithTheRun(t *testing.T) {
	dt.CheckLeaks(t)
	for _, how := range []string{"end run", "cancel run", "close"} {
		t.Run(how, func(t *testing.T) {
			srv := dt.StreamingFake(t, fakea2a.InputRequired("Which year?"), fakea2a.Completed("never"))
			e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, returnPolicy())})
			if err := e.D.BeginRun("run-e"); err != nil {
				t.Fatal(err)
			}
			rec := e.Record(t, "run-e")
			res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-e", Agent: "research", Objective: "x"})
			checkParked(t, res, "Which year?")
			reason := map[string]string{"end run": "parent_run_ended", "cancel run": "parent_cancelled", "close": "host_shutdown"}[how]
			switch how {
			case "end run":
				if err := e.D.EndRun(dt.Ctx(t), "run-e"); err != nil {
					t.Fatal(err)
				}
			case "cancel run":
				e.D.CancelRun("run-e")
			case "close":
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if err := e.D.Close(ctx); err != nil {
					t.Fatal(err)
				}
			}
			evs := rec.WaitTerminals(t, 1)
			dt.CheckLifecycle(t, evs)
			// a2a-go's server may refuse a cancel that races the end of the
			// execution that paused for input: then the cancellation is
			// pending and the cleanup watcher retries it.
			if c := dt.OfKind(evs, delegation.DelegationCancelled); len(c) != 1 || c[0].Error == nil ||
				(c[0].Error.Code != delegation.CodeCancelled && c[0].Error.Code != delegation.CodeCancelPending) {
				t.Errorf("terminal %s", dt.KindsOf(evs))
			}
			cancels := srv.RequestsFor("CancelTask")
			if len(cancels) == 0 || cancels[0].Metadata["reason"] != reason || cancels[0].Metadata["delegation_id"] != res.DelegationID {
				t.Errorf("cancels %+v, want reason %s", cancels, reason)
			}
			dt.WaitUntil(t, "the delegation to end", func() bool { return e.D.Stats().ActiveDelegations == 0 })
		})
	}
}

// TestParkedInputRouteRefuses: the UI's input route answers 409 for a
// question that went to the parent.
func TestParkedInputRouteRefuses(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.StreamingFake(t, fakea2a.InputRequired("Which year?"), fakea2a.Completed("never"))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, returnPolicy())})
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-h", Agent: "research", Objective: "x"})
	checkParked(t, res, "Which year?")
	h := httptest.NewServer(e.D.InputHandler())
	defer h.Close()
	defer h.Client().CloseIdleConnections()
	resp, err := h.Client().Post(h.URL+"/agui/runs/run-h/delegations/"+res.DelegationID+"/input", "application/json", strings.NewReader(`{"text":"2024"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("input route: HTTP %d, want 409", resp.StatusCode)
	}
}
