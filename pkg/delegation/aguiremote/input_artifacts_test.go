package aguiremote_test

import (
	"slices"
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// Input artifacts reach an AG-UI agent as context entries: the content of
// a host:// artifact of the run when it is text (text/*, application/json),
// otherwise only its reference — binary content (application/octet-stream,
// PDF, ...) is never inlined as text (docs/design.md#remote-ag-ui--delegation-event).
func TestAGUIInputArtifactsAsContext(t *testing.T) {
	dt.CheckLeaks(t)
	rm := dt.NewSSERemote(t, func(w *dt.SSEWriter) { w.Started(); w.Text("m1", "ok"); w.Finished() })
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.AGUISpec("remote", rm.URL())})
	for _, st := range []artifact.Stored{
		{RunID: "run-in", DelegationID: "del-prev", ID: "notes.md", Name: "notes.md", MimeType: "text/markdown", Content: []byte("# Notes")},
		{RunID: "run-in", DelegationID: "del-prev", ID: "facts.json", Name: "facts.json", MimeType: "application/json", Content: []byte(`{"a":1}`)},
		{RunID: "run-in", DelegationID: "del-prev", ID: "blob.bin", Name: "blob.bin", MimeType: "application/octet-stream", Content: []byte{0, 1, 2, 0xff}},
		{RunID: "run-in", DelegationID: "del-prev", ID: "paper.pdf", Name: "paper.pdf", MimeType: "application/pdf", Content: []byte("%PDF-1.7 binary")},
		{RunID: "run-in", DelegationID: "del-prev", ID: "chart.png", Name: "chart.png", MimeType: "image/png", Content: []byte{0x89, 'P', 'N', 'G'}},
	} {
		if err := e.D.Artifacts().Put(dt.Ctx(t), st); err != nil {
			t.Fatal(err)
		}
	}
	var in []delegator.InputArtifact
	for _, name := range []string{"notes.md", "facts.json", "blob.bin", "paper.pdf", "chart.png"} {
		in = append(in, delegator.InputArtifact{Name: name, URI: artifact.URI("del-prev", name)})
	}
	in = append(in, delegator.InputArtifact{Name: "outside.txt", URI: "https://example.test/outside.txt"})
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-in", Agent: "remote", Objective: "Summarize.", Input: delegator.TaskInput{Artifacts: in}})
	if res.Status != delegation.StatusCompleted {
		t.Fatalf("result %s %+v", res.Status, res.Error)
	}
	reqs := rm.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d runs", len(reqs))
	}
	var got []string
	for _, c := range reqs[0].Input.Context {
		got = append(got, c.Description+" = "+c.Value)
	}
	want := []string{
		"artifact notes.md (text/markdown) = # Notes",
		`artifact facts.json (application/json) = {"a":1}`,
		"artifact reference blob.bin = " + artifact.URI("del-prev", "blob.bin"),
		"artifact reference paper.pdf = " + artifact.URI("del-prev", "paper.pdf"),
		"artifact reference chart.png = " + artifact.URI("del-prev", "chart.png"),
		"artifact reference outside.txt = https://example.test/outside.txt",
	}
	if !slices.Equal(got, want) {
		t.Errorf("context entries\n got %q\nwant %q", got, want)
	}
}
