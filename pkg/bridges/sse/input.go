package sse

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"
)

// PromptPolicy says which parts of a RunAgentInput besides the last user
// message reach the prompt.
type PromptPolicy struct {
	// IgnoreSystem drops system and developer messages. By default their text
	// is prepended as a delimited "client instructions" block.
	IgnoreSystem bool
	// IgnoreContext drops the input's context entries. By default they are
	// prepended as a delimited "client context" block.
	IgnoreContext bool
}

// Prompt builds the run's prompt from a RunAgentInput: the text of the last
// message whose role is "user" (content as a string, or the "text" parts of
// an array of content parts joined by newlines; other parts are ignored),
// preceded, unless the policy says otherwise, by
//
//	[client instructions]
//	<text of every system/developer message, in order, separated by blank lines>
//	[end client instructions]
//
//	[client context]
//	- <description>: <value>
//	[end client context]
//
// and a blank line. Blocks without content are left out, so a plain chat
// turn's prompt is exactly the user's text. It fails when there is no user
// message or it has no text.
func Prompt(in *types.RunAgentInput, policy PromptPolicy) (string, error) {
	user := -1
	for i := len(in.Messages) - 1; i >= 0; i-- {
		if in.Messages[i].Role == types.RoleUser {
			user = i
			break
		}
	}
	if user < 0 {
		return "", &requestError{code: "no_user_message", msg: "the input has no message with role \"user\"; send the user's turn as the last user message"}
	}
	text, err := contentText(in.Messages[user].Content)
	if err != nil {
		return "", &requestError{code: "bad_message_content", msg: fmt.Sprintf("message %d: %v", user, err)}
	}
	if strings.TrimSpace(text) == "" {
		return "", &requestError{code: "empty_user_message", msg: "the last user message has no text (only text content parts are supported)"}
	}
	var b strings.Builder
	if !policy.IgnoreSystem {
		var sys []string
		for i, m := range in.Messages {
			if m.Role != types.RoleSystem && m.Role != types.RoleDeveloper {
				continue
			}
			t, err := contentText(m.Content)
			if err != nil {
				return "", &requestError{code: "bad_message_content", msg: fmt.Sprintf("message %d: %v", i, err)}
			}
			if t = strings.TrimSpace(t); t != "" {
				sys = append(sys, t)
			}
		}
		if len(sys) > 0 {
			b.WriteString("[client instructions]\n")
			b.WriteString(strings.Join(sys, "\n\n"))
			b.WriteString("\n[end client instructions]\n\n")
		}
	}
	if !policy.IgnoreContext && len(in.Context) > 0 {
		var lines []string
		for _, c := range in.Context {
			d, v := strings.TrimSpace(c.Description), strings.TrimSpace(c.Value)
			if d == "" && v == "" {
				continue
			}
			lines = append(lines, "- "+d+": "+v)
		}
		if len(lines) > 0 {
			b.WriteString("[client context]\n")
			b.WriteString(strings.Join(lines, "\n"))
			b.WriteString("\n[end client context]\n\n")
		}
	}
	b.WriteString(text)
	return b.String(), nil
}

// contentText extracts the text of a message's content: a string, or an
// array of content parts of which the {"type":"text","text":...} ones count.
func contentText(c any) (string, error) {
	switch v := c.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []any:
		var parts []string
		for i, p := range v {
			m, ok := p.(map[string]any)
			if !ok {
				return "", fmt.Errorf("content part %d is not an object", i)
			}
			if t, _ := m["type"].(string); t != "text" {
				continue
			}
			s, ok := m["text"].(string)
			if !ok {
				return "", fmt.Errorf("text content part %d has no string \"text\"", i)
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, "\n"), nil
	default:
		return "", fmt.Errorf("content must be a string or an array of content parts, not %T", c)
	}
}

// decodeInput decodes a RunAgentInput body (camelCase, with the snake_case
// aliases the AG-UI SDK accepts: thread_id, run_id, forwarded_props, ...).
func decodeInput(body []byte) (*types.RunAgentInput, error) {
	var in types.RunAgentInput
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, &requestError{code: "bad_json", msg: "the body is not a valid AG-UI RunAgentInput: " + err.Error()}
	}
	return &in, nil
}
