package delegator_test

import (
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// answerEach answers every input_required question of the recorded run, in
// order, with the answers given, and returns the questions seen.
func answerEach(t *testing.T, e *env.Env, rec *dt.Recorder, runID string, answers ...string) []string {
	t.Helper()
	var questions []string
	for i, a := range answers {
		evs := rec.WaitFor(t, "question", func(evs []delegation.DelegationEvent) bool {
			return len(dt.OfKind(evs, delegation.DelegationInputRequired)) > i
		})
		ir := dt.OfKind(evs, delegation.DelegationInputRequired)[i]
		questions = append(questions, ir.Text)
		// The delegation accepts the answer from the moment the question is out.
		dt.WaitUntil(t, "the delegation to wait for input", func() bool {
			return e.D.AnswerInput(dt.Ctx(t), runID, ir.DelegationID, a) == nil
		})
	}
	return questions
}

// TestFollowUpStreamBeginningWithTheTask: per A2A a stream begins with the
// Task; a server that sends it on the follow-up while the task is still
// input-required must not end the follow-up. Before the fix the host took
// that snapshot for the remote's state, waited for another answer until
// max_timeout and cancelled the task (docs/design.md#event-mapping).
func TestFollowUpStreamBeginningWithTheTask(t *testing.T) {
	dt.CheckLeaks(t)
	for _, tc := range []struct {
		name      string
		streaming bool
	}{{"streaming", true}, {"polling", false}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := dt.Fake(t, fakea2a.Options{Name: "research", Streaming: tc.streaming, FollowUpSnapshot: true, Behavior: fakea2a.Script(fakea2a.Steps(
				fakea2a.InputRequired("Which year?"), fakea2a.Working("Using the year."), fakea2a.TextChunks("Report for 2024."), fakea2a.Completed(""))...)})
			e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) { s.Policy.AllowInputRequired = true })})
			rec := e.Record(t, "run-fu")
			done := make(chan delegation.Result, 1)
			go func() {
				done <- e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-fu", Agent: "research", Objective: "Write the yearly report."})
			}()
			if qs := answerEach(t, e, rec, "run-fu", "2024"); qs[0] != "Which year?" {
				t.Errorf("question %q", qs[0])
			}
			res := <-done
			if res.Status != delegation.StatusCompleted || res.Summary != "Report for 2024." {
				t.Fatalf("result %+v err %+v\nlog:\n%s", res, res.Error, e.Logs.String())
			}
			evs := rec.WaitTerminals(t, 1)
			dt.CheckLifecycle(t, evs)
			if n := len(dt.OfKind(evs, delegation.DelegationInputRequired)); n != 1 {
				t.Errorf("%d input_required events, want 1 (the leading snapshot restates the question): %s", n, dt.KindsOf(evs))
			}
			if len(srv.RequestsFor("CancelTask")) != 0 {
				t.Errorf("the task was cancelled: %+v", srv.RequestsFor("CancelTask"))
			}
		})
	}
}

// A second question after the answer is a state reached after the send: it
// is surfaced, answered, and the task completes.
func TestFollowUpSecondQuestion(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.Fake(t, fakea2a.Options{Name: "research", Streaming: true, FollowUpSnapshot: true, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.InputRequired("Which year?"), fakea2a.InputRequired("Which month?"), fakea2a.TextChunks("Report for May 2024."), fakea2a.Completed(""))...)})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) { s.Policy.AllowInputRequired = true })})
	rec := e.Record(t, "run-fu2")
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-fu2", Agent: "research", Objective: "Write the monthly report."})
	}()
	qs := answerEach(t, e, rec, "run-fu2", "2024", "May")
	if qs[0] != "Which year?" || qs[1] != "Which month?" {
		t.Errorf("questions %q", qs)
	}
	res := <-done
	if res.Status != delegation.StatusCompleted || res.Summary != "Report for May 2024." {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	dt.CheckLifecycle(t, evs)
	var texts []string
	for _, r := range srv.RequestsFor("SendStreamingMessage")[1:] {
		texts = append(texts, r.MessageText)
	}
	if len(texts) != 2 || texts[0] != "2024" || texts[1] != "May" {
		t.Errorf("follow-ups %q", texts)
	}
}

// An answer the remote refuses as busy — a2a-go's server answers "task
// execution is already in progress" while the turn that asked the question
// is still winding down — is sent again after a backoff: the delegation
// completes, and the remote got the refused sends and the accepted one.
// Before, the refusal ended the delegation stream_interrupted.
func TestAnswerRefusedAsBusyIsSentAgain(t *testing.T) {
	dt.CheckLeaks(t)
	for _, tc := range []struct {
		name      string
		streaming bool
	}{{"streaming", true}, {"polling", false}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := dt.Fake(t, fakea2a.Options{Name: "research", Streaming: tc.streaming, BusyFollowUps: 2, Behavior: fakea2a.Script(fakea2a.Steps(
				fakea2a.InputRequired("Which year?"), fakea2a.TextChunks("Report for 2024."), fakea2a.Completed(""))...)})
			e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) { s.Policy.AllowInputRequired = true })})
			rec := e.Record(t, "run-busy")
			done := make(chan delegation.Result, 1)
			go func() {
				done <- e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-busy", Agent: "research", Objective: "Write the yearly report."})
			}()
			answerEach(t, e, rec, "run-busy", "2024")
			res := <-done
			if res.Status != delegation.StatusCompleted || res.Summary != "Report for 2024." {
				t.Fatalf("result %+v err %+v\nlog:\n%s", res, res.Error, e.Logs.String())
			}
			dt.CheckLifecycle(t, rec.WaitTerminals(t, 1))
			method := "SendMessage"
			if tc.streaming {
				method = "SendStreamingMessage"
			}
			// The task's first message, then the answer three times.
			if n := len(srv.RequestsFor(method)); n != 4 {
				t.Errorf("%d %s calls, want 4: the task, and the answer refused twice then accepted", n, method)
			}
		})
	}
}
