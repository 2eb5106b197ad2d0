package a2aremote

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	a2aclient "github.com/seed0634/agentadaptor/pkg/clients/a2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
	"github.com/seed0634/agentadaptor/pkg/delegation/remote"
)

var tinfo = a2a.TaskInfo{TaskID: "task-1", ContextID: "ctx-1"}

func status(state a2a.TaskState, text string) *a2a.TaskStatusUpdateEvent {
	var msg *a2a.Message
	if text != "" {
		msg = a2a.NewMessageForTask(a2a.MessageRoleAgent, tinfo, a2a.NewTextPart(text))
	}
	return a2a.NewStatusUpdateEvent(tinfo, state, msg)
}

func chunk(name, id, text string, appendChunk, last bool) *a2a.TaskArtifactUpdateEvent {
	return &a2a.TaskArtifactUpdateEvent{TaskID: tinfo.TaskID, ContextID: tinfo.ContextID, Append: appendChunk, LastChunk: last,
		Artifact: &a2a.Artifact{ID: a2a.ArtifactID(id), Name: name, Parts: a2a.ContentParts{a2a.NewTextPart(text)}}}
}

func streamingMapper(store *artifact.MemoryStore) *mapper {
	return testMapper(store, true, false, 1<<20)
}

// testMapper is a mapper over a fresh transcript; artifacts go to store
// (nil: metadata only) under run-1 / del-1.
func testMapper(store *artifact.MemoryStore, streamText, allowInput bool, maxArtifactBytes int64) *mapper {
	cfg := remote.TranscriptConfig{AllowInput: allowInput, MaxArtifactBytes: maxArtifactBytes}
	if store != nil {
		cfg.Put = func(meta artifact.Meta, content []byte) (string, error) {
			err := store.Put(context.Background(), artifact.Stored{RunID: "run-1", DelegationID: "del-1", ID: meta.ID, Name: meta.Name, MimeType: meta.MimeType, Content: content})
			return artifact.URI("del-1", meta.ID), err
		}
	}
	return newMapper(remote.NewTranscript(cfg), streamText)
}

// decodeAndMap decodes one streamed A2A event (a JSON-RPC SSE data payload
// or a bare stream response) and maps it; malformed payloads are the
// client's typed errors.
func decodeAndMap(m *mapper, raw []byte) ([]delegation.DelegationEvent, error) {
	ev, err := a2aclient.DecodeEvent(raw)
	if err != nil {
		return nil, err
	}
	return m.Map(ev), nil
}

func TestMapStatusUpdate(t *testing.T) {
	m := streamingMapper(nil)
	evs := m.Map(status(a2a.TaskStateWorking, "Searching..."))
	if len(evs) != 1 || evs[0].Kind != delegation.DelegationStatus || evs[0].Status != "working" || evs[0].Text != "Searching..." || evs[0].Raw["remote_state"] != "TASK_STATE_WORKING" {
		t.Fatalf("%+v", evs)
	}
	if m.t.TaskID() != "task-1" || m.t.ContextID() != "ctx-1" {
		t.Errorf("ids %q %q", m.t.TaskID(), m.t.ContextID())
	}
	if evs := m.Map(status(a2a.TaskStateWorking, "Searching...")); len(evs) != 0 {
		t.Errorf("repeated status not de-duplicated: %+v", evs)
	}
}

func TestMapArtifactUpdate(t *testing.T) {
	store := artifact.NewMemoryStore(0)
	m := streamingMapper(store)
	ev := chunk("notes.md", "art/1", "# hi", false, true)
	ev.Artifact.Parts[0].MediaType = "text/markdown"
	evs := m.Map(ev)
	if len(evs) != 1 || evs[0].Kind != delegation.DelegationArtifactCreated {
		t.Fatalf("%+v", evs)
	}
	a := evs[0].Artifact
	if a.Name != "notes.md" || a.MimeType != "text/markdown" || a.ID != "art_1" || a.URI != "host://delegations/del-1/artifacts/art_1" || a.SizeBytes != 4 || evs[0].RemoteArtifactID != "art_1" {
		t.Errorf("artifact %+v", a)
	}
	got, err := store.Get(context.Background(), "run-1", "del-1", "art_1")
	if err != nil || string(got.Content) != "# hi" {
		t.Errorf("stored %+v %v", got, err)
	}
}

func TestMapAssistantOutputToText(t *testing.T) {
	m := streamingMapper(nil)
	var evs []delegation.DelegationEvent
	evs = append(evs, m.Map(chunk(ArtifactAssistantOutput, "msg-1", "Hello ", false, false))...)
	evs = append(evs, m.Map(chunk(ArtifactAssistantOutput, "msg-1", "world", true, true))...)
	want := []delegation.DelegationEventKind{delegation.DelegationTextStart, delegation.DelegationTextDelta, delegation.DelegationTextDelta, delegation.DelegationTextEnd}
	if len(evs) != len(want) {
		t.Fatalf("events %s", dt.KindsOf(evs))
	}
	for i, k := range want {
		if evs[i].Kind != k || evs[i].RemoteMessageID != "msg-1" {
			t.Errorf("event %d: %+v", i, evs[i])
		}
	}
	if evs[1].Delta+evs[2].Delta != "Hello world" || evs[3].Text != "Hello world" {
		t.Errorf("text %+v", evs)
	}
	// Polled: the text is a text message too, growing by what each poll
	// shows; a message that begins closes the one before it.
	p := testMapper(nil, false, false, 0)
	// Map's events are valid until its next call: keep a copy.
	evs = slices.Clone(p.Map(&a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking},
		Artifacts: []*a2a.Artifact{{ID: "msg-1", Name: ArtifactAssistantOutput, Parts: a2a.ContentParts{a2a.NewTextPart("Hel")}}}}))
	evs = append(evs, p.Map(&a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking},
		Artifacts: []*a2a.Artifact{{ID: "msg-1", Name: ArtifactAssistantOutput, Parts: a2a.ContentParts{a2a.NewTextPart("Hello")}},
			{ID: "msg-2", Name: ArtifactAssistantOutput, Parts: a2a.ContentParts{a2a.NewTextPart("Bye")}}}})...)
	var text []string
	for _, ev := range evs {
		switch ev.Kind {
		case delegation.DelegationTextStart:
			text = append(text, "start "+ev.RemoteMessageID)
		case delegation.DelegationTextDelta:
			text = append(text, ev.RemoteMessageID+" "+ev.Delta)
		case delegation.DelegationTextEnd:
			text = append(text, "end "+ev.RemoteMessageID+" "+ev.Text)
		}
	}
	if want := []string{"start msg-1", "msg-1 Hel", "msg-1 lo", "end msg-1 Hello", "start msg-2", "msg-2 Bye"}; !slices.Equal(text, want) {
		t.Errorf("polled text\n got %q\nwant %q", text, want)
	}
}

func TestMapAgentAdaptorResultToSummary(t *testing.T) {
	m := streamingMapper(nil)
	m.Map(chunk(ArtifactAssistantOutput, "msg-1", "long answer", false, true))
	res := &a2a.TaskArtifactUpdateEvent{TaskID: "task-1", ContextID: "ctx-1", LastChunk: true, Artifact: &a2a.Artifact{ID: ArtifactAgentAdaptorResult, Name: ArtifactAgentAdaptorResult,
		Parts: a2a.ContentParts{a2a.NewDataPart(map[string]any{"summary": "Short summary.", "status": "completed", "session_id": "s-1", "artifacts": []any{}})}}}
	if evs := m.Map(res); len(evs) != 0 {
		t.Errorf("the result artifact is not a UI artifact: %+v", evs)
	}
	evs := m.Map(status(a2a.TaskStateCompleted, ""))
	if len(evs) != 1 || evs[0].Kind != delegation.DelegationFinished || evs[0].Text != "Short summary." {
		t.Fatalf("%+v", evs)
	}
	if m.t.Summary() != "Short summary." || len(m.t.Messages()) != 1 || m.t.Messages()[0].Text != "long answer" {
		t.Errorf("summary %q messages %+v", m.t.Summary(), m.t.Messages())
	}
}

func TestMapTerminalStates(t *testing.T) {
	for _, tc := range []struct {
		state a2a.TaskState
		kind  delegation.DelegationEventKind
		code  delegation.FailureCode
	}{
		{a2a.TaskStateCompleted, delegation.DelegationFinished, ""},
		{a2a.TaskStateFailed, delegation.DelegationFailed, delegation.CodeRemoteFailed},
		{a2a.TaskStateRejected, delegation.DelegationFailed, delegation.CodeRemoteRejected},
		{a2a.TaskStateCanceled, delegation.DelegationCancelled, delegation.CodeCancelled},
		{"failed", delegation.DelegationFailed, delegation.CodeRemoteFailed}, // v0.3 spelling
	} {
		m := streamingMapper(nil)
		m.Map(chunk(ArtifactAssistantOutput, "m", "partial", false, false))
		evs := m.Map(status(tc.state, "why"))
		last := evs[len(evs)-1]
		if last.Kind != tc.kind || (tc.code != "" && (last.Error == nil || last.Error.Code != tc.code || last.Error.RemoteStatus == "")) {
			t.Errorf("%s: %+v", tc.state, last)
		}
		if evs[0].Kind != delegation.DelegationTextEnd {
			t.Errorf("%s: open text not closed before the terminal: %s", tc.state, dt.KindsOf(evs))
		}
		if later := m.Map(status(a2a.TaskStateCompleted, "again")); later != nil {
			t.Errorf("%s: events after terminal: %+v", tc.state, later)
		}
		if m.t.Finish(delegation.DelegationFailed, nil) != nil {
			t.Errorf("%s: second terminal", tc.state)
		}
	}
}

func TestMapInputRequired(t *testing.T) {
	m := testMapper(nil, false, true, 0)
	evs := m.Map(status(a2a.TaskStateInputRequired, "Which year?"))
	if len(evs) != 1 || evs[0].Kind != delegation.DelegationInputRequired || evs[0].Text != "Which year?" || evs[0].Status != "input-required" {
		t.Fatalf("%+v", evs)
	}
	m = testMapper(nil, false, false, 0)
	if evs := m.Map(status(a2a.TaskStateInputRequired, "Which year?")); len(evs) != 1 || evs[0].Kind != delegation.DelegationStatus {
		t.Errorf("policy off: %+v", evs)
	}
}

func TestMapMalformedPayloadsDoNotPanic(t *testing.T) {
	m := streamingMapper(artifact.NewMemoryStore(0))
	bad := []a2a.Event{
		nil,
		(*a2a.Task)(nil),
		&a2a.Task{},
		&a2a.Task{ID: "t", Status: a2a.TaskStatus{State: "BOGUS"}},
		&a2a.Task{ID: "t", Artifacts: []*a2a.Artifact{nil}, Status: a2a.TaskStatus{State: a2a.TaskStateWorking}},
		&a2a.TaskStatusUpdateEvent{},
		&a2a.TaskArtifactUpdateEvent{TaskID: "t"},
		&a2a.TaskArtifactUpdateEvent{TaskID: "t", Artifact: &a2a.Artifact{Parts: a2a.ContentParts{nil, {}}}},
		&a2a.TaskArtifactUpdateEvent{TaskID: "t", Artifact: &a2a.Artifact{Name: ArtifactAgentAdaptorResult, Parts: a2a.ContentParts{a2a.NewDataPart("not an object")}}},
		&a2a.Message{},
		&a2a.TaskStatusUpdateEvent{TaskID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Message: &a2a.Message{Parts: a2a.ContentParts{nil}}}},
	}
	for _, ev := range bad {
		_ = m.Map(ev)
	}
	if _, err := decodeAndMap(m, []byte(`{"jsonrpc":"2.0","result":{"statusUpdate":{"taskId":1}}}`)); err == nil {
		t.Error("malformed JSON payload accepted")
	}
}

// A generic A2A remote streams its answer as artifacts (the task's output)
// and completes with a bare status message: the output is the answer, the
// status message is not (docs/design.md#tool-contract).
func TestMapGenericRemoteAnswerIsItsOutput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []a2a.Event
		want   string
	}{
		{"assistant-output chunks", []a2a.Event{
			status(a2a.TaskStateWorking, "Thinking..."),
			chunk(ArtifactAssistantOutput, "out-1", "The capital ", false, false),
			chunk(ArtifactAssistantOutput, "out-1", "is Paris.", true, true),
		}, "The capital is Paris."},
		{"any text artifact", []a2a.Event{
			status(a2a.TaskStateWorking, "Thinking..."),
			chunk("answer.md", "answer", "# Paris\n", false, false),
			chunk("answer.md", "answer", "The capital.", true, true),
		}, "# Paris\nThe capital."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := artifact.NewMemoryStore(0)
			m := streamingMapper(store)
			for _, ev := range tc.events {
				m.Map(ev)
			}
			evs := m.Map(status(a2a.TaskStateCompleted, "done"))
			// The bare "done" does not hide the output: it follows it, as the
			// remote's last word (docs/design.md#tool-contract).
			if last := evs[len(evs)-1]; last.Kind != delegation.DelegationFinished || last.Text != tc.want+"\n\ndone" {
				t.Fatalf("terminal %+v", last)
			}
			if m.t.Summary() != tc.want+"\n\ndone" {
				t.Errorf("summary %q, want %q", m.t.Summary(), tc.want+"\n\ndone")
			}
			if msgs := m.t.Messages(); len(msgs) != 2 || msgs[0].Text != tc.want || msgs[1].Text != "done" {
				t.Errorf("messages %+v, want the answer, then the last word", msgs)
			}
		})
	}
	// A working status message alone never becomes the answer.
	m := streamingMapper(nil)
	m.Map(status(a2a.TaskStateWorking, "Thinking..."))
	m.Map(status(a2a.TaskStateCompleted, ""))
	if m.t.Summary() != "" || len(m.t.Messages()) != 0 {
		t.Errorf("progress became the answer: %q %+v", m.t.Summary(), m.t.Messages())
	}
}

// After an answer, the task snapshot that leads the follow-up stream (or
// repeats the very status that asked) is not a state the answer reached:
// its artifacts are mapped, its interrupted state is not
// (docs/design.md#event-mapping).
func TestMapFollowUpIgnoresTheStaleSnapshot(t *testing.T) {
	m := testMapper(nil, true, true, 0)
	ask := status(a2a.TaskStateInputRequired, "Which year?")
	if evs := m.Map(ask); len(evs) != 1 || evs[0].Kind != delegation.DelegationInputRequired {
		t.Fatalf("%+v", evs)
	}
	snapshot := &a2a.Task{ID: tinfo.TaskID, ContextID: tinfo.ContextID, Status: ask.Status,
		Artifacts: []*a2a.Artifact{{ID: "notes", Name: "notes.txt", Parts: a2a.ContentParts{a2a.NewTextPart("kept")}}}}

	m.beginFollowUp()
	if m.followUpOf() != a2a.TaskStateInputRequired {
		t.Errorf("followUpOf %q", m.followUpOf())
	}
	evs := m.Map(snapshot)
	if len(evs) != 1 || evs[0].Kind != delegation.DelegationArtifactCreated {
		t.Fatalf("leading snapshot: %s", dt.KindsOf(evs))
	}
	// Polling: the same status again is still stale.
	if evs := m.Map(snapshot); len(evs) != 0 {
		t.Fatalf("repeated snapshot: %s", dt.KindsOf(evs))
	}
	// A new question (a new status message) is a state after the send.
	again := &a2a.Task{ID: tinfo.TaskID, ContextID: tinfo.ContextID, Status: status(a2a.TaskStateInputRequired, "Which month?").Status}
	if evs := m.Map(again); len(evs) != 1 || evs[0].Kind != delegation.DelegationInputRequired || evs[0].Text != "Which month?" || m.awaiting {
		t.Fatalf("second question: %s awaiting=%v", dt.KindsOf(evs), m.awaiting)
	}

	// A status update after the send always counts, even a repeat of the question.
	m.beginFollowUp()
	if evs := m.Map(status(a2a.TaskStateInputRequired, "Which month?")); len(evs) != 1 || evs[0].Kind != delegation.DelegationInputRequired || m.awaiting {
		t.Fatalf("status update after the send: %s", dt.KindsOf(evs))
	}
	// A leading snapshot that already moved on is mapped as usual.
	m.beginFollowUp()
	moved := &a2a.Task{ID: tinfo.TaskID, ContextID: tinfo.ContextID, Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
	if evs := m.Map(moved); len(evs) != 1 || evs[0].Status != "working" || m.awaiting {
		t.Fatalf("working snapshot: %s", dt.KindsOf(evs))
	}
}

// A repeated append chunk is a duplicate delivery: dropped, whether its
// parts are plain text (compared field by field) or carry data or metadata
// (compared by JSON); a chunk that differs in anything is kept.
func TestRepeatedAppendChunkDropped(t *testing.T) {
	withData := func(text string) *a2a.TaskArtifactUpdateEvent {
		c := chunk(ArtifactAssistantOutput, "out", text, true, false)
		c.Artifact.Parts = append(c.Artifact.Parts, a2a.NewDataPart(map[string]any{"n": 1}))
		return c
	}
	withMeta := func(text string) *a2a.TaskArtifactUpdateEvent {
		c := chunk(ArtifactAssistantOutput, "out", text, true, false)
		c.Metadata = map[string]any{"k": "v"}
		return c
	}
	for name, mk := range map[string]func(string) *a2a.TaskArtifactUpdateEvent{
		"text": func(s string) *a2a.TaskArtifactUpdateEvent {
			return chunk(ArtifactAssistantOutput, "out", s, true, false)
		},
		"data": withData, "metadata": withMeta,
	} {
		m := streamingMapper(nil)
		m.Map(chunk(ArtifactAssistantOutput, "out", "a", false, false))
		if evs := m.Map(mk("b")); countKind(evs, delegation.DelegationTextDelta) != 1 {
			t.Fatalf("%s: first append chunk: %s", name, dt.KindsOf(evs))
		}
		if evs := m.Map(mk("b")); len(evs) != 0 {
			t.Errorf("%s: repeated append chunk kept: %s", name, dt.KindsOf(evs))
		}
		if evs := m.Map(mk("c")); countKind(evs, delegation.DelegationTextDelta) != 1 {
			t.Errorf("%s: a different chunk was dropped: %s", name, dt.KindsOf(evs))
		}
	}
}

func countKind(evs []delegation.DelegationEvent, k delegation.DelegationEventKind) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == k {
			n++
		}
	}
	return n
}

// resultArtifact is an agent-adaptor-result artifact update with data.
func resultArtifact(data map[string]any) *a2a.TaskArtifactUpdateEvent {
	return &a2a.TaskArtifactUpdateEvent{TaskID: tinfo.TaskID, ContextID: tinfo.ContextID, LastChunk: true,
		Artifact: &a2a.Artifact{ID: ArtifactAgentAdaptorResult, Name: ArtifactAgentAdaptorResult, Parts: a2a.ContentParts{a2a.NewDataPart(data)}}}
}

// A terminal state reached without output (or with artifacts the
// remote's structured result lists but never sent) is held for one read of
// the task, whose artifacts then come before the terminal event
// (docs/design.md#event-mapping).
func TestMapHoldsAnEmptyTerminalForAReadBack(t *testing.T) {
	full := &a2a.Task{ID: tinfo.TaskID, ContextID: tinfo.ContextID, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted},
		Artifacts: []*a2a.Artifact{{ID: "extra", Name: "extra.txt", Parts: a2a.ContentParts{a2a.NewTextPart("Extra.")}}}}
	for _, tc := range []struct {
		name   string
		before []a2a.Event
		hold   bool
	}{
		{"no output", nil, true},
		{"a listed artifact missing", []a2a.Event{resultArtifact(map[string]any{"summary": "S.", "artifacts": []any{map[string]any{"id": "extra"}}})}, true},
		{"output seen", []a2a.Event{chunk("answer", "answer", "A.", false, true)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := streamingMapper(artifact.NewMemoryStore(0))
			m.readBack = true
			for _, ev := range tc.before {
				m.Map(ev)
			}
			evs := m.Map(status(a2a.TaskStateCompleted, ""))
			held := m.takeHeld()
			if (held != nil) != tc.hold {
				t.Fatalf("held %v, want %v (events %s)", held != nil, tc.hold, dt.KindsOf(evs))
			}
			if !tc.hold {
				return
			}
			if len(evs) != 0 || m.t.Terminal() != "" {
				t.Fatalf("a held terminal published %s", dt.KindsOf(evs))
			}
			evs = m.readBackTask(*held, full)
			if len(evs) < 2 || evs[0].Kind != delegation.DelegationArtifactCreated || evs[len(evs)-1].Kind != delegation.DelegationFinished {
				t.Fatalf("after the read: %s", dt.KindsOf(evs))
			}
			if m.takeHeld() != nil || m.Map(status(a2a.TaskStateCompleted, "")) != nil {
				t.Error("read back more than once")
			}
		})
	}
}

// The agent-adaptor-result part is read whole: summary, status, session,
// usage, artifacts, and the error's message for a failure without a
// status message.
func TestMapAgentAdaptorResultWhole(t *testing.T) {
	m := streamingMapper(nil)
	m.Map(resultArtifact(map[string]any{"summary": "It broke.", "status": "failed", "session_id": "sess-1",
		"usage": map[string]any{"input_tokens": 3, "output_tokens": 4}, "artifacts": []any{map[string]any{"id": "a1", "name": "a1.md"}},
		"error": map[string]any{"code": "run_failed", "message": "the CLI exited 1"}}))
	evs := m.Map(status(a2a.TaskStateFailed, ""))
	r := m.t.RemoteResult()
	if r == nil || r.Summary != "It broke." || r.Status != "failed" || r.SessionID != "sess-1" || r.InputTokens != 3 || r.OutputTokens != 4 ||
		len(r.ArtifactIDs) != 1 || r.ArtifactIDs[0] != "a1" {
		t.Fatalf("result %+v", r)
	}
	if last := evs[len(evs)-1]; last.Kind != delegation.DelegationFailed || !strings.Contains(last.Error.Message, "the CLI exited 1") {
		t.Errorf("failure %+v", last)
	}
}

// An input-required state without a message of its own asks about what the
// agent said in its turn: a conversational agent (Gemini CLI's A2A server)
// streams its answer as working status messages, chunk by chunk, and ends
// every turn so.
func TestMapInterruptionWithoutMessageAsksAboutTheTurn(t *testing.T) {
	m := testMapper(nil, true, true, 0)
	m.Map(status(a2a.TaskStateWorking, "Gemini her"))
	m.Map(status(a2a.TaskStateWorking, "e: offline."))
	evs := m.Map(status(a2a.TaskStateInputRequired, ""))
	if len(evs) != 1 || evs[0].Kind != delegation.DelegationInputRequired || evs[0].Text != "Gemini here: offline." || m.t.Question() != "Gemini here: offline." {
		t.Fatalf("events %+v question %q", evs, m.t.Question())
	}
	// The next turn starts afresh.
	m.beginFollowUp()
	m.Map(status(a2a.TaskStateWorking, "Second."))
	m.Map(status(a2a.TaskStateInputRequired, ""))
	if m.t.Question() != "Second." {
		t.Errorf("second turn's question %q", m.t.Question())
	}
}
