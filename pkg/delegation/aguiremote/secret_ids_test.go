package aguiremote_test

import (
	"encoding/json"
	"strings"
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// A remote AG-UI agent that puts the host's credential into the ids it
// chooses (run, thread, message and tool call ids) never gets it, or a
// piece of it, shown: the secret is scrubbed before an id is cut to its
// bounded length, so no prefix of it survives in the events, the result,
// the audit or the logs (docs/design.md#secrets).
func TestSecretsInRemoteAGUIIDsAreScrubbed(t *testing.T) {
	dt.CheckLeaks(t)
	// Long enough that the id is cut (64 bytes) in the middle of the secret.
	id := func(prefix string) string { return prefix + strings.Repeat("x", 50-len(prefix)) + dt.SecretToken }
	msg, tool := id("msg-"), id("call-")
	rm := dt.NewSSERemote(t, func(w *dt.SSEWriter) {
		w.Ev(`{"type":"RUN_STARTED","threadId":"`+id("thread-")+`","runId":"`+id("run-")+`"}`,
			`{"type":"TEXT_MESSAGE_START","messageId":"`+msg+`","role":"assistant"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"`+msg+`","delta":"working"}`,
			`{"type":"TEXT_MESSAGE_END","messageId":"`+msg+`"}`,
			`{"type":"TOOL_CALL_START","toolCallId":"`+tool+`","toolCallName":"search"}`,
			`{"type":"TOOL_CALL_END","toolCallId":"`+tool+`"}`,
			`{"type":"TOOL_CALL_RESULT","messageId":"`+msg+`","toolCallId":"`+tool+`","content":"found"}`)
		w.Finished()
	})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.AGUISpec("remote", rm.URL())})
	rec := e.Record(t, "run-ids")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-ids", Agent: "remote", Objective: "x"})
	if res.Status != delegation.StatusCompleted || res.Summary != "working" {
		t.Fatalf("result %+v err %+v", res, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	if len(dt.OfKind(evs, delegation.DelegationTextDelta)) == 0 {
		t.Fatalf("no text: %s", dt.KindsOf(evs))
	}
	piece := dt.SecretToken[:12] // what a cut id would keep of it
	for what, v := range map[string]any{"events": evs, "result": res, "audit": e.D.Audit().ListRun("run-ids"), "logs": e.Logs.String()} {
		b, _ := json.Marshal(v)
		if s, ok := v.(string); ok {
			b = []byte(s)
		}
		if strings.Contains(string(b), piece) {
			t.Errorf("%s keep a piece of the secret (%q): %s", what, piece, b)
		}
	}
}
