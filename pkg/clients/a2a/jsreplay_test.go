package a2a_test

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	client "github.com/seed0634/agentadaptor/pkg/clients/a2a"
)

// The recorded wire traffic of an @a2a-js/sdk server
// (tests/node/a2a-js-remote.mjs, internal/testkit/delegationtest/testdata/jsa2a)
// through the client: an answer carried only in artifacts, and a follow-up
// stream that begins with the Task still in input-required.
func TestJSRemoteReplayGeneric(t *testing.T) {
	leakCheck(t)
	r := dt.ReplayJSRemote(t)
	c := dial(t, r, client.Options{})
	s, err := c.SendStreaming(testCtx(t), client.SendRequest{Text: "What is the capital of France?"})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, s)
	var answer strings.Builder
	var artifacts []string
	for _, ev := range evs {
		if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			if a.Artifact.Name == "answer" {
				answer.WriteString(client.TextOf(a.Artifact.Parts))
			}
			if !a.Append {
				artifacts = append(artifacts, a.Artifact.Name)
			}
		}
	}
	if s.Err() != nil || s.State() != a2a.TaskStateCompleted || terminalCount(evs) != 1 || answer.String() != "The capital of France is Paris." || len(artifacts) != 2 {
		t.Fatalf("err=%v state=%s answer=%q artifacts=%q", s.Err(), s.State(), answer.String(), artifacts)
	}
	last := evs[len(evs)-1].(*a2a.TaskStatusUpdateEvent)
	if client.TextOf(last.Status.Message.Parts) != "done" {
		t.Errorf("final status %+v", last.Status)
	}
}

func TestJSRemoteReplayFollowUp(t *testing.T) {
	leakCheck(t)
	for _, withOption := range []bool{true, false} {
		r := dt.ReplayJSRemote(t)
		c := dial(t, r, client.Options{})
		ctx := testCtx(t)
		s, err := c.SendStreaming(ctx, client.SendRequest{Text: "Please ask me where to fly, then book it."})
		if err != nil {
			t.Fatal(err)
		}
		collect(t, s)
		if s.Err() != nil || s.State() != a2a.TaskStateInputRequired {
			t.Fatalf("first leg: err=%v state=%s", s.Err(), s.State())
		}
		var opts []client.StreamOptions
		if withOption {
			opts = append(opts, client.StreamOptions{FollowUpOf: s.State()})
		}
		s2, err := c.SendStreaming(ctx, client.SendRequest{Text: "Paris", TaskID: s.TaskID(), ContextID: s.ContextID()}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(t, s2)
		if task, ok := evs[0].(*a2a.Task); !ok || task.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("the recorded follow-up no longer begins with the input-required Task: %T", evs[0])
		}
		if !withOption {
			// What the host did before StreamOptions.FollowUpOf: the
			// snapshot ended the stream, the answer's outcome was lost.
			if len(evs) != 1 || s2.State() != a2a.TaskStateInputRequired {
				t.Errorf("without FollowUpOf: %d events, state %s", len(evs), s2.State())
			}
			continue
		}
		if s2.Err() != nil || s2.State() != a2a.TaskStateCompleted || terminalCount(evs) != 1 || s2.TaskID() != s.TaskID() {
			t.Fatalf("follow-up: err=%v state=%s", s2.Err(), s2.State())
		}
		for _, call := range r.Calls() {
			if call.Mismatch != "" {
				t.Errorf("request %s: %s", call.Exchange, call.Mismatch)
			}
		}
	}
}
