package a2adelegation

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
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

func streamingMapper(store *MemoryArtifactStore) *mapper {
	cfg := mapperConfig{streamText: true, runID: "run-1", delegationID: "del-1", maxArtifactBytes: 1 << 20}
	if store != nil {
		cfg.put = func(a StoredArtifact) error { return store.Put(tctxBG(), a) }
	}
	return newMapper(cfg)
}

func TestMapStatusUpdate(t *testing.T) {
	m := streamingMapper(nil)
	evs := m.Map(status(a2a.TaskStateWorking, "Searching..."))
	if len(evs) != 1 || evs[0].Kind != DelegationStatus || evs[0].Status != "working" || evs[0].Text != "Searching..." || evs[0].Raw["remote_state"] != "TASK_STATE_WORKING" {
		t.Fatalf("%+v", evs)
	}
	if m.taskID != "task-1" || m.contextID != "ctx-1" {
		t.Errorf("ids %q %q", m.taskID, m.contextID)
	}
	if evs := m.Map(status(a2a.TaskStateWorking, "Searching...")); len(evs) != 0 {
		t.Errorf("repeated status not de-duplicated: %+v", evs)
	}
}

func TestMapArtifactUpdate(t *testing.T) {
	store := NewMemoryArtifactStore(0)
	m := streamingMapper(store)
	ev := chunk("notes.md", "art/1", "# hi", false, true)
	ev.Artifact.Parts[0].MediaType = "text/markdown"
	evs := m.Map(ev)
	if len(evs) != 1 || evs[0].Kind != DelegationArtifactCreated {
		t.Fatalf("%+v", evs)
	}
	a := evs[0].Artifact
	if a.Name != "notes.md" || a.MimeType != "text/markdown" || a.ID != "art_1" || a.URI != "host://delegations/del-1/artifacts/art_1" || a.SizeBytes != 4 || evs[0].RemoteArtifactID != "art_1" {
		t.Errorf("artifact %+v", a)
	}
	got, err := store.Get(tctxBG(), "run-1", "del-1", "art_1")
	if err != nil || string(got.Content) != "# hi" {
		t.Errorf("stored %+v %v", got, err)
	}
}

func TestMapAssistantOutputToText(t *testing.T) {
	m := streamingMapper(nil)
	var evs []DelegationEvent
	evs = append(evs, m.Map(chunk(ArtifactAssistantOutput, "msg-1", "Hello ", false, false))...)
	evs = append(evs, m.Map(chunk(ArtifactAssistantOutput, "msg-1", "world", true, true))...)
	want := []DelegationEventKind{DelegationTextStart, DelegationTextDelta, DelegationTextDelta, DelegationTextEnd}
	if len(evs) != len(want) {
		t.Fatalf("events %s", kindsOf(evs))
	}
	for i, k := range want {
		if evs[i].Kind != k || evs[i].RemoteMessageID != "msg-1" {
			t.Errorf("event %d: %+v", i, evs[i])
		}
	}
	if evs[1].Delta+evs[2].Delta != "Hello world" || evs[3].Text != "Hello world" {
		t.Errorf("text %+v", evs)
	}
	// Not streaming: no deltas, only status text.
	p := newMapper(mapperConfig{})
	evs = p.Map(chunk(ArtifactAssistantOutput, "msg-1", "Hello", false, true))
	if len(evs) != 1 || evs[0].Kind != DelegationStatus || evs[0].Text != "Hello" {
		t.Errorf("polling mode %+v", evs)
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
	if len(evs) != 1 || evs[0].Kind != DelegationFinished || evs[0].Text != "Short summary." {
		t.Fatalf("%+v", evs)
	}
	if m.summary() != "Short summary." || len(m.messages()) != 1 || m.messages()[0].Text != "long answer" {
		t.Errorf("summary %q messages %+v", m.summary(), m.messages())
	}
}

func TestMapTerminalStates(t *testing.T) {
	for _, tc := range []struct {
		state a2a.TaskState
		kind  DelegationEventKind
		code  FailureCode
	}{
		{a2a.TaskStateCompleted, DelegationFinished, ""},
		{a2a.TaskStateFailed, DelegationFailed, CodeRemoteFailed},
		{a2a.TaskStateRejected, DelegationFailed, CodeRemoteRejected},
		{a2a.TaskStateCanceled, DelegationCancelled, CodeCancelled},
		{"failed", DelegationFailed, CodeRemoteFailed}, // v0.3 spelling
	} {
		m := streamingMapper(nil)
		m.Map(chunk(ArtifactAssistantOutput, "m", "partial", false, false))
		evs := m.Map(status(tc.state, "why"))
		last := evs[len(evs)-1]
		if last.Kind != tc.kind || (tc.code != "" && (last.Error == nil || last.Error.Code != tc.code || last.Error.RemoteStatus == "")) {
			t.Errorf("%s: %+v", tc.state, last)
		}
		if evs[0].Kind != DelegationTextEnd {
			t.Errorf("%s: open text not closed before the terminal: %s", tc.state, kindsOf(evs))
		}
		if later := m.Map(status(a2a.TaskStateCompleted, "again")); later != nil {
			t.Errorf("%s: events after terminal: %+v", tc.state, later)
		}
		if m.finish(DelegationFailed, nil) != nil {
			t.Errorf("%s: second terminal", tc.state)
		}
	}
}

func TestMapInputRequired(t *testing.T) {
	m := newMapper(mapperConfig{allowInput: true})
	evs := m.Map(status(a2a.TaskStateInputRequired, "Which year?"))
	if len(evs) != 1 || evs[0].Kind != DelegationInputRequired || evs[0].Text != "Which year?" || evs[0].Status != "input-required" {
		t.Fatalf("%+v", evs)
	}
	m = newMapper(mapperConfig{})
	if evs := m.Map(status(a2a.TaskStateInputRequired, "Which year?")); len(evs) != 1 || evs[0].Kind != DelegationStatus {
		t.Errorf("policy off: %+v", evs)
	}
}

func TestMapMalformedPayloadsDoNotPanic(t *testing.T) {
	m := streamingMapper(NewMemoryArtifactStore(0))
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

func TestSanitizeArtifactMeta(t *testing.T) {
	m := SanitizeArtifactMeta("../../etc/passwd", "name\x00with\ncontrol", "text/html; charset=utf-8")
	if strings.Contains(m.ID, "/") || m.Name != "namewithcontrol" || m.MimeType != "text/html; charset=utf-8" {
		t.Errorf("%+v", m)
	}
	if m := SanitizeArtifactMeta("", "", "not a mime"); m.ID != "" || m.Name != "artifact" || m.MimeType != "" {
		t.Errorf("%+v", m)
	}
	if _, _, ok := ParseArtifactURI("host://delegations/del-1/artifacts/a.md"); !ok {
		t.Error("valid URI rejected")
	}
	if _, _, ok := ParseArtifactURI("host://delegations/../artifacts/x"); ok {
		t.Error("traversal accepted")
	}
}
