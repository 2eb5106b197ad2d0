package mcptool_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/mcptool"
)

func FuzzToolInput(f *testing.F) {
	for _, s := range []string{
		`{"agent":"research","objective":"Find the API.","input":{"prompt":"p","context":"c","artifacts":[{"name":"a.md","uri":"host://artifact/a.md"}]},"constraints":{"timeout_seconds":180,"stream":true,"max_artifacts":10}}`,
		`{"agent":"research","objective":"x","endpoint_url":"http://evil"}`,
		`{"agent":"","objective":""}`, `null`, `[]`, `{}`, `{"agent":"a","objective":"b"} {}`, `{"agent":1}`,
		`{"agent":"a","objective":"b","constraints":{"timeout_seconds":-1}}`, `{"Agent":"a","OBJECTIVE":"b"}`,
		`{"agent":"research","objective":"2024","continue":{"delegation_id":"del-0123456789abcdef01234567"}}`,
		`{"agent":"research","objective":"2024","continue":{"delegation_id":"del-1"},"input":{"prompt":"p"}}`, `{"agent":"a","objective":"b","continue":{}}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, shortcut bool) {
		fixed := ""
		if shortcut {
			fixed = "research"
		}
		req, derr := mcptool.DecodeToolInput(data, fixed)
		if derr != nil {
			if derr.Code != delegation.CodeInvalidInput || derr.Message == "" {
				t.Fatalf("error %+v", derr)
			}
			return
		}
		if strings.TrimSpace(req.Agent) == "" || strings.TrimSpace(req.Objective) == "" || (shortcut && req.Agent != "research") {
			t.Fatalf("accepted %+v", req)
		}
		if req.RunID != "" || req.ParentToolCallID != "" || req.SessionKey != "" {
			t.Fatalf("tool input set host-owned fields: %+v", req)
		}
		if req.Continue != "" && (!strings.HasPrefix(req.Continue, "del-") || req.Input.Prompt != "" || req.Input.Context != "" || len(req.Input.Artifacts) > 0) {
			t.Fatalf("accepted continue %+v", req)
		}
		// Whatever was accepted has only the known fields.
		var generic map[string]any
		if json.Unmarshal(data, &generic) == nil {
			for k := range generic {
				switch k {
				case "agent", "objective", "input", "constraints", "continue":
				default:
					t.Fatalf("unknown field %q accepted", k)
				}
			}
		}
	})
}
