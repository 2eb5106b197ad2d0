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

// The message of a remote RUN_ERROR is untrusted remote text: it is shown
// without control characters (no terminal escapes, NULs, bells) and
// bounded, in the failed event and in the result (docs/design.md#secrets,
// "Untrusted remote text"; docs/design.md#guarantees, 15).
func TestAGUIRunErrorMessageIsSanitized(t *testing.T) {
	dt.CheckLeaks(t)
	hostile := "boom\x1b]0;pwned\x07 \x1b[2Jcleared\x00screen\r\x08" + strings.Repeat("z", 5000)
	msg, _ := json.Marshal(hostile)
	rm := dt.NewSSERemote(t, func(w *dt.SSEWriter) {
		w.Started()
		w.Ev(`{"type":"RUN_ERROR","message":` + string(msg) + `,"code":"E_BAD"}`)
	})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.AGUISpec("remote", rm.URL())})
	rec := e.Record(t, "run-e")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-e", Agent: "remote", Objective: "x"})
	if res.Status != delegation.StatusFailed || res.Error == nil || res.Error.Code != delegation.CodeRemoteFailed {
		t.Fatalf("result %s %+v, want failed remote_failed", res.Status, res.Error)
	}
	evs := rec.WaitTerminals(t, 1)
	f := dt.OfKind(evs, delegation.DelegationFailed)
	if len(f) != 1 || f[0].Error == nil {
		t.Fatalf("failed events %+v", f)
	}
	for what, m := range map[string]string{"result": res.Error.Message, "event": f[0].Error.Message} {
		if !strings.Contains(m, "boom") || !strings.Contains(m, "E_BAD") {
			t.Errorf("%s message %q lacks the remote's text and code", what, m)
		}
		if i := strings.IndexFunc(m, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f }); i >= 0 {
			t.Errorf("%s message keeps control character %q at %d: %q", what, m[i], i, m[:min(len(m), 80)])
		}
		if len(m) > 1024 {
			t.Errorf("%s message is %d bytes, want it bounded", what, len(m))
		}
	}
}
