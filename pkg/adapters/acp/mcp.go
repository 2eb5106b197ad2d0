package acp

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	agentadaptor "github.com/seed0634/agentadaptor"
)

// server is one MCP server of the run as ACP carries it: every ${VAR}
// reference resolved, because an ACP agent takes header and env values
// literally. The values travel only over the child's stdin.
type server struct {
	key     string
	http    bool
	url     string
	headers []sdk.HttpHeader
	// bearer is the token of an http server that takes one (from
	// BearerTokenEnvVar or an "Authorization: Bearer ${VAR}" header), kept
	// apart so that the stdio bridge can receive it by environment.
	bearer  string
	command string
	args    []string
	env     []sdk.EnvVariable
}

// planMCP resolves the run's MCP set. A reference is looked up in the
// run's environment additions, then in the host's environment (which the
// child inherits); one found in neither is a *agentadaptor.ConfigError
// naming the variable.
func planMCP(specs []agentadaptor.MCPServerSpec, env map[string]string) ([]server, error) {
	out := make([]server, 0, len(specs))
	for _, s := range specs {
		field := func(f string) string { return fmt.Sprintf("MCPServerSpec[%s].%s", s.Key, f) }
		expand := func(f, v string) (string, error) {
			var missing string
			x := agentadaptor.ExpandVars(v, lookupAll(agentadaptor.VarRefs(v), env, &missing))
			if missing != "" {
				return "", &agentadaptor.ConfigError{Field: field(f), Reason: fmt.Sprintf("references ${%s}, which neither the run nor the host environment sets", missing)}
			}
			return x, nil
		}
		sv := server{key: s.Key}
		if s.EffectiveTransport() == agentadaptor.MCPTransportHTTP {
			sv.http = true
			var err error
			if sv.url, err = expand("URL", s.URL); err != nil {
				return nil, err
			}
			if s.BearerTokenEnvVar != "" {
				if sv.bearer, err = expand("BearerTokenEnvVar", "${"+s.BearerTokenEnvVar+"}"); err != nil {
					return nil, err
				}
			}
			for _, k := range sortedKeys(s.Headers) {
				v, err := expand("Headers", s.Headers[k])
				if err != nil {
					return nil, err
				}
				if strings.EqualFold(k, "Authorization") && sv.bearer == "" && strings.HasPrefix(v, "Bearer ") && strings.HasPrefix(s.Headers[k], "Bearer ${") {
					sv.bearer = strings.TrimPrefix(v, "Bearer ")
					continue
				}
				sv.headers = append(sv.headers, sdk.HttpHeader{Name: k, Value: v})
			}
			out = append(out, sv)
			continue
		}
		var err error
		if sv.command, err = expand("Command", s.Command); err != nil {
			return nil, err
		}
		for _, a := range s.Args {
			x, err := expand("Args", a)
			if err != nil {
				return nil, err
			}
			sv.args = append(sv.args, x)
		}
		sv.env = []sdk.EnvVariable{}
		for _, k := range sortedKeys(s.Env) {
			v, err := expand("Env", s.Env[k])
			if err != nil {
				return nil, err
			}
			sv.env = append(sv.env, sdk.EnvVariable{Name: k, Value: v})
		}
		out = append(out, sv)
	}
	return out, nil
}

func lookupAll(names []string, env map[string]string, missing *string) map[string]string {
	vars := map[string]string{}
	for _, n := range names {
		if v, ok := env[n]; ok {
			vars[n] = v
		} else if v, ok := os.LookupEnv(n); ok {
			vars[n] = v
		} else if *missing == "" {
			*missing = n
		}
	}
	return vars
}

// bridgeTokenEnv is the variable the stdio bridge reads its bearer token
// from.
const bridgeTokenEnv = "AGENTADAPTOR_MCP_BRIDGE_TOKEN"

// acpServers renders the plan for session/new or session/load. An http
// server goes as http when the agent's mcpCapabilities include it, else
// through the stdio bridge (token in the bridge's environment, never in
// argv); without a bridge that is a *agentadaptor.ConfigError.
func acpServers(plan []server, caps sdk.McpCapabilities, bridge *StdioBridge) ([]sdk.McpServer, error) {
	out := make([]sdk.McpServer, 0, len(plan))
	for _, s := range plan {
		switch {
		case s.http && caps.Http:
			h := append([]sdk.HttpHeader{}, s.headers...)
			if s.bearer != "" {
				h = append(h, sdk.HttpHeader{Name: "Authorization", Value: "Bearer " + s.bearer})
			}
			out = append(out, sdk.McpServer{Http: &sdk.McpServerHttpInline{Type: "http", Name: s.key, Url: s.url, Headers: h}})
		case s.http && bridge != nil:
			if len(s.headers) > 0 {
				return nil, &agentadaptor.ConfigError{Field: fmt.Sprintf("MCPServerSpec[%s].Headers", s.key), Reason: "the agent cannot reach http MCP servers and the stdio bridge carries a bearer token only"}
			}
			args := append(append([]string(nil), bridge.Args...), "--url", s.url)
			env := []sdk.EnvVariable{}
			if s.bearer != "" {
				args = append(args, "--bearer-env", bridgeTokenEnv)
				env = append(env, sdk.EnvVariable{Name: bridgeTokenEnv, Value: s.bearer})
			}
			out = append(out, sdk.McpServer{Stdio: &sdk.McpServerStdio{Name: s.key, Command: bridge.Command, Args: args, Env: env}})
		case s.http:
			return nil, &agentadaptor.ConfigError{Field: fmt.Sprintf("MCPServerSpec[%s]", s.key), Reason: "the agent's mcpCapabilities do not include http and no stdio bridge is configured (acp.Config.StdioBridge)"}
		default:
			out = append(out, sdk.McpServer{Stdio: &sdk.McpServerStdio{Name: s.key, Command: s.command, Args: append([]string{}, s.args...), Env: s.env}})
		}
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// MCPProfile returns what session/new will carry about the run's MCP
// servers (as JSON, for an agent that takes http servers, and through the
// stdio bridge when one is configured). It holds the servers' secrets:
// it is for tests (adaptertest.ConversationProfile), never for logs.
func (c *conversation) MCPProfile() string {
	var b strings.Builder
	for _, caps := range []sdk.McpCapabilities{{Http: true}, {}} {
		servers, err := acpServers(c.servers, caps, c.cfg.StdioBridge)
		if err != nil {
			continue
		}
		j, _ := json.Marshal(servers)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}
