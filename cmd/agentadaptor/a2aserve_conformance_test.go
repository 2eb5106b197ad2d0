package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// jsResult is what a2a-conformance.mjs recorded for one call: its result
// fields, or the error it raised.
type jsResult struct {
	Error       string   `json:"error"`
	State       string   `json:"state"`
	GetState    string   `json:"getState"`
	First       any      `json:"first"`
	States      []string `json:"states"`
	Text        string   `json:"text"`
	Artifacts   []string `json:"artifacts"`
	IDs         []string `json:"ids"`
	TaskID      string   `json:"taskId"`
	Question    string   `json:"question"`
	FirstStates []string `json:"firstStates"`
	SecondFirst string   `json:"secondFirst"`
	SecondState []string `json:"secondStates"`
	SameTask    bool     `json:"sameTask"`
	Events      []any    `json:"events"`
	Unexpected  any      `json:"unexpected"`
}

type jsWire struct {
	Binding  string `json:"binding"`
	Version  string `json:"version"`
	Selected struct {
		Protocol string `json:"protocol"`
		Version  string `json:"version"`
	} `json:"selected"`
	Send, Stream, Get, List, SubscribeFinished, MultiTurn, SubscribeIdle, Cancel, Unauthenticated jsResult
}

type jsConformance struct {
	Wires []jsWire `json:"wires"`
	Card  struct {
		Interfaces []string `json:"interfaces"`
		Security   []string `json:"security"`
	} `json:"card"`
	Versions []struct {
		Version string `json:"version"`
		JSONRPC struct {
			Status int `json:"status"`
			Body   struct {
				Result map[string]any `json:"result"`
				Error  *struct {
					Code int `json:"code"`
				} `json:"error"`
			} `json:"body"`
		} `json:"jsonrpc"`
		REST struct {
			Status int            `json:"status"`
			Body   map[string]any `json:"body"`
		} `json:"rest"`
	} `json:"versions"`
}

// TestA2AServeConformanceJSClient drives three `a2a serve` servers (bearer
// token required) with the @a2a-js/sdk client through every method on every
// wire the card lists (tests/node/a2a-conformance.mjs): A2A 1.0 over
// JSON-RPC and HTTP+JSON, A2A 0.3 over both; send, stream, get, list,
// cancel, subscribe (to a finished task: refused; to an input-required
// task: the Task, then the answered turn to its end), multi-turn with ask:,
// a client without the token, and version negotiation.
func TestA2AServeConformanceJSClient(t *testing.T) {
	root := jsSDK(t)
	servers := map[string]*a2aServe{}
	for name, scenario := range map[string]string{
		"fast": "- say: Hello from the agent, streamed in chunks.\n- artifact: {name: report.md, mime_type: text/markdown, text: \"# Report\"}\n- say: Done here.\n",
		"ask":  "- say: Let me check.\n- ask: Which city?\n- say: Booked it.\n",
		"slow": "- say: working on it now\n- sleep: 1h\n",
	} {
		t.Setenv("A2A_TEST_TOKEN", testToken) // each server takes it out of the environment
		servers[name] = startA2AServe(t, scenario, "--auth-token", "env:A2A_TEST_TOKEN")
	}
	// The token reaches node through its environment, never argv.
	t.Setenv("A2A_CONFORMANCE_TOKEN", testToken)
	args, _ := json.Marshal(map[string]string{
		"fast": "http://" + servers["fast"].listen, "ask": "http://" + servers["ask"].listen,
		"slow": "http://" + servers["slow"].listen, "token": "A2A_CONFORMANCE_TOKEN",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("tests", "node", "a2a-conformance.mjs"), string(args))
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("a2a-conformance.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var sum jsConformance
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout.String())
	}
	defer func() {
		if t.Failed() {
			var pretty bytes.Buffer
			_ = json.Indent(&pretty, stdout.Bytes(), "", "  ")
			t.Logf("what the JS client saw:\n%s", pretty.String())
		}
	}()

	if want := []string{"HTTP+JSON 1.0", "JSONRPC 1.0", "JSONRPC 0.3", "HTTP+JSON 0.3"}; !slices.Equal(sum.Card.Interfaces, want) {
		t.Errorf("card interfaces %v, want %v", sum.Card.Interfaces, want)
	}
	if !slices.Equal(sum.Card.Security, []string{"bearer"}) {
		t.Errorf("card security schemes %v", sum.Card.Security)
	}
	if len(sum.Wires) != 4 {
		t.Fatalf("%d wires exercised", len(sum.Wires))
	}
	turn := []string{"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"}
	for _, w := range sum.Wires {
		t.Run(w.Binding+"_"+w.Version, func(t *testing.T) {
			if w.Selected.Protocol != w.Binding || w.Selected.Version != w.Version {
				t.Errorf("the client chose %+v", w.Selected)
			}
			if w.Send.Error != "" || w.Send.State != "TASK_STATE_COMPLETED" || !slices.Contains(w.Send.Artifacts, "report.md") || !slices.Contains(w.Send.Artifacts, "agent-adaptor-result") {
				t.Errorf("send: %+v", w.Send)
			}
			if w.Stream.Error != "" || w.Stream.First != "task" || !slices.Equal(w.Stream.States, turn) || w.Stream.Text != "Hello from the agent, streamed in chunks.Done here." {
				t.Errorf("stream: %+v", w.Stream)
			}
			if w.Get.Error != "" || w.Get.State != "TASK_STATE_COMPLETED" || len(w.Get.Artifacts) != 4 {
				t.Errorf("get: %+v", w.Get)
			}
			if w.Version == "1.0" {
				if w.List.Error != "" || !slices.Equal(w.List.IDs, []string{w.Stream.TaskID}) {
					t.Errorf("list by context: %+v, want the streamed task", w.List)
				}
			} else if w.List.Error == "" {
				t.Errorf("list on the 0.3 wire (which has no tasks/list): %+v", w.List)
			}
			if !strings.Contains(w.SubscribeFinished.Error, "finished task cannot be subscribed to") {
				t.Errorf("subscribe to a finished task: %+v, want UnsupportedOperation", w.SubscribeFinished)
			}
			m := w.MultiTurn
			if m.Error != "" || m.Question != "Which city?" || !slices.Equal(m.FirstStates, []string{"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"}) ||
				m.SecondFirst != "task" || !m.SameTask || !slices.Equal(m.SecondState, turn) || m.Text != "Booked it." {
				t.Errorf("multi-turn: %+v", m)
			}
			s := w.SubscribeIdle
			first, _ := s.First.(map[string]any)
			if s.Error != "" || first["kind"] != "task" || first["state"] != "TASK_STATE_INPUT_REQUIRED" ||
				!slices.Equal(s.States, append([]string{"TASK_STATE_INPUT_REQUIRED"}, turn...)) || s.Text != "Booked it." {
				t.Errorf("subscribe to an input-required task: %+v", s)
			}
			if w.Cancel.Error != "" || w.Cancel.State != "TASK_STATE_CANCELED" || w.Cancel.GetState != "TASK_STATE_CANCELED" {
				t.Errorf("cancel: %+v", w.Cancel)
			}
			if !strings.Contains(w.Unauthenticated.Error, "authentication required") || w.Unauthenticated.Unexpected != nil {
				t.Errorf("a client without the token: %+v", w.Unauthenticated)
			}
		})
	}
	for _, v := range sum.Versions {
		switch v.Version {
		case "99.0":
			if e := v.JSONRPC.Body.Error; e == nil || e.Code != -32009 {
				t.Errorf("JSON-RPC with A2A-Version 99.0: %+v, want VersionNotSupported", v.JSONRPC)
			}
			if v.REST.Status != 400 {
				t.Errorf("HTTP+JSON with A2A-Version 99.0: %+v, want 400", v.REST)
			}
		case "1.0":
			if v.JSONRPC.Body.Error != nil || v.JSONRPC.Body.Result["task"] == nil || v.REST.Status != 200 {
				t.Errorf("A2A-Version 1.0: %+v %+v", v.JSONRPC, v.REST)
			}
		}
	}
}
