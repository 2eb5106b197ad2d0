package remote

import (
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

// Every id a remote chooses (task, context, the remote agent's session) is
// kept and shown with each host secret replaced by [REDACTED]: a remote
// that echoes a credential into its ids does not get it shown in events,
// tool results or audit records (docs/design.md#secrets, "Redaction of what
// a remote echoes").
func TestRemoteChosenIDsAreRedacted(t *testing.T) {
	const secret = "host-token-0123456789"
	secrets := &credentials.Secrets{}
	secrets.Add(secret)
	raw := "task-" + secret + "-1"
	for _, tc := range []struct {
		name string
		id   func(tr *Transcript) string
	}{
		{"ShownID", func(tr *Transcript) string { return tr.ShownID(raw) }},
		{"task id", func(tr *Transcript) string { tr.SetTaskID(raw); return tr.TaskID() }},
		{"replaced task id", func(tr *Transcript) string { tr.SetTaskID("t0"); tr.ReplaceTaskID(raw); return tr.TaskID() }},
		{"context id", func(tr *Transcript) string { tr.SetContextID(raw); return tr.ContextID() }},
		{"remote session id", func(tr *Transcript) string {
			tr.SetRemoteResult(RemoteResult{Summary: "done", SessionID: raw})
			return tr.RemoteResult().SessionID
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.id(NewTranscript(TranscriptConfig{Secrets: secrets}))
			if strings.Contains(got, secret) || strings.Contains(got, secret[:12]) {
				t.Fatalf("shown id %q carries the host secret", got)
			}
			if want := "task-" + credentials.Redacted + "-1"; got != want {
				t.Fatalf("shown id %q, want %q", got, want)
			}
		})
	}
}
