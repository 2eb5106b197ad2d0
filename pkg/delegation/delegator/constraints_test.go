package delegator_test

import (
	"errors"
	"fmt"
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// constraints.stream: false asks the remote for a non-streaming task (a
// send and polling, mode "polling") even when the agent streams; without it
// a streaming agent streams (docs/design.md#tool-contract).
func TestConstraintStreamFalsePollsAStreamingAgent(t *testing.T) {
	dt.CheckLeaks(t)
	no, yes := false, true
	for _, tt := range []struct {
		name   string
		stream *bool
		method string
		mode   string
	}{
		{"unset", nil, "SendStreamingMessage", "streaming"},
		{"stream true", &yes, "SendStreamingMessage", "streaming"},
		{"stream false", &no, "SendMessage", "polling"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := dt.StreamingFake(t, fakea2a.Working("busy"), fakea2a.Completed("done"))
			e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
			res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-s", Agent: "research", Objective: "x", Constraints: registry.Constraints{Stream: tt.stream}})
			if res.Status != delegation.StatusCompleted {
				t.Fatalf("result %+v %+v", res, res.Error)
			}
			sends := append(srv.RequestsFor("SendMessage"), srv.RequestsFor("SendStreamingMessage")...)
			if len(sends) != 1 || sends[0].Method != tt.method {
				t.Errorf("the task was sent with %+v, want %s", sends, tt.method)
			}
			if recs := e.D.Audit().ListRun("run-s"); len(recs) != 1 || recs[0].Mode != tt.mode {
				t.Errorf("audit mode %+v, want %s", recs, tt.mode)
			}
		})
	}
}

// threeArtifacts is a remote that sends three text artifacts and completes.
func threeArtifacts(t *testing.T) *fakea2a.Server {
	var steps []any
	for i := range 3 {
		steps = append(steps, dt.TextArtifact(fmt.Sprintf("part%d.md", i), "text/markdown", fmt.Sprintf("body %d", i)))
	}
	return dt.StreamingFake(t, append(steps, fakea2a.Completed("done"))...)
}

// constraints.max_artifacts bounds the artifacts stored for one
// delegation: the first ones are stored, the rest are listed with
// artifact_too_large and no URI (docs/design.md#tool-contract).
func TestConstraintMaxArtifactsBoundsWhatIsStored(t *testing.T) {
	dt.CheckLeaks(t)
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", threeArtifacts(t))})
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-m", Agent: "research", Objective: "x", Constraints: registry.Constraints{MaxArtifacts: 1}})
	if res.Status != delegation.StatusCompleted || len(res.Artifacts) != 3 {
		t.Fatalf("result %+v %+v", res, res.Error)
	}
	for i, a := range res.Artifacts {
		stored := a.URI != "" && a.Error == nil
		if want := i == 0; stored != want {
			t.Errorf("artifact %d %+v: stored %v, want %v", i, a, stored, want)
		}
		if i > 0 && (a.Error == nil || a.Error.Code != delegation.CodeArtifactTooLarge) {
			t.Errorf("artifact %d past max_artifacts: %+v", i, a.Error)
		}
	}
}

// allow_remote_artifacts: false keeps no remote artifact content: each is
// still reported by name, type and size, without a URI, and nothing is in
// the artifact store (docs/design.md#audit-and-artifacts).
func TestDisallowedRemoteArtifactsAreReportedNotStored(t *testing.T) {
	dt.CheckLeaks(t)
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", threeArtifacts(t), func(s *registry.RemoteAgentSpec) { s.Policy.AllowRemoteArtifacts = false })})
	rec := e.Record(t, "run-a")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-a", Agent: "research", Objective: "x"})
	if res.Status != delegation.StatusCompleted || len(res.Artifacts) != 3 {
		t.Fatalf("result %+v %+v", res, res.Error)
	}
	for i, a := range res.Artifacts {
		if a.URI != "" || a.Error != nil || a.Name != fmt.Sprintf("part%d.md", i) || a.MimeType != "text/markdown" {
			t.Errorf("artifact %d %+v, want its metadata only", i, a)
		}
		if _, err := e.D.Artifacts().Get(dt.Ctx(t), "run-a", res.DelegationID, a.ID); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("artifact %d is in the store: %v", i, err)
		}
	}
	evs := rec.WaitTerminals(t, 1)
	for _, ev := range dt.OfKind(evs, delegation.DelegationArtifactCreated) {
		if ev.Artifact == nil || ev.Artifact.URI != "" || ev.Artifact.SizeBytes != int64(len("body 0")) {
			t.Errorf("artifact event %+v", ev.Artifact)
		}
	}
}
