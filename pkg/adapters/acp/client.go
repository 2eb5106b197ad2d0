package acp

import (
	"context"
	"path"
	"regexp"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// client is the ACP client side of a conversation: it maps session
// updates, answers permission requests by policy, and offers neither file
// system nor terminal access (the agent uses its own tools).
type client struct{ c *conversation }

func (cl client) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	cl.c.update(n.Update)
	cl.c.order.mapped()
	return nil
}

// RequestPermission answers at once, by policy, and says so in the stream
// (custom payload acp.permission). A tool call seen here first is shown as
// started.
func (cl client) RequestPermission(ctx context.Context, req sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c := cl.c
	c.order.waitEarlier(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	tc := req.ToolCall
	title, kind := "", ""
	if tc.Title != nil {
		title = *tc.Title
	}
	if tc.Kind != nil {
		kind = string(*tc.Kind)
	}
	ts := c.toolStartLocked(string(tc.ToolCallId), title, kind, tc.Meta, tc.RawInput)
	if ts.kind == "" {
		ts.kind = kind
	}
	allow, rule := c.decide(ts.name, ts.kind)
	option, found := pickOption(req.Options, allow)
	raw := map[string]any{"tool_call_id": string(tc.ToolCallId), "tool": ts.name, "kind": ts.kind, "rule": rule}
	if allow {
		raw["decision"] = "allowed"
	} else {
		raw["decision"] = "denied"
	}
	if found {
		raw["option_id"] = string(option)
	}
	c.emitLocked(agentadaptor.StreamPayload{Name: "acp.permission", Raw: raw})
	if !found {
		// No option says what the policy decided: refuse the request
		// (an allow without an allow option cannot be expressed).
		return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}}, nil
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Selected: &sdk.RequestPermissionOutcomeSelected{Outcome: "selected", OptionId: option}}}, nil
}

// pickOption chooses the one-time option of the decision, else the
// permanent one.
func pickOption(opts []sdk.PermissionOption, allow bool) (sdk.PermissionOptionId, bool) {
	want := []sdk.PermissionOptionKind{sdk.PermissionOptionKindRejectOnce, sdk.PermissionOptionKindRejectAlways}
	if allow {
		want = []sdk.PermissionOptionKind{sdk.PermissionOptionKindAllowOnce, sdk.PermissionOptionKindAllowAlways}
	}
	for _, k := range want {
		for _, o := range opts {
			if o.Kind == k {
				return o.OptionId, true
			}
		}
	}
	return "", false
}

// decide applies the policy: the run's own MCP tools are the host's and
// allowed; then Deny, then Allow; else denied.
func (c *conversation) decide(name, kind string) (allow bool, rule string) {
	for _, s := range c.servers {
		if strings.HasPrefix(name, "mcp__"+s.key+"__") {
			return true, "host tool (MCP server " + s.key + ")"
		}
	}
	match := func(r string) bool {
		if k, ok := strings.CutPrefix(r, "kind:"); ok {
			m, _ := path.Match(k, kind)
			return m
		}
		m, _ := path.Match(r, name)
		return m
	}
	for _, r := range c.cfg.Permissions.Deny {
		if match(r) {
			return false, "deny " + r
		}
	}
	for _, r := range c.cfg.Permissions.Allow {
		if match(r) {
			return true, "allow " + r
		}
	}
	return false, "no rule allows it (default deny)"
}

var (
	// "delegate_to_agent (a2a-delegation MCP Server)": Gemini CLI and its
	// forks title an MCP tool call with the tool and its server.
	mcpTitle = regexp.MustCompile(`^([A-Za-z0-9_.-]+) \(([A-Za-z0-9_-]+) MCP Server\)$`)
	// "mcp__server__tool", as Claude names MCP tools.
	mcpName = regexp.MustCompile(`mcp__([A-Za-z0-9_-]+?)__([A-Za-z0-9_.-]+)`)
)

// toolName names an ACP tool call for the stream. ACP carries no tool
// name, only a title for people: an MCP tool of a known server is named
// mcp__<server>__<tool> (Claude's form, which the delegation stream
// recognises for call-order pairing), from _meta (claudeCode.toolName)
// or from the title's known forms; any other call is named by its title,
// else its kind.
func (c *conversation) toolName(title, kind string, meta map[string]any, rawInput any) string {
	if cc, ok := meta["claudeCode"].(map[string]any); ok {
		if n, ok := cc["toolName"].(string); ok && n != "" {
			return bounded(n)
		}
	}
	if srv, tool, _, ok := c.codexMCPInput(rawInput); ok {
		return "mcp__" + srv + "__" + tool
	}
	if m := mcpTitle.FindStringSubmatch(strings.TrimSpace(title)); m != nil {
		return "mcp__" + m[2] + "__" + m[1]
	}
	if m := mcpName.FindStringSubmatch(title); m != nil {
		return m[0]
	}
	// "Tool: server/tool" is codex-acp's title of an MCP tool call.
	bare := strings.TrimSpace(title)
	bare = strings.TrimSpace(strings.TrimPrefix(bare, "Tool:"))
	for _, s := range c.servers {
		// "server/tool" and "server.tool" forms of a run server.
		for _, sep := range []string{"/", "."} {
			if t, ok := strings.CutPrefix(bare, s.key+sep); ok && t != "" && !strings.ContainsAny(t, " \t") {
				return "mcp__" + s.key + "__" + t
			}
		}
	}
	if t := strings.TrimSpace(title); t != "" {
		return bounded(t)
	}
	if kind != "" {
		return kind
	}
	return "tool"
}

// codexMCPInput reads the raw input codex-acp gives an MCP tool call,
// {"server": S, "tool": T, "arguments": {...}}, for a server S of the run
// and a tool name T without spaces: the call's name and its arguments.
func (c *conversation) codexMCPInput(rawInput any) (server, tool string, args any, ok bool) {
	m, _ := rawInput.(map[string]any)
	if len(m) == 0 || len(m) > 3 {
		return "", "", nil, false
	}
	server, _ = m["server"].(string)
	tool, _ = m["tool"].(string)
	if tool == "" || strings.ContainsAny(tool, " \t\n") || len(tool) > 128 {
		return "", "", nil, false
	}
	if _, extra := m["arguments"]; !extra && len(m) == 3 {
		return "", "", nil, false
	}
	for _, s := range c.servers {
		if s.key == server {
			return server, tool, m["arguments"], true
		}
	}
	return "", "", nil, false
}

func bounded(s string) string {
	s = oneLine(s)
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

func (client) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsReadTextFile)
}

func (client) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsWriteTextFile)
}

func (client) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalCreate)
}

func (client) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalKill)
}

func (client) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalOutput)
}

func (client) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalRelease)
}

func (client) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalWaitForExit)
}
