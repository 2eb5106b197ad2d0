package mcptool_test

import (
	"context"
	"strings"
	"testing"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/mcptool"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

func TestRegistryStartupRejectsMalformedCard(t *testing.T) {
	bad := dt.Fake(t, fakea2a.Options{CardBody: []byte(`{"name":"x","version":"1"}`)})
	good := dt.StreamingFake(t, fakea2a.Completed("ok"))
	e := newEnv(t, []registry.RemoteAgentSpec{
		dt.SpecFor("broken", bad, func(s *registry.RemoteAgentSpec) {
			s.FetchCard = registry.FetchCardStartup
			s.Shortcut = "delegate_to_broken"
		}),
		dt.SpecFor("research", good, func(s *registry.RemoteAgentSpec) { s.FetchCard = registry.FetchCardStartup }),
	})
	if keys := e.D.Registry().Keys(); len(keys) != 1 || keys[0] != "research" {
		t.Errorf("exposed keys %v", keys)
	}
	for _, n := range e.srv.ToolNames() {
		if n == "delegate_to_broken" {
			t.Error("shortcut of a rejected agent exposed")
		}
	}
	if !strings.Contains(e.Logs.String(), "malformed agent card") {
		t.Errorf("startup problem not logged: %s", e.Logs.String())
	}
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "r", Agent: "broken", Objective: "x"})
	if res.Error == nil || res.Error.Code != delegation.CodeAgentUnavailable {
		t.Errorf("%+v", res)
	}
	// The card was fetched once, at startup, and never again.
	if n := len(bad.RequestsFor("AgentCard")); n != 1 {
		t.Errorf("%d card fetches", n)
	}
	// FailOnCardError turns it into a startup error.
	if _, closeEnv, err := env.Build([]registry.RemoteAgentSpec{dt.SpecFor("broken", bad, func(s *registry.RemoteAgentSpec) { s.FetchCard = registry.FetchCardStartup })},
		func(c *env.Config) { c.FailOnCardError = true }); err == nil {
		_ = closeEnv(context.Background())
		t.Error("New accepted a malformed startup card with FailOnCardError")
	}
}

func TestNewRejectsNonLoopbackAddr(t *testing.T) {
	e := env.NewEnv(t, nil)
	if _, err := mcptool.New(mcptool.Config{Delegator: e.D, Addr: "0.0.0.0:0"}); err == nil {
		t.Error("non-loopback MCP address accepted")
	}
}

func TestParentToolCallIDFromMeta(t *testing.T) {
	for meta, want := range map[*map[string]any]string{
		{mcptool.MetaClaudeToolUseID: "toolu_1"}:                                    "toolu_1",
		{mcptool.MetaCodexCallID: "call_2"}:                                         "call_2",
		{mcptool.MetaScriptedToolCallID: "call-3"}:                                  "call-3",
		{mcptool.MetaCodexCallID: 7}:                                                "",
		{mcptool.MetaCodexCallID: "bad\nid"}:                                        "",
		{"progressToken": "x"}:                                                      "",
		{mcptool.MetaClaudeToolUseID: "toolu_a", mcptool.MetaCodexCallID: "call_b"}: "toolu_a",
	} {
		if got := mcptool.ParentToolCallIDFromMeta(*meta); got != want {
			t.Errorf("%v: %q, want %q", *meta, got, want)
		}
	}
}

// The tool input has no URL field at all, at any level: the model names a
// registry key, never an endpoint.
func TestToolInputHasNoURLField(t *testing.T) {
	for _, in := range []string{
		`{"agent":"research","objective":"x","endpoint_url":"http://evil"}`,
		`{"agent":"research","objective":"x","agent_card_url":"http://evil"}`,
		`{"agent":"research","objective":"x","input":{"endpoint_url":"http://evil"}}`,
		`{"agent":"research","objective":"x","constraints":{"url":"http://evil"}}`,
	} {
		if _, derr := mcptool.DecodeToolInput([]byte(in), ""); derr == nil || derr.Code != delegation.CodeInvalidInput {
			t.Errorf("%s: %v", in, derr)
		}
	}
}

// continue{delegation_id} is the only way to name a delegation: strict like
// the rest, and with the answer only (docs/design.md#tool-contract).
func TestToolInputContinue(t *testing.T) {
	req, derr := mcptool.DecodeToolInput([]byte(`{"agent":"research","objective":"2024","continue":{"delegation_id":"del-0123456789abcdef01234567"}}`), "")
	if derr != nil || req.Continue != "del-0123456789abcdef01234567" || req.Objective != "2024" || req.Agent != "research" {
		t.Fatalf("%+v %v", req, derr)
	}
	req, derr = mcptool.DecodeToolInput([]byte(`{"objective":"2024","continue":{"delegation_id":"del-0123456789abcdef01234567"}}`), "research")
	if derr != nil || req.Continue == "" || req.Agent != "research" {
		t.Fatalf("shortcut: %+v %v", req, derr)
	}
	for _, in := range []string{
		`{"agent":"research","objective":"2024","continue":{}}`,
		`{"agent":"research","objective":"2024","continue":{"delegation_id":""}}`,
		`{"agent":"research","objective":"2024","continue":"del-0123456789abcdef01234567"}`,
		`{"agent":"research","objective":"2024","continue":{"delegation_id":"del-0123456789abcdef01234567","task_id":"t"}}`,
		`{"agent":"research","objective":"2024","continue":{"Delegation_ID":"del-0123456789abcdef01234567"}}`,
		`{"agent":"research","objective":"2024","continue":{"delegation_id":"http://evil.example"}}`,
		`{"agent":"research","objective":"","continue":{"delegation_id":"del-0123456789abcdef01234567"}}`,
		`{"agent":"research","objective":"2024","continue":{"delegation_id":"del-0123456789abcdef01234567"},"input":{"prompt":"p"}}`,
		`{"agent":"research","objective":"2024","continue":{"delegation_id":"del-0123456789abcdef01234567"},"constraints":{"timeout_seconds":5}}`,
	} {
		if _, derr := mcptool.DecodeToolInput([]byte(in), ""); derr == nil || derr.Code != delegation.CodeInvalidInput {
			t.Errorf("%s: %v", in, derr)
		}
	}
}
