package a2a_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.uber.org/goleak"

	agentadaptor "github.com/seed0634/agentadaptor"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
	a2aclient "github.com/seed0634/agentadaptor/pkg/clients/a2a"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

const streamingScenario = `
steps:
  - say: Hello from the bridge, streamed in several small chunks for the test.
  - artifact: {name: report.md, mime_type: text/markdown, text: "# Report\n\nAll good."}
  - say: Done here.
`

func TestCard(t *testing.T) {
	env := startBridge(t, "- say: hi\n", a2abridge.Exposure{})
	c := newClient(t, env, "")
	card := c.Card()
	if card.Name() != "scripted-remote" || !card.Streaming() {
		t.Fatalf("card name %q streaming %v", card.Name(), card.Streaming())
	}
	if len(card.Ignored) != 0 {
		t.Errorf("card fields ignored by our client: %v", card.Ignored)
	}
	type iface struct {
		binding a2a.TransportProtocol
		version a2a.ProtocolVersion
		url     string
	}
	var got []iface
	for _, in := range card.Agent.SupportedInterfaces {
		got = append(got, iface{in.ProtocolBinding, in.ProtocolVersion, in.URL})
	}
	// HTTP+JSON first: it reports refusals as HTTP errors every client reads.
	want := []iface{
		{a2a.TransportProtocolHTTPJSON, a2a.Version, env.srv.URL + a2abridge.PathREST},
		{a2a.TransportProtocolJSONRPC, a2a.Version, env.srv.URL + a2abridge.PathJSONRPC},
		{a2a.TransportProtocolJSONRPC, "0.3", env.srv.URL + a2abridge.PathJSONRPC},
		{a2a.TransportProtocolHTTPJSON, "0.3", env.srv.URL + a2abridge.PathREST},
	}
	if !slices.Equal(got, want) {
		t.Errorf("interfaces\n got %v\nwant %v", got, want)
	}
	if c.ProtocolVersion() != string(a2a.Version) || c.Transport() != a2aclient.TransportHTTPJSON {
		t.Errorf("our client chose %s %s, want 1.0 HTTP+JSON", c.Transport(), c.ProtocolVersion())
	}
	if len(card.Agent.Skills) == 0 {
		t.Error("card has no skills")
	}
}

func TestStreamingTurn(t *testing.T) {
	for _, transport := range []a2aclient.TransportProtocol{a2aclient.TransportJSONRPC, a2aclient.TransportHTTPJSON} {
		t.Run(string(transport), func(t *testing.T) {
			env := startBridge(t, streamingScenario, a2abridge.Exposure{})
			c := newClient(t, env, transport)
			got := send(t, c, a2aclient.SendRequest{Text: "write the report"})

			if got.final != a2a.TaskStateCompleted {
				t.Fatalf("final state %s, want completed (states %v)", got.final, got.states)
			}
			wantStates := []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateCompleted}
			if !slices.Equal(got.states, wantStates) {
				t.Errorf("states %v, want %v", got.states, wantStates)
			}
			texts := byArtifact(got.chunks(a2abridge.ArtifactAssistantOutput))
			wantTexts := []string{"Hello from the bridge, streamed in several small chunks for the test.", "Done here."}
			if len(texts) != len(wantTexts) {
				t.Fatalf("%d assistant-output artifacts, want %d", len(texts), len(wantTexts))
			}
			for i, chunks := range texts {
				if s := textOfChunks(chunks); s != wantTexts[i] {
					t.Errorf("message %d text %q, want %q", i, s, wantTexts[i])
				}
				for j, ch := range chunks {
					if ch.Append != (j > 0) || ch.LastChunk != (j == len(chunks)-1) {
						t.Errorf("message %d chunk %d: append=%v lastChunk=%v", i, j, ch.Append, ch.LastChunk)
					}
					if mt := ch.Artifact.Parts[0].MediaType; mt != "text/plain" {
						t.Errorf("chunk media type %q", mt)
					}
				}
			}
			if len(texts[0]) < 3 {
				t.Errorf("first message came in %d chunk(s); want it streamed in several", len(texts[0]))
			}
			reports := got.chunks("report.md")
			if len(reports) != 1 {
				t.Fatalf("%d report.md artifact events, want 1", len(reports))
			}
			rp := reports[0].Artifact.Parts[0]
			if rp.Text() != "# Report\n\nAll good." || rp.MediaType != "text/markdown" || !reports[0].LastChunk {
				t.Errorf("report artifact: text %q type %q lastChunk %v", rp.Text(), rp.MediaType, reports[0].LastChunk)
			}
			res := got.result(t)
			if res["status"] != a2abridge.ResultCompleted || res["summary"] != "Done here." || res["session_id"] == "" {
				t.Errorf("result %v", res)
			}
			if _, ok := res["usage"].(map[string]any); !ok {
				t.Errorf("result usage %v", res["usage"])
			}
			arts, _ := res["artifacts"].([]any)
			if len(arts) != 1 {
				t.Fatalf("result artifacts %v", res["artifacts"])
			}
			ref := arts[0].(map[string]any)
			if ref["name"] != "report.md" || ref["mime_type"] != "text/markdown" || ref["id"] != string(reports[0].Artifact.ID) {
				t.Errorf("artifact ref %v", ref)
			}
			// The result artifact comes right before the terminal status.
			n := len(got.events)
			if a, ok := got.events[n-2].(*a2a.TaskArtifactUpdateEvent); !ok || a.Artifact.Name != a2abridge.ArtifactAgentAdaptorResult {
				t.Errorf("event before the terminal is %T, want the result artifact", got.events[n-2])
			}

			// GetTask: the stored task has the merged text artifacts.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			task, err := c.GetTask(ctx, a2aclient.GetTaskRequest{TaskID: got.taskID})
			if err != nil {
				t.Fatal(err)
			}
			if task.Status.State != a2a.TaskStateCompleted || task.ContextID != got.contextID {
				t.Errorf("GetTask: state %s context %s", task.Status.State, task.ContextID)
			}
			var stored []string
			for _, a := range task.Artifacts {
				if a.Name == a2abridge.ArtifactAssistantOutput {
					stored = append(stored, a2aclient.TextOf(a.Parts))
				}
			}
			if !slices.Equal(stored, wantTexts) {
				t.Errorf("stored assistant-output %q, want %q", stored, wantTexts)
			}
			if _, err := c.GetTask(ctx, a2aclient.GetTaskRequest{TaskID: "no-such-task"}); clienterr.KindOf(err) != clienterr.KindNotFound {
				t.Errorf("GetTask unknown: %v (kind %v)", err, clienterr.KindOf(err))
			}
		})
	}
}

func TestBlockingSend(t *testing.T) {
	env := startBridge(t, streamingScenario, a2abridge.Exposure{})
	c := newClient(t, env, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.Send(ctx, a2aclient.SendRequest{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task == nil || res.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("Send result %+v", res)
	}
	names := map[string]int{}
	for _, a := range res.Task.Artifacts {
		names[a.Name]++
	}
	if names[a2abridge.ArtifactAssistantOutput] != 2 || names["report.md"] != 1 || names[a2abridge.ArtifactAgentAdaptorResult] != 1 {
		t.Errorf("artifacts %v", names)
	}
}

func TestFailingTurn(t *testing.T) {
	env := startBridge(t, "- say: trying hard\n- fail: the tool exploded\n", a2abridge.Exposure{})
	c := newClient(t, env, "")
	got := send(t, c, a2aclient.SendRequest{Text: "try"})
	if got.final != a2a.TaskStateFailed {
		t.Fatalf("final %s, want failed", got.final)
	}
	res := got.result(t)
	if res["status"] != a2abridge.ResultFailed {
		t.Errorf("result status %v", res["status"])
	}
	e, _ := res["error"].(map[string]any)
	if e == nil || e["message"] != "the tool exploded" || e["code"] != "agent_error" {
		t.Errorf("result error %v", res["error"])
	}
	if !strings.Contains(got.finalMsg, "the tool exploded") {
		t.Errorf("failed status message %q", got.finalMsg)
	}
}

func TestCancelMidRun(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	env := startBridge(t, "- say: working on it now\n- sleep: 1h\n", a2abridge.Exposure{})
	c := newClient(t, env, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := c.SendStreaming(ctx, a2aclient.SendRequest{Text: "take your time"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Wait until the agent is demonstrably running: its text has arrived.
	var taskID a2a.TaskID
	for s.Next() {
		if a, ok := s.Event().(*a2a.TaskArtifactUpdateEvent); ok && a.Artifact.Name == a2abridge.ArtifactAssistantOutput && a.LastChunk {
			taskID = a.TaskID
			break
		}
	}
	if taskID == "" {
		t.Fatalf("no text before the stream ended: %v", s.Err())
	}
	pids := childAgents(t)
	if len(pids) != 1 {
		t.Fatalf("scripted agent children %v, want exactly one", pids)
	}
	task, err := c.CancelTask(ctx, a2aclient.CancelTaskRequest{TaskID: taskID, Metadata: map[string]any{"reason": "test"}})
	if err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	if task.Status.State != a2a.TaskStateCanceled {
		t.Errorf("CancelTask returned state %s", task.Status.State)
	}
	if !processGone(pids[0]) {
		t.Errorf("agent process %d still alive after CancelTask returned", pids[0])
	}
	rest := drain(t, s)
	if rest.final != a2a.TaskStateCanceled {
		t.Errorf("stream ended in %s, want canceled", rest.final)
	}
	if res := rest.result(t); res["status"] != a2abridge.ResultCancelled {
		t.Errorf("result status %v", res["status"])
	}
	got, err := c.GetTask(ctx, a2aclient.GetTaskRequest{TaskID: taskID})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Errorf("GetTask after cancel: %v %v", got, err)
	}
	// Cancelling again is idempotent: a2a-go answers with the canceled task.
	if again, err := c.CancelTask(ctx, a2aclient.CancelTaskRequest{TaskID: taskID}); err != nil || again.Status.State != a2a.TaskStateCanceled {
		t.Errorf("second CancelTask: %v %v", again, err)
	}
	_ = s.Close()
	_ = c.Close()
	env.close(t)
	goleak.VerifyNone(t, ignore)
}

func TestInputRequiredRoundTrip(t *testing.T) {
	env := startBridge(t, "- say: Let me check the calendar.\n- ask: Which city should I book?\n- say: Booked it, thanks.\n", a2abridge.Exposure{})
	c := newClient(t, env, "")
	first := send(t, c, a2aclient.SendRequest{Text: "book a trip"})
	if first.final != a2a.TaskStateInputRequired {
		t.Fatalf("first turn ended %s, want input-required", first.final)
	}
	if first.finalMsg != "Which city should I book?" {
		t.Errorf("input-required message %q", first.finalMsg)
	}
	r1 := first.result(t)
	if r1["status"] != a2abridge.ResultInputRequired {
		t.Errorf("first result %v", r1)
	}

	second := send(t, c, a2aclient.SendRequest{Text: "Paris", TaskID: first.taskID, ContextID: first.contextID})
	if second.final != a2a.TaskStateCompleted || second.taskID != first.taskID || second.contextID != first.contextID {
		t.Fatalf("second turn: %s task %s context %s", second.final, second.taskID, second.contextID)
	}
	if txt := textOfChunks(second.chunks(a2abridge.ArtifactAssistantOutput)); txt != "Booked it, thanks." {
		t.Errorf("second turn text %q (the session did not resume after the question)", txt)
	}
	r2 := second.result(t)
	if r2["session_id"] != r1["session_id"] || r2["session_id"] == "" {
		t.Errorf("session ids %v then %v, want the same", r1["session_id"], r2["session_id"])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	task, err := c.GetTask(ctx, a2aclient.GetTaskRequest{TaskID: first.taskID})
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("stored state %s", task.Status.State)
	}
	results := 0
	for _, a := range task.Artifacts {
		if a.Name == a2abridge.ArtifactAgentAdaptorResult {
			results++
			if resultData(t, a)["status"] != a2abridge.ResultCompleted {
				t.Errorf("stored result %v", resultData(t, a))
			}
		}
	}
	if results != 1 {
		t.Errorf("%d stored result artifacts, want 1 (replaced per turn)", results)
	}
}

func TestCancelWhileInputRequired(t *testing.T) {
	env := startBridge(t, "- ask: Which city?\n- say: never\n", a2abridge.Exposure{})
	c := newClient(t, env, "")
	first := send(t, c, a2aclient.SendRequest{Text: "book"})
	if first.final != a2a.TaskStateInputRequired {
		t.Fatalf("ended %s", first.final)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	task, err := c.CancelTask(ctx, a2aclient.CancelTaskRequest{TaskID: first.taskID})
	if err != nil || task.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask: %v %v", task, err)
	}
}

func TestContextContinuity(t *testing.T) {
	env := startBridge(t, "- say: one turn of the conversation\n", a2abridge.Exposure{})
	c := newClient(t, env, "")
	first := send(t, c, a2aclient.SendRequest{Text: "first"})
	second := send(t, c, a2aclient.SendRequest{Text: "second", ContextID: first.contextID})
	other := send(t, c, a2aclient.SendRequest{Text: "elsewhere"})
	for _, g := range []*collected{first, second, other} {
		if g.final != a2a.TaskStateCompleted {
			t.Fatalf("turn ended %s", g.final)
		}
	}
	if second.taskID == first.taskID || second.contextID != first.contextID {
		t.Fatalf("second task %s/%s vs first %s/%s", second.taskID, second.contextID, first.taskID, first.contextID)
	}
	s1, s2, s3 := first.result(t)["session_id"], second.result(t)["session_id"], other.result(t)["session_id"]
	if s1 == "" || s1 != s2 {
		t.Errorf("same context: sessions %v and %v, want the same", s1, s2)
	}
	if s3 == s1 {
		t.Errorf("another context reused session %v", s3)
	}
}

func TestExposure(t *testing.T) {
	const scenario = "- call: {tool: lookup, args: {q: weather}}\n- say: done\n"
	tests := []struct {
		name     string
		exposure a2abridge.Exposure
		want     []string
	}{
		{"hidden by default", a2abridge.Exposure{}, nil},
		{"tool calls", a2abridge.Exposure{ToolCalls: true}, []string{"tool_call", "tool_result"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := startBridge(t, scenario, tt.exposure)
			c := newClient(t, env, "")
			got := send(t, c, a2aclient.SendRequest{Text: "look it up"})
			var kinds []string
			for _, ev := range got.events {
				u, ok := ev.(*a2a.TaskStatusUpdateEvent)
				if !ok || u.Metadata == nil {
					continue
				}
				kind, _ := u.Metadata[a2abridge.MetadataKind].(string)
				kinds = append(kinds, kind)
				if u.Status.State != a2a.TaskStateWorking || u.Status.Message == nil {
					t.Errorf("%s detail: state %s message %v", kind, u.Status.State, u.Status.Message)
					continue
				}
				data, _ := u.Status.Message.Parts[0].Data().(map[string]any)
				if data["tool_call_id"] == nil {
					t.Errorf("%s detail without tool_call_id: %v", kind, data)
				}
				if kind == "tool_call" && data["tool_name"] != "lookup" {
					t.Errorf("tool_call detail %v", data)
				}
			}
			if !slices.Equal(kinds, tt.want) {
				t.Errorf("exposed kinds %v, want %v", kinds, tt.want)
			}
			if got.final != a2a.TaskStateCompleted {
				t.Errorf("final %s", got.final)
			}
		})
	}
}

func TestNewServerErrors(t *testing.T) {
	sdk, err := agentadaptor.New()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  a2abridge.Config
	}{
		{"no sdk", a2abridge.Config{Card: a2abridge.CardOptions{BaseURL: "http://127.0.0.1:9001"}}},
		{"unknown adapter", a2abridge.Config{SDK: sdk, Adapter: "nope", Card: a2abridge.CardOptions{BaseURL: "http://127.0.0.1:9001"}}},
		// The card's URLs never come from a request's Host header.
		{"no base URL", a2abridge.Config{SDK: sdk}},
		{"base URL without scheme", a2abridge.Config{SDK: sdk, Card: a2abridge.CardOptions{BaseURL: "127.0.0.1:9001"}}},
		{"base URL with credentials", a2abridge.Config{SDK: sdk, Card: a2abridge.CardOptions{BaseURL: "http://u:p@127.0.0.1:9001"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a2abridge.NewServer(tt.cfg)
			var ce *agentadaptor.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T), want a *ConfigError", err, err)
			}
		})
	}
}
