package remote

import (
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// subagent.text.end carries the text of the message it closes, bounded to
// 2 KiB (MaxStatusText, plus the truncation mark) whatever the size of the
// message and whichever path closes it: an explicit end, a polled snapshot's
// last chunk, CloseTexts, or the final message Finish shows
// (docs/design.md#kinds-and-lanes; docs/design.md#guarantees, 15).
func TestTextEndCarriesTheMessageBounded(t *testing.T) {
	long := strings.Repeat("0123456789abcdef", 4<<10/16) // 4 KiB
	short := "a short answer"
	for _, tc := range []struct {
		name string
		text string
		run  func(tr *Transcript, text string) []delegation.DelegationEvent
	}{
		{"TextEnd", long, func(tr *Transcript, text string) []delegation.DelegationEvent {
			return append(tr.TextDelta("m1", text), tr.TextEnd("m1")...)
		}},
		{"streamed in chunks", long, func(tr *Transcript, text string) []delegation.DelegationEvent {
			var evs []delegation.DelegationEvent
			for i := 0; i < len(text); i += 1000 {
				evs = append(evs, tr.TextDelta("m1", text[i:min(i+1000, len(text))])...)
			}
			return append(evs, tr.TextEnd("m1")...)
		}},
		{"snapshot's last chunk", long, func(tr *Transcript, text string) []delegation.DelegationEvent {
			return tr.TextSnapshot("m1", text, false, true, true, false)
		}},
		{"CloseTexts", long, func(tr *Transcript, text string) []delegation.DelegationEvent {
			return append(tr.TextDelta("m1", text), tr.CloseTexts()...)
		}},
		{"final message", long, func(tr *Transcript, text string) []delegation.DelegationEvent {
			tr.SetFinalMessage("f1", text)
			return tr.Finish(delegation.DelegationFinished, nil)
		}},
		{"short message whole", short, func(tr *Transcript, text string) []delegation.DelegationEvent {
			return append(tr.TextDelta("m1", text), tr.TextEnd("m1")...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ends []delegation.DelegationEvent
			for _, ev := range tc.run(NewTranscript(TranscriptConfig{}), tc.text) {
				if ev.Kind == delegation.DelegationTextEnd {
					ends = append(ends, ev)
				}
			}
			if len(ends) != 1 {
				t.Fatalf("%d subagent.text.end events, want 1", len(ends))
			}
			got := ends[0].Text
			if len(got) > MaxStatusText+len("…") {
				t.Fatalf("subagent.text.end carries %d bytes, want at most %d", len(got), MaxStatusText+len("…"))
			}
			if len(tc.text) <= MaxStatusText {
				if got != tc.text {
					t.Fatalf("subagent.text.end text %q, want the whole message %q", got, tc.text)
				}
				return
			}
			head := strings.TrimSuffix(got, "…")
			if len(head) < MaxStatusText-4 || !strings.HasPrefix(tc.text, head) {
				t.Fatalf("subagent.text.end text is not the message's first 2 KiB: %q", got)
			}
		})
	}
}
