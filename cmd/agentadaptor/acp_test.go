package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/hostyaml"
	"github.com/seed0634/agentadaptor/internal/testkit/aguiverify"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/internal/testkit/fakeacp"
	"github.com/seed0634/agentadaptor/internal/testkit/hosttest"
	"github.com/seed0634/agentadaptor/internal/testkit/ssetest"
)

// `agentadaptor run --adapter acp --binary PATH --arg ...` drives an ACP
// agent (this test binary as the fake agent) and prints its payloads.
func TestRunACP(t *testing.T) {
	exe, _ := os.Executable()
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	t.Setenv(fakeacp.Env, string(mustJSON(fakeacp.Script{Record: rec, Turns: []fakeacp.Turn{{Steps: []fakeacp.Step{{Text: "Hello over ACP.", Chunks: 2}}}}})))
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"run", "--adapter", "acp", "--binary", exe, "--arg=--experimental-acp", "--result", "say hello"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	last := lastLine(out.String())
	var res struct {
		Status string `json:"status"`
		Output string `json:"output"`
	}
	if err := json.Unmarshal([]byte(last), &res); err != nil || res.Status != "completed" || res.Output != "Hello over ACP." {
		t.Fatalf("result line %q (%v)", last, err)
	}
	// The prompt went over the conversation, the args on the command line.
	prompted := false
	for _, r := range fakeacp.Records(rec) {
		if r["method"] == "session/prompt" && strings.Contains(string(mustJSON(r)), "say hello") {
			prompted = true
		}
	}
	if !prompted {
		t.Errorf("the agent never got the prompt: %v", fakeacp.Records(rec))
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--adapter", "acp", "hi"}, "needs the agent's executable"},
		{[]string{"run", "--adapter", "codex", "--arg", "x", "hi"}, "--arg is for the acp adapter only"},
		{[]string{"a2a", "serve", "--adapter", "claude", "--arg", "x"}, "--arg is for the acp adapter only"},
	} {
		var o, e bytes.Buffer
		if code := dispatch(context.Background(), tc.args, &o, &e); code == 0 || !strings.Contains(e.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, e.String(), tc.want)
		}
	}
}

// An ACP parent in serve calls delegate_to_agent on an A2A remote, both
// over http MCP and, for an agent without http in its mcpCapabilities,
// through the hidden mcp-stdio-bridge command: the nested subagent is in a
// valid AG-UI stream under the agent's own tool call id, and the parent's
// answer is built from the tool result.
func TestServeACPParentDelegates(t *testing.T) {
	for _, noHTTP := range []bool{false, true} {
		name := "http"
		if noHTTP {
			name = "stdio-bridge"
		}
		t.Run(name, func(t *testing.T) {
			remote := fakea2a.New(t, fakea2a.Options{Name: "reviewer", Streaming: true,
				Behavior: fakea2a.Script(fakea2a.Working("REMOTE-PROGRESS checking"), fakea2a.Completed("REMOTE-VERDICT looks good"))})
			exe, _ := os.Executable()
			rec := filepath.Join(t.TempDir(), "rec.jsonl")
			t.Setenv(fakeacp.Env, string(mustJSON(fakeacp.Script{NoHTTP: noHTTP, Record: rec, Turns: []fakeacp.Turn{{Steps: []fakeacp.Step{
				{Text: "Asking the reviewer."},
				{Tool: &fakeacp.Tool{Server: "a2a-delegation", Name: "delegate_to_agent", ID: "acp-call-1", Ask: true,
					Args: map[string]any{"agent": "reviewer", "objective": "review the change"}}},
				{Text: "Reviewer says: {{result}}"},
			}}}})))
			cfg := &hostconfig.Config{
				Parent: hostconfig.Parent{Adapter: "acp", Binary: exe, Args: []string{"--experimental-acp"}},
				Agents: []hostconfig.Agent{{Key: "reviewer", DisplayName: "Reviewer", Protocol: "a2a", AgentCardURL: remote.CardURL()}},
			}
			h, err := hostyaml.New(context.Background(), cfg, hostyaml.Options{StateDir: t.TempDir(), AdapterFactory: parentAdapter})
			if err != nil {
				t.Fatal(err)
			}
			srv := hosttest.Serve(t, h)
			body := ssetest.PostAll(t.Context(), t, srv.URL+"/agui", `{"threadId":"th-1","runId":"run-acp-1","messages":[{"id":"u1","role":"user","content":"get it reviewed"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`)
			if err := aguiverify.VerifyReader(bytes.NewReader(body)); err != nil {
				t.Fatalf("invalid AG-UI stream: %v\n%s", err, body)
			}
			checkNestedDelegation(t, body, "acp-call-1", "REMOTE-VERDICT looks good")
			checkTextBeforeTool(t, body, "Asking the reviewer.", "acp-call-1")
			for _, r := range fakeacp.Records(rec) {
				if e, ok := r["mcp_error"]; ok {
					t.Errorf("the agent's MCP call failed: %v", e)
				}
				if r["method"] == "session/new" {
					servers := string(mustJSON(r["params"]))
					if noHTTP && (!strings.Contains(servers, bridgeCommand) || strings.Contains(servers, `"type":"http"`)) {
						t.Errorf("no-http agent got %s", servers)
					}
				}
			}
		})
	}
}

// sseEvent is one AG-UI event of a stream.
type sseEvent map[string]any

func sseEvents(body []byte) []sseEvent {
	var out []sseEvent
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var e sseEvent
			if json.Unmarshal([]byte(d), &e) == nil {
				out = append(out, e)
			}
		}
	}
	return out
}

// checkNestedDelegation checks the shape every delegating parent run
// must have: the parent's delegate_to_* tool call with toolCallID (""
// for the first delegate_to_agent call), a
// subagent started under it and finished before the tool result, and
// parent text after the result that carries want.
func checkNestedDelegation(t *testing.T, body []byte, toolCallID, want string) {
	t.Helper()
	evs := sseEvents(body)
	if toolCallID == "" {
		toolCallID = delegateCallID(evs)
	}
	idx := map[string]int{}
	var after strings.Builder
	for i, e := range evs {
		typ, _ := e["type"].(string)
		switch typ {
		case "TOOL_CALL_START":
			if e["toolCallId"] == toolCallID {
				if n, _ := e["toolCallName"].(string); !strings.HasSuffix(n, "delegate_to_agent") {
					t.Errorf("tool call name %q", n)
				}
				idx["start"] = i
			}
		case "CUSTOM":
			v, _ := e["value"].(map[string]any)
			switch e["name"] {
			case "subagent.started":
				if v["parentToolCallId"] != toolCallID {
					t.Errorf("subagent.started under %v, want %s", v["parentToolCallId"], toolCallID)
				}
				idx["sub"] = i
			case "subagent.finished":
				idx["fin"] = i
			}
		case "TOOL_CALL_RESULT":
			if e["toolCallId"] == toolCallID {
				idx["result"] = i
			}
		case "TEXT_MESSAGE_CONTENT":
			if _, ok := idx["result"]; ok {
				d, _ := e["delta"].(string)
				after.WriteString(d)
			}
		}
	}
	for _, k := range []string{"start", "sub", "fin", "result"} {
		if _, ok := idx[k]; !ok {
			t.Fatalf("no %s event in the stream:\n%s", k, body)
		}
	}
	if idx["fin"] > idx["result"] || idx["sub"] > idx["fin"] {
		t.Errorf("order: started %d finished %d result %d", idx["sub"], idx["fin"], idx["result"])
	}
	if !strings.Contains(after.String(), want) {
		t.Errorf("parent text after the tool result %q lacks %q", after.String(), want)
	}
}

// delegateCallID is the id of the stream's first delegate_to_agent call
// (for agents whose tool call ids are their own, such as Gemini CLI's).
func delegateCallID(evs []sseEvent) string {
	for _, e := range evs {
		if n, _ := e["toolCallName"].(string); e["type"] == "TOOL_CALL_START" && strings.HasSuffix(n, "delegate_to_agent") {
			id, _ := e["toolCallId"].(string)
			return id
		}
	}
	return ""
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// checkTextBeforeTool: the parent text the agent wrote before the tool
// call is in the stream before it (permission requests stay in order with
// the session updates before them).
func checkTextBeforeTool(t *testing.T, body []byte, text, toolCallID string) {
	t.Helper()
	textAt, toolAt := -1, -1
	if toolCallID == "" {
		toolCallID = delegateCallID(sseEvents(body))
	}
	for i, e := range sseEvents(body) {
		if e["type"] == "TEXT_MESSAGE_CONTENT" && e["delta"] == text && textAt < 0 {
			textAt = i
		}
		if e["type"] == "TOOL_CALL_START" && e["toolCallId"] == toolCallID {
			toolAt = i
		}
	}
	if textAt < 0 || toolAt < 0 || textAt > toolAt {
		t.Errorf("text %q at %d, tool call at %d: want the text first", text, textAt, toolAt)
	}
}
