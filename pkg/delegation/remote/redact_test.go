package remote

import (
	"bytes"
	"testing"

	"github.com/seed0634/agentadaptor/pkg/credentials"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
)

// Artifact content is scanned for the host's secrets before it is stored,
// like every other remote-chosen string (docs/design.md#secrets): a remote
// that reflects a credential into an artifact gets it stored and served as
// [REDACTED] — in text and in binary content, also when the secret was
// split across two streamed chunks — and the artifact says so (its event
// and the result's list: redacted, and the stored size). Content without a
// secret is stored byte for byte and not marked.
func TestArtifactContentIsRedactedBeforeItIsStored(t *testing.T) {
	const secret = "host-token-0123456789"
	secrets := &credentials.Secrets{}
	secrets.Add(secret)
	for _, tc := range []struct {
		name     string
		parts    []ArtifactPart
		want     []byte
		redacted bool
	}{
		{"text", []ArtifactPart{{RemoteID: "a", Name: "notes.md", MimeType: "text/markdown", Content: []byte("token: " + secret + "\n"), Last: true}},
			[]byte("token: " + credentials.Redacted + "\n"), true},
		{"binary", []ArtifactPart{{RemoteID: "a", Name: "blob.bin", MimeType: "application/octet-stream",
			Content: append(append([]byte{0x00, 0xff, 0x89}, secret...), 0x00, 0x01), Last: true}},
			append(append([]byte{0x00, 0xff, 0x89}, credentials.Redacted...), 0x00, 0x01), true},
		{"split across streamed chunks", []ArtifactPart{
			{RemoteID: "a", Name: "log.txt", MimeType: "text/plain", Content: []byte("begin " + secret[:7])},
			{RemoteID: "a", Content: []byte(secret[7:15]), Append: true},
			{RemoteID: "a", Content: []byte(secret[15:] + " end"), Append: true, Last: true}},
			[]byte("begin " + credentials.Redacted + " end"), true},
		{"twice, and in a snapshot", []ArtifactPart{{RemoteID: "a", Name: "x.json", MimeType: "application/json",
			Content: []byte(`{"a":"` + secret + `","b":"` + secret + `"}`), Snapshot: true}},
			[]byte(`{"a":"` + credentials.Redacted + `","b":"` + credentials.Redacted + `"}`), true},
		{"no secret", []ArtifactPart{{RemoteID: "a", Name: "clean.bin", MimeType: "application/octet-stream", Content: []byte{0x00, 'h', 'o', 's', 't', 0xff}, Last: true}},
			[]byte{0x00, 'h', 'o', 's', 't', 0xff}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stored []byte
			tr := NewTranscript(TranscriptConfig{Secrets: secrets, Put: func(meta artifact.Meta, content []byte) (string, error) {
				stored = append([]byte(nil), content...)
				return artifact.URI("del-1", meta.ID), nil
			}})
			var evs []delegation.DelegationEvent
			for _, p := range tc.parts {
				evs = append(evs, tr.Artifact(p)...)
			}
			if !bytes.Equal(stored, tc.want) {
				t.Fatalf("stored %q, want %q", stored, tc.want)
			}
			if len(evs) != 1 || evs[0].Artifact == nil {
				t.Fatalf("events %+v, want one subagent.artifact", evs)
			}
			a := evs[0].Artifact
			if a.Redacted != tc.redacted || a.SizeBytes != int64(len(tc.want)) || a.URI == "" {
				t.Errorf("artifact event %+v: want redacted=%v, size %d", a, tc.redacted, len(tc.want))
			}
			if l := tr.Artifacts(); len(l) != 1 || l[0].Redacted != tc.redacted {
				t.Errorf("result artifacts %+v: want redacted=%v", l, tc.redacted)
			}
		})
	}
}
