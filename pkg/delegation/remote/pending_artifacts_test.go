package remote

import (
	"testing"

	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
)

// Right before the terminal event, Finish announces every artifact still
// pending — chunks received, the last one never sent — so that what the
// remote delivered is stored and listed however the task ends; an artifact
// already announced is not announced twice, and an artifact the terminal
// event follows is listed in the result (docs/design.md#event-mapping).
func TestFinishAnnouncesPendingArtifacts(t *testing.T) {
	for _, kind := range []delegation.DelegationEventKind{delegation.DelegationFinished, delegation.DelegationFailed, delegation.DelegationCancelled} {
		t.Run(string(kind), func(t *testing.T) {
			stored := map[string]string{}
			tr := NewTranscript(TranscriptConfig{Put: func(meta artifact.Meta, content []byte) (string, error) {
				stored[meta.Name] = string(content)
				return artifact.URI("del-1", meta.ID), nil
			}})
			var evs []delegation.DelegationEvent
			evs = append(evs, tr.Artifact(ArtifactPart{RemoteID: "done", Name: "done.txt", MimeType: "text/plain", Content: []byte("complete"), Last: true})...)
			evs = append(evs, tr.Artifact(ArtifactPart{RemoteID: "open", Name: "open.log", MimeType: "text/plain", Content: []byte("first ")})...)
			evs = append(evs, tr.Artifact(ArtifactPart{RemoteID: "open", Content: []byte("second"), Append: true})...)
			if n := len(artifactsOf(evs)); n != 1 {
				t.Fatalf("%d artifacts announced before Finish, want 1 (the completed one)", n)
			}
			fin := tr.Finish(kind, nil)
			if len(fin) == 0 || fin[len(fin)-1].Kind != kind {
				t.Fatalf("Finish events %+v do not end with %s", fin, kind)
			}
			arts := artifactsOf(fin)
			if len(arts) != 1 || arts[0].Name != "open.log" || arts[0].URI == "" || arts[0].Error != nil {
				t.Fatalf("Finish announced %+v, want the pending open.log, stored", arts)
			}
			if got := stored["open.log"]; got != "first second" {
				t.Fatalf("pending artifact stored as %q, want %q", got, "first second")
			}
			if listed := tr.Artifacts(); len(listed) != 2 || listed[1].Name != "open.log" {
				t.Fatalf("result lists %+v, want done.txt and open.log", listed)
			}
			if again := tr.Finish(kind, nil); again != nil {
				t.Fatalf("a second Finish returned %+v, want nothing", again)
			}
		})
	}
}
