package remote

import (
	"fmt"
	"testing"

	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
)

// artifactsOf returns the artifacts of the subagent.artifact events in evs.
func artifactsOf(evs []delegation.DelegationEvent) []*delegation.DelegationArtifact {
	var out []*delegation.DelegationArtifact
	for _, ev := range evs {
		if ev.Kind == delegation.DelegationArtifactCreated {
			out = append(out, ev.Artifact)
		}
	}
	return out
}

// The transcript stores at most MaxArtifacts remote artifacts (the
// model's constraints.max_artifacts, clamped by the policy); the ones
// beyond are still announced and listed, with artifact_too_large and no
// URI. Without a store (policy allow_remote_artifacts: false) every
// artifact is announced by its metadata only: no URI, no error, no content
// kept (docs/design.md#audit-and-artifacts).
func TestTranscriptArtifactLimits(t *testing.T) {
	for _, tt := range []struct {
		name   string
		max    int
		store  bool
		stored int // artifacts with a URI
		errors int // artifacts refused with artifact_too_large
	}{
		{"max_artifacts 2 of 3", 2, true, 2, 1},
		{"max_artifacts 1 of 3", 1, true, 1, 2},
		{"default limit", 0, true, 3, 0},
		{"no store: remote artifacts not allowed", 0, false, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var put []string
			cfg := TranscriptConfig{MaxArtifacts: tt.max}
			if tt.store {
				cfg.Put = func(meta artifact.Meta, content []byte) (string, error) {
					put = append(put, meta.Name+"="+string(content))
					return artifact.URI("del-1", meta.ID), nil
				}
			}
			tr := NewTranscript(cfg)
			var evs []delegation.DelegationEvent
			for i := range 3 {
				evs = append(evs, tr.Artifact(ArtifactPart{RemoteID: fmt.Sprintf("a%d", i), Name: fmt.Sprintf("part%d.txt", i), MimeType: "text/plain",
					Content: fmt.Appendf(nil, "body %d", i), Last: true})...)
			}
			arts := artifactsOf(evs)
			if len(arts) != 3 {
				t.Fatalf("%d artifacts announced, want every one of the 3", len(arts))
			}
			stored, refused := 0, 0
			for i, a := range arts {
				switch {
				case a.URI != "" && a.Error == nil:
					stored++
					if tt.max > 0 && i >= tt.max {
						t.Errorf("artifact %d stored past the limit %d", i, tt.max)
					}
				case a.URI == "" && a.Error != nil && a.Error.Code == delegation.CodeArtifactTooLarge:
					refused++
				case a.URI == "" && a.Error == nil && !tt.store:
				default:
					t.Errorf("artifact %d: %+v", i, a)
				}
				if a.Name != fmt.Sprintf("part%d.txt", i) || a.MimeType != "text/plain" || a.SizeBytes != int64(len("body 0")) {
					t.Errorf("artifact %d metadata %+v", i, a)
				}
			}
			if stored != tt.stored || refused != tt.errors || len(put) != tt.stored {
				t.Errorf("stored %d, refused %d, put %q; want %d stored, %d refused", stored, refused, put, tt.stored, tt.errors)
			}
			if listed := tr.Artifacts(); len(listed) != 3 {
				t.Errorf("the result lists %d artifacts, want 3", len(listed))
			}
		})
	}
}
