package a2aremote_test

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// Input artifacts reach an A2A agent as docs/design.md#a2a--delegation-event
// says: a host:// artifact of the same run within the size limit travels
// with its content (a text part for text/* and JSON, a raw part
// otherwise, named and typed); every other URI — another run's artifact,
// one over the limit, an outside URL — is only referenced in one
// {"artifact_refs": [...]} data part, never fetched or inlined.
func TestInputArtifactsSentToAnA2AAgent(t *testing.T) {
	dt.CheckLeaks(t)
	rr := newRawRemote(t, true, map[string]rawHandler{
		"SendStreamingMessage": func(w *rawWriter, _ json.RawMessage) {
			w.events(streamedTask("task-1", "TASK_STATE_SUBMITTED"), streamedStatus("task-1", "TASK_STATE_COMPLETED", "done"))
		},
	})
	const limit = 64
	e := env.NewEnv(t, []registry.RemoteAgentSpec{rr.spec("raw", func(s *registry.RemoteAgentSpec) { s.Policy.MaxArtifactBytes = limit })})
	png := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 3}
	big := make([]byte, limit+1)
	for _, st := range []artifact.Stored{
		{RunID: "run-in", DelegationID: "del-prev", ID: "notes.md", Name: "notes.md", MimeType: "text/markdown", Content: []byte("# Notes")},
		{RunID: "run-in", DelegationID: "del-prev", ID: "facts.json", Name: "facts.json", MimeType: "application/json", Content: []byte(`{"a":1}`)},
		{RunID: "run-in", DelegationID: "del-prev", ID: "chart.png", Name: "chart.png", MimeType: "image/png", Content: png},
		{RunID: "run-in", DelegationID: "del-prev", ID: "big.txt", Name: "big.txt", MimeType: "text/plain", Content: big},
		{RunID: "run-other", DelegationID: "del-other", ID: "secret.md", Name: "secret.md", MimeType: "text/markdown", Content: []byte("another run's")},
	} {
		if err := e.D.Artifacts().Put(dt.Ctx(t), st); err != nil {
			t.Fatal(err)
		}
	}
	in := []delegator.InputArtifact{
		{Name: "notes.md", URI: artifact.URI("del-prev", "notes.md")},
		{Name: "facts.json", URI: artifact.URI("del-prev", "facts.json")},
		{Name: "chart.png", URI: artifact.URI("del-prev", "chart.png")},
		{Name: "big.txt", URI: artifact.URI("del-prev", "big.txt")},
		{Name: "secret.md", URI: artifact.URI("del-other", "secret.md")},
		{Name: "paper.pdf", URI: "https://papers.example/paper.pdf"},
	}
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-in", Agent: "raw", Objective: "Summarize.", Input: delegator.TaskInput{Artifacts: in}})
	if res.Status != delegation.StatusCompleted {
		t.Fatalf("result %s %+v", res.Status, res.Error)
	}
	calls := rr.callsOf("SendStreamingMessage")
	if len(calls) != 1 {
		t.Fatalf("%d SendStreamingMessage calls", len(calls))
	}
	sent := calls[0].Params
	var params struct {
		Message struct {
			Parts []struct {
				Text      *string         `json:"text"`
				Raw       *string         `json:"raw"`
				Data      json.RawMessage `json:"data"`
				MediaType string          `json:"mediaType"`
				Filename  string          `json:"filename"`
			} `json:"parts"`
		} `json:"message"`
	}
	if err := json.Unmarshal(sent, &params); err != nil {
		t.Fatalf("%v: %s", err, sent)
	}
	parts := params.Message.Parts
	if len(parts) != 5 {
		t.Fatalf("%d parts, want the task text, three artifacts with content and one data part of references: %s", len(parts), sent)
	}
	if parts[0].Text == nil || *parts[0].Text != "Summarize." {
		t.Errorf("first part %s", sent)
	}
	for i, want := range []struct{ name, mime, text string }{
		{"notes.md", "text/markdown", "# Notes"},
		{"facts.json", "application/json", `{"a":1}`},
	} {
		p := parts[1+i]
		if p.Text == nil || *p.Text != want.text || p.Filename != want.name || p.MediaType != want.mime {
			t.Errorf("part %d: %+v, want text %q named %s (%s)", 1+i, p, want.text, want.name, want.mime)
		}
	}
	if p := parts[3]; p.Raw == nil || *p.Raw != base64.StdEncoding.EncodeToString(png) || p.Filename != "chart.png" || p.MediaType != "image/png" {
		t.Errorf("binary artifact part %+v, want its raw bytes", p)
	}
	var refs struct {
		Refs []struct{ Name, URI string } `json:"artifact_refs"`
	}
	if err := json.Unmarshal(parts[4].Data, &refs); err != nil || parts[4].MediaType != "application/json" {
		t.Fatalf("references part %+v: %v", parts[4], err)
	}
	var got []string
	for _, r := range refs.Refs {
		got = append(got, r.Name+" "+r.URI)
	}
	want := []string{"big.txt " + artifact.URI("del-prev", "big.txt"), "secret.md " + artifact.URI("del-other", "secret.md"), "paper.pdf https://papers.example/paper.pdf"}
	if !slices.Equal(got, want) {
		t.Errorf("artifact_refs %q, want %q", got, want)
	}
}
