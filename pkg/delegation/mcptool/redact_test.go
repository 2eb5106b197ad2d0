package mcptool_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// A remote that reflects the host's credential into an artifact's bytes —
// here split across two streamed chunks — does not get it served: the
// artifact route serves [REDACTED], as the summary shows it, and the
// artifact says it was redacted in its event, in the tool result and in
// the audit record (docs/design.md#secrets).
func TestReflectedSecretIsRedactedFromStoredArtifacts(t *testing.T) {
	half := len(dt.SecretToken) / 2
	srv := dt.StreamingFake(t,
		fakea2a.Working("writing"),
		fakea2a.Artifact(fakea2a.ArtifactSpec{ID: "notes.md", Name: "notes.md", Text: "token=" + dt.SecretToken[:half]}),
		fakea2a.Artifact(fakea2a.ArtifactSpec{ID: "notes.md", Name: "notes.md", Text: dt.SecretToken[half:] + " (echoed)", Append: true, LastChunk: true}),
		fakea2a.Completed("done: "+dt.SecretToken))
	e := newEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	rec := e.Record(t, "run-art")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-art", Agent: "research", Objective: "echo the token"})
	evs := rec.WaitTerminals(t, 1)
	if res.Status != delegation.StatusCompleted || len(res.Artifacts) != 1 || res.Artifacts[0].URI == "" {
		t.Fatalf("result %+v", res)
	}
	if !res.Artifacts[0].Redacted {
		t.Errorf("the result's artifact does not say it was redacted: %+v", res.Artifacts[0])
	}
	var announced *delegation.DelegationArtifact
	for _, ev := range evs {
		if ev.Kind == delegation.DelegationArtifactCreated {
			announced = ev.Artifact
		}
	}
	if announced == nil || !announced.Redacted {
		t.Errorf("the artifact event does not say it was redacted: %+v", announced)
	}
	recs := e.D.Audit().ListRun("run-art")
	audited := false
	for _, r := range recs {
		for _, ev := range r.Events {
			audited = audited || ev.Artifact != nil && ev.Artifact.Redacted
		}
	}
	if !audited {
		t.Errorf("the audit record does not say the artifact was redacted")
	}

	h := httptest.NewServer(artifact.Handler(e.D.Artifacts()))
	defer h.Close()
	_, id, _ := artifact.ParseURI(res.Artifacts[0].URI)
	resp, err := http.Get(h.URL + "/agui/runs/run-art/delegations/" + res.DelegationID + "/artifacts/" + id)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "token=[REDACTED] (echoed)" {
		t.Errorf("served artifact: %d %q", resp.StatusCode, body)
	}
	dt.NoSecret(t, "served artifact", string(body))
	dt.NoSecret(t, "result", res)
	dt.NoSecret(t, "events", evs)
	if !strings.Contains(res.Summary, "[REDACTED]") {
		t.Errorf("summary %q", res.Summary)
	}
	http.DefaultClient.CloseIdleConnections()
}
