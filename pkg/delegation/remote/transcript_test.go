package remote

import (
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
)

// The answer rule of docs/design.md#tool-contract: the remote's structured
// summary, else the task's output (text messages and text artifacts, in
// order), else the final status text; working-state status messages never.
func TestSummaryAndMessagesFollowTheOutput(t *testing.T) {
	for _, tc := range []struct {
		name         string
		feed         func(*Transcript)
		summary      string
		message      string // "" means no message
		artifactURIs int
	}{
		{
			name: "assistant text, then a bare final status",
			feed: func(tr *Transcript) {
				tr.TextSnapshot("out", "The answer ", true, false, false, true)
				tr.TextSnapshot("out", "is 42.", true, true, false, true)
				tr.SetFinalText("done")
			},
			summary: "The answer is 42.", message: "The answer is 42.",
		},
		{
			name: "any text artifact is output; a binary one is only listed",
			feed: func(tr *Transcript) {
				tr.Artifact(ArtifactPart{RemoteID: "report", Name: "report.md", MimeType: "text/markdown", Content: []byte("# Report\n"), Last: false})
				tr.Artifact(ArtifactPart{RemoteID: "report", Content: []byte("Body."), Append: true, Last: true})
				tr.Artifact(ArtifactPart{RemoteID: "img", Name: "plot.png", MimeType: "image/png", Content: []byte{0x89, 'P', 'N', 'G'}, Last: true})
				tr.SetFinalText("done")
			},
			summary: "# Report\nBody.", message: "# Report\nBody.", artifactURIs: 2,
		},
		{
			name: "text messages and text artifacts in the order they began",
			feed: func(tr *Transcript) {
				tr.TextSnapshot("m1", "First.", false, true, false, true)
				tr.Artifact(ArtifactPart{RemoteID: "notes", Name: "notes.txt", MimeType: "text/plain", Content: []byte("Notes."), Last: true})
				tr.TextSnapshot("m2", "Second.", false, true, false, true)
				tr.SetFinalText("done")
			},
			summary: "First.\n\nNotes.\n\nSecond.", message: "Second.", artifactURIs: 1,
		},
		{
			name: "the structured summary wins; the answer is the output",
			feed: func(tr *Transcript) {
				tr.TextSnapshot("out", "long answer", false, true, false, true)
				tr.SetResultSummary("Short.")
				tr.SetFinalText("done")
			},
			summary: "Short.", message: "long answer",
		},
		{
			name:    "no output: the final status text",
			feed:    func(tr *Transcript) { tr.SetFinalText("The answer is in the status.") },
			summary: "The answer is in the status.", message: "The answer is in the status.",
		},
		{
			name:    "nothing at all",
			feed:    func(*Transcript) {},
			summary: "", message: "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTranscript(TranscriptConfig{Put: func(m artifact.Meta, _ []byte) (string, error) { return "host://x/" + m.ID, nil }})
			tc.feed(tr)
			fin := tr.Finish(delegation.DelegationFinished, nil)
			if got := tr.Summary(); got != tc.summary {
				t.Errorf("summary %q, want %q", got, tc.summary)
			}
			if last := fin[len(fin)-1]; last.Text != tc.summary {
				t.Errorf("terminal event text %q, want the summary", last.Text)
			}
			msgs := tr.Messages()
			switch {
			case tc.message == "" && len(msgs) != 0, tc.message != "" && (len(msgs) != 1 || msgs[0].Text != tc.message || msgs[0].Role != "assistant"):
				t.Errorf("messages %+v, want %q", msgs, tc.message)
			}
			uris := 0
			for _, a := range tr.Artifacts() {
				if a.URI != "" {
					uris++
				}
			}
			if uris != tc.artifactURIs {
				t.Errorf("artifacts %+v, want %d with a URI", tr.Artifacts(), tc.artifactURIs)
			}
		})
	}
}

func TestOutputIsBounded(t *testing.T) {
	tr := NewTranscript(TranscriptConfig{MaxArtifactBytes: 16})
	big := strings.Repeat("x", 3*MaxSummaryBytes)
	// Too large to store, still the task's output: its start is kept.
	tr.Artifact(ArtifactPart{RemoteID: "a", Name: "big.txt", MimeType: "text/plain", Content: []byte(big), Last: true})
	tr.TextSnapshot("m", big, false, true, false, true)
	// A cut is marked with "…" (3 bytes) after the limit.
	if n := len(tr.Summary()); n > MaxSummaryBytes+3 {
		t.Errorf("summary of %d bytes, limit %d", n, MaxSummaryBytes)
	}
	if msgs := tr.Messages(); len(msgs) != 1 || len(msgs[0].Text) > MaxMessageBytes+3 {
		t.Errorf("message of %d bytes, limit %d", len(msgs[0].Text), MaxMessageBytes)
	}
	if a := tr.Artifacts(); len(a) != 1 || a[0].Error == nil || a[0].Error.Code != delegation.CodeArtifactTooLarge {
		t.Errorf("artifacts %+v", a)
	}
}

// A replaced text artifact contributes its new content only.
func TestOutputFollowsArtifactReplacement(t *testing.T) {
	tr := NewTranscript(TranscriptConfig{})
	tr.Artifact(ArtifactPart{RemoteID: "a", Name: "draft.txt", MimeType: "text/plain", Content: []byte("draft"), Last: true})
	tr.Artifact(ArtifactPart{RemoteID: "a", Name: "draft.txt", MimeType: "text/plain", Content: []byte("final"), Last: true})
	if got := tr.Summary(); got != "final" {
		t.Errorf("summary %q", got)
	}
}
