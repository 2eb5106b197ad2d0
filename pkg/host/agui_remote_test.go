package host_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/testkit/aguiverify"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	"go.uber.org/goleak"
)

// TestServeAsRemoteAGUIAgent: a second host is the remote AG-UI agent of the
// first (agent -> agent over AG-UI). Its run streams into the first host's
// stream as a nested subagent, and cancelling the first run cancels the
// second host's run too.
func TestServeAsRemoteAGUIAgent(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Host B: the remote. Its parent answers, or works until cancelled.
	remote := write("remote.yaml", `
- say: "Remote host here: checking the request."
- sleep: 100ms
- say: "Remote verdict: all good."
`)
	slowRemote := write("slow.yaml", "- say: \"Remote host starting a long job.\"\n- sleep: 1h\n")
	parent := write("parent.yaml", `
- say: "Asking the other host."
- call: {tool: delegate_to_agent, args: {agent: other-host, objective: "Check the request"}}
- say_result: "Other host says: {{.JSON.summary}}"
`)
	for _, tc := range []struct {
		name, remote string
		cancel       bool
	}{{"finishes", remote, false}, {"cancel", slowRemote, true}} {
		t.Run(tc.name, func(t *testing.T) {
			hb, srvB := newHost(t, &hostconfig.Config{Parent: hostconfig.Parent{Adapter: "scripted", Scenario: tc.remote}, ReconnectGrace: hostconfig.Duration(50 * time.Millisecond)})
			_, srvA := newHost(t, &hostconfig.Config{
				Parent: hostconfig.Parent{Adapter: "scripted", Scenario: parent},
				Agents: []hostconfig.Agent{{Key: "other-host", DisplayName: "Other host", Protocol: "agui", EndpointURL: srvB.URL + "/agui"}},
			})
			resp := post(t, srvA.URL+"/agui", input)
			defer resp.Body.Close()
			if !tc.cancel {
				body, _ := io.ReadAll(resp.Body)
				if err := aguiverify.VerifyReader(bytes.NewReader(body)); err != nil {
					t.Fatalf("invalid stream: %v\n%s", err, body)
				}
				at := 0
				for _, want := range []string{`"name":"subagent.started"`, `"protocol":"agui"`, "Remote verdict", `"name":"subagent.finished"`, `"type":"TOOL_CALL_RESULT"`, "Other host says"} {
					i := bytes.Index(body[at:], []byte(want))
					if i < 0 {
						t.Fatalf("%s missing or out of order:\n%s", want, body)
					}
					at += i
				}
				nodeValidate(t, body)
				return
			}
			// Wait until the remote host's run is streaming into ours.
			buf := make([]byte, 0, 1<<16)
			chunk := make([]byte, 4096)
			for !bytes.Contains(buf, []byte("long job")) {
				n, err := resp.Body.Read(chunk)
				buf = append(buf, chunk[:n]...)
				if err != nil {
					t.Fatalf("stream ended before the remote streamed: %v\n%s", err, buf)
				}
			}
			if hb.ActiveRuns() != 1 {
				t.Fatalf("remote host has %d active runs, want 1", hb.ActiveRuns())
			}
			cr := post(t, srvA.URL+"/agui/runs/run-client-1/cancel", "")
			cr.Body.Close()
			rest, _ := io.ReadAll(resp.Body)
			if !bytes.Contains(rest, []byte(`"name":"subagent.cancelled"`)) || !bytes.Contains(rest, []byte(`"code":"cancelled"`)) {
				t.Fatalf("after cancel: %s", rest)
			}
			testenv.WaitUntil(t, "the remote host's run to be cancelled", func() bool { return hb.ActiveRuns() == 0 })
			http.DefaultClient.CloseIdleConnections()
		})
	}
}
