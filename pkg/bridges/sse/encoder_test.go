package sse_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
)

func TestEncoder(t *testing.T) {
	var buf bytes.Buffer
	enc := sse.NewEncoder(&buf)
	rs := events.NewRunStartedEvent("t", "r")
	rs.TimestampMs = nil
	if err := enc.WriteEvent(rs); err != nil {
		t.Fatal(err)
	}
	if err := enc.WriteComment("keep-alive\nx"); err != nil {
		t.Fatal(err)
	}
	bad := events.NewTextMessageContentEvent("m", "") // empty delta: invalid
	if err := enc.WriteEvent(bad); err == nil || !strings.Contains(err.Error(), "TEXT_MESSAGE_CONTENT") {
		t.Errorf("invalid event accepted: %v", err)
	}
	if err := enc.WriteValue(map[string]string{"html": "<b>&</b>"}); err != nil {
		t.Fatal(err)
	}
	want := "id: 1\ndata: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n" +
		": keep-alive x\n\n" +
		"id: 2\ndata: {\"html\":\"<b>&</b>\"}\n\n"
	if buf.String() != want {
		t.Errorf("got\n%q\nwant\n%q", buf.String(), want)
	}
	if enc.LastID() != 2 {
		t.Errorf("LastID = %d", enc.LastID())
	}
	failing := sse.NewEncoder(failWriter{})
	if err := failing.WriteValue(1); err == nil || failing.LastID() != 0 {
		t.Errorf("write error: %v, LastID %d", err, failing.LastID())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestPrompt(t *testing.T) {
	msg := func(role types.Role, content any) types.Message {
		return types.Message{ID: "x", Role: role, Content: content}
	}
	tests := []struct {
		name    string
		in      types.RunAgentInput
		policy  sse.PromptPolicy
		want    string
		wantErr string
	}{
		{"string content", types.RunAgentInput{Messages: []types.Message{msg(types.RoleUser, "hi")}}, sse.PromptPolicy{}, "hi", ""},
		{"last user message wins", types.RunAgentInput{Messages: []types.Message{msg(types.RoleUser, "old"), msg(types.RoleAssistant, "a"), msg(types.RoleUser, "new"), msg(types.RoleTool, "t")}}, sse.PromptPolicy{}, "new", ""},
		{"text parts joined", types.RunAgentInput{Messages: []types.Message{msg(types.RoleUser, []any{
			map[string]any{"type": "text", "text": "a"}, map[string]any{"type": "binary", "mimeType": "image/png", "data": "AA=="}, map[string]any{"type": "text", "text": "b"}})}},
			sse.PromptPolicy{}, "a\nb", ""},
		{"system preamble", types.RunAgentInput{Messages: []types.Message{msg(types.RoleSystem, " Be brief. "), msg(types.RoleUser, "hi")}}, sse.PromptPolicy{},
			"[client instructions]\nBe brief.\n[end client instructions]\n\nhi", ""},
		{"system ignored", types.RunAgentInput{Messages: []types.Message{msg(types.RoleSystem, "Be brief."), msg(types.RoleUser, "hi")}}, sse.PromptPolicy{IgnoreSystem: true}, "hi", ""},
		{"empty system and context skipped", types.RunAgentInput{Context: []types.Context{{}}, Messages: []types.Message{msg(types.RoleDeveloper, ""), msg(types.RoleUser, "hi")}}, sse.PromptPolicy{}, "hi", ""},
		{"context", types.RunAgentInput{Context: []types.Context{{Description: "tz", Value: "UTC"}}, Messages: []types.Message{msg(types.RoleUser, "hi")}}, sse.PromptPolicy{},
			"[client context]\n- tz: UTC\n[end client context]\n\nhi", ""},
		{"context ignored", types.RunAgentInput{Context: []types.Context{{Description: "tz", Value: "UTC"}}, Messages: []types.Message{msg(types.RoleUser, "hi")}}, sse.PromptPolicy{IgnoreContext: true}, "hi", ""},
		{"no user", types.RunAgentInput{Messages: []types.Message{msg(types.RoleSystem, "s")}}, sse.PromptPolicy{}, "", "no_user_message"},
		{"bad part", types.RunAgentInput{Messages: []types.Message{msg(types.RoleUser, []any{"str"})}}, sse.PromptPolicy{}, "", "bad_message_content"},
		{"text part without text", types.RunAgentInput{Messages: []types.Message{msg(types.RoleUser, []any{map[string]any{"type": "text"}})}}, sse.PromptPolicy{}, "", "bad_message_content"},
		{"bad system content", types.RunAgentInput{Messages: []types.Message{msg(types.RoleSystem, 3.0), msg(types.RoleUser, "hi")}}, sse.PromptPolicy{}, "", "bad_message_content"},
		{"null content", types.RunAgentInput{Messages: []types.Message{msg(types.RoleUser, nil)}}, sse.PromptPolicy{}, "", "empty_user_message"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sse.Prompt(&tc.in, tc.policy)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
