package hostconfig

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	good := `
addr: 127.0.0.1:9090
parent: {adapter: claude, model: sonnet}
agents:
  - key: research
    display_name: Research Agent
    protocol: a2a
    agent_card_url: http://127.0.0.1:9001/.well-known/agent-card.json
    auth_ref: env:RESEARCH_TOKEN
    shortcut: delegate_to_research_agent
    policy: {max_timeout: 180s, max_artifact_bytes: 1048576, allow_input_required: true,
             require_streaming: false, context: ephemeral, max_concurrent_per_run: 4,
             max_concurrent_global: 64}
`
	c, err := Parse("host.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:9090" || c.Parent.Adapter != "claude" || len(c.Agents) != 1 {
		t.Fatalf("%+v", c)
	}
	if p := c.Agents[0].Policy; time.Duration(p.MaxTimeout) != 180*time.Second || !*p.AllowInputRequired || p.MaxConcurrentGlobal != 64 {
		t.Fatalf("policy %+v", p)
	}
	empty, err := Parse("empty.yaml", nil)
	if err != nil || empty.Parent.Adapter != "scripted" {
		t.Fatalf("empty config: %+v %v", empty, err)
	}

	bad := []struct{ name, doc, field string }{
		{"unknown top", "adress: x\n", "adress"},
		{"unknown nested", "parent: {adapter: claude, modle: x}\n", "modle"},
		{"unknown agent field", "agents: [{key: a, agent_card_url: http://x, endpoint: y}]\n", "endpoint"},
		{"bad adapter", "parent: {adapter: gpt}\n", "parent.adapter"},
		{"scenario on claude", "parent: {adapter: claude, scenario: x.yaml}\n", "parent.scenario"},
		{"dup key", "agents: [{key: a, agent_card_url: http://x}, {key: a, agent_card_url: http://y}]\n", "agents[1].key"},
		{"bad key", "agents: [{key: 'A B', agent_card_url: http://x}]\n", "agents[0].key"},
		{"no card", "agents: [{key: a}]\n", "agents[0].agent_card_url"},
		{"agui no endpoint", "agents: [{key: a, protocol: agui}]\n", "agents[0].endpoint_url"},
		{"inline secret", "agents: [{key: a, agent_card_url: http://x, auth_ref: sk-123}]\n", "agents[0].auth_ref"},
		{"bad context", "agents: [{key: a, agent_card_url: http://x, policy: {context: forever}}]\n", "agents[0].policy.context"},
		{"scripted parent without its scenario", "agents: [{key: a, agent_card_url: http://x}]\n", "parent.scenario"},
		{"inline token", "auth: {tokens: [{name: alice, token_ref: s3cret-token-123456}]}\n", "auth.tokens[0].token_ref"},
		{"duplicate principal", "auth: {tokens: [{name: a, token_ref: env:A}, {name: a, token_ref: env:B}]}\n", "auth.tokens[1].name"},
		{"allowed host with a scheme", "auth: {allowed_hosts: ['https://x.example/']}\n", "auth.allowed_hosts[0]"},
		{"negative max_active_runs", "max_active_runs: -1\n", "max_active_runs"},
		{"permission_mode on codex", "parent: {adapter: codex, permission_mode: plan}\n", "parent.permission_mode"},
		{"unknown auth field", "auth: {token: x}\n", "token"},
		{"session_ttl under a minute", "auth: {session_ttl: 30s}\n", "auth.session_ttl"},
		{"bad input mode", "agents: [{key: a, agent_card_url: http://x, policy: {input_required: ask}}]\n", "agents[0].policy.input_required"},
		{"input mode contradicts", "agents: [{key: a, agent_card_url: http://x, policy: {input_required: return, allow_input_required: false}}]\n", "agents[0].policy.input_required"},
		{"input fail contradicts", "agents: [{key: a, agent_card_url: http://x, policy: {input_required: fail, allow_input_required: true}}]\n", "agents[0].policy.input_required"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("host.yaml", []byte(tt.doc))
			var e *Error
			if !errors.As(err, &e) || e.Field != tt.field {
				t.Fatalf("err = %v, want field %s", err, tt.field)
			}
		})
	}
	if _, err := Parse("host.yaml", []byte("agents: [{key: a, agent_card_url: http://x, policy: {max_timeout: soon}}]\n")); err == nil {
		t.Fatal("bad duration accepted")
	}
}

// Every example configuration in the repository parses.
func TestExampleConfigsParse(t *testing.T) {
	paths, _ := filepath.Glob("../../examples/configs/*.yaml")
	paths = append(paths, "../../examples/streaming-chat-copilotkit/host.real.yaml")
	n := 0
	for _, p := range paths {
		if strings.HasSuffix(p, "-scenario.yaml") {
			continue
		}
		if _, err := Load(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		n++
	}
	if n < 5 {
		t.Fatalf("found %d example configs", n)
	}
}

func TestParseInputRequired(t *testing.T) {
	c, err := Parse("host.yaml", []byte(`
parent: {adapter: codex}
agents:
  - {key: a, agent_card_url: http://x, policy: {input_required: return}}
  - {key: b, agent_card_url: http://x, policy: {input_required: fail, allow_input_required: false}}
  - {key: c, agent_card_url: http://x, policy: {allow_input_required: false}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Agents[0].Policy.InputRequired != "return" || c.Agents[1].Policy.InputRequired != "fail" || *c.Agents[2].Policy.AllowInputRequired {
		t.Fatalf("%+v", c.Agents)
	}
}

func TestParseAgentAuth(t *testing.T) {
	c, err := Parse("host.yaml", []byte(`
parent: {adapter: codex}
agents:
  - key: keyed
    agent_card_url: https://agents.example/.well-known/agent-card.json
    auth: {scheme: api_key, token_ref: env:KEYED_API_KEY, header: X-API-Key}
  - key: oauth
    agent_card_url: https://agents.example/.well-known/agent-card.json
    auth: {scheme: oauth2, client_id: agentadaptor, client_secret_ref: file:/run/secrets/oauth, token_url: https://auth.example/token, scopes: [a2a.invoke]}
  - key: carded
    agent_card_url: https://agents.example/.well-known/agent-card.json
    auth: {scheme: oauth2, client_id: agentadaptor, client_secret_ref: env:S}
  - key: bearer
    agent_card_url: https://agents.example/.well-known/agent-card.json
    auth: {scheme: bearer, token_ref: env:TOKEN}
`))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Agents[1].Auth; a == nil || a.Scheme != "oauth2" || a.ClientSecretRef != "file:/run/secrets/oauth" || len(a.Scopes) != 1 {
		t.Fatalf("%+v", c.Agents[1].Auth)
	}
	agent := func(auth string) string {
		return "agents: [{key: a, agent_card_url: http://x, auth: " + auth + "}]\n"
	}
	for _, tt := range []struct{ name, doc, field string }{
		{"no scheme", agent("{token_ref: env:X}"), "agents[0].auth.scheme"},
		{"unknown scheme", agent("{scheme: basic, token_ref: env:X}"), "agents[0].auth.scheme"},
		{"inline key", agent("{scheme: api_key, token_ref: sk-live-123}"), "agents[0].auth.token_ref"},
		{"inline client secret", agent("{scheme: oauth2, client_id: c, client_secret_ref: hunter22}"), "agents[0].auth.client_secret_ref"},
		{"no client id", agent("{scheme: oauth2, client_secret_ref: env:S}"), "agents[0].auth.client_id"},
		{"plain http token url", agent("{scheme: oauth2, client_id: c, client_secret_ref: env:S, token_url: http://auth.example/token}"), "agents[0].auth.token_url"},
		{"token url with userinfo", agent("{scheme: oauth2, client_id: c, client_secret_ref: env:S, token_url: 'https://u:p@auth.example/token'}"), "agents[0].auth.token_url"},
		{"bearer with header", agent("{scheme: bearer, token_ref: env:X, header: X-Key}"), "agents[0].auth.header"},
		{"bad header", agent("{scheme: api_key, token_ref: env:X, header: 'X Key'}"), "agents[0].auth.header"},
		{"mixed fields", agent("{scheme: api_key, token_ref: env:X, client_id: c}"), "agents[0].auth.scheme"},
		{"unknown auth field", agent("{scheme: api_key, token_ref: env:X, token: abc}"), "token"},
		{"with auth_ref", "agents: [{key: a, agent_card_url: http://x, auth_ref: env:X, auth: {scheme: bearer, token_ref: env:X}}]\n", "agents[0].auth.scheme"},
		{"agui", "agents: [{key: a, protocol: agui, endpoint_url: http://x, auth: {scheme: bearer, token_ref: env:X}}]\n", "agents[0].auth.scheme"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("host.yaml", []byte(tt.doc))
			var e *Error
			if !errors.As(err, &e) || e.Field != tt.field {
				t.Fatalf("err = %v, want field %s", err, tt.field)
			}
		})
	}
}

func TestClusterBlock(t *testing.T) {
	c, err := Parse("host.yaml", []byte("cluster: {nats_url: nats://127.0.0.1:4222, replica: a, creds_ref: env:NATS_CREDS}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster.NATSURL != "nats://127.0.0.1:4222" || c.Cluster.Replica != "a" || c.Cluster.Lease != DefaultLease {
		t.Fatalf("%+v", c.Cluster)
	}
	if c, err := Parse("host.yaml", []byte("cluster: {nats_url: 'nats://a:4222,nats://b:4222', lease: 3s}\n")); err != nil || time.Duration(c.Cluster.Lease) != 3*time.Second {
		t.Fatalf("%+v %v", c, err)
	}
	if c, err := Parse("host.yaml", []byte("cluster: {}\n")); err != nil || c.Cluster.NATSURL != "" || c.Cluster.Lease != 0 {
		t.Fatalf("an empty cluster block is one process: %+v %v", c, err)
	}
	for _, tt := range []struct{ name, doc, field string }{
		{"unknown field", "cluster: {nats_url: nats://x:4222, leases: 3s}\n", "leases"},
		{"fields without a url", "cluster: {replica: a}\n", "cluster.nats_url"},
		{"bad scheme", "cluster: {nats_url: 'http://x:4222'}\n", "cluster.nats_url"},
		{"no host", "cluster: {nats_url: 'nats-server'}\n", "cluster.nats_url"},
		{"credentials in the url", "cluster: {nats_url: 'nats://u:p@x:4222'}\n", "cluster.nats_url"},
		{"bad replica", "cluster: {nats_url: nats://x:4222, replica: 'a.b'}\n", "cluster.replica"},
		{"short lease", "cluster: {nats_url: nats://x:4222, lease: 100ms}\n", "cluster.lease"},
		{"inline creds", "cluster: {nats_url: nats://x:4222, creds_ref: '-----BEGIN NATS USER JWT-----'}\n", "cluster.creds_ref"},
		{"audit file in a cluster", "audit_file: a.jsonl\ncluster: {nats_url: nats://x:4222}\n", "audit_file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("host.yaml", []byte(tt.doc))
			var e *Error
			if !errors.As(err, &e) || e.Field != tt.field {
				t.Fatalf("got %v, want an error on %s", err, tt.field)
			}
		})
	}
}

func TestParentNice(t *testing.T) {
	for _, tt := range []struct {
		doc  string
		want int
	}{
		{"parent: {adapter: codex}\n", 0},
		{"parent: {adapter: codex, nice: 0}\n", 0},
		{"parent: {adapter: codex, nice: 10}\n", 10},
		{"parent: {adapter: codex, nice: 19}\n", 19},
	} {
		c, err := Parse("host.yaml", []byte(tt.doc))
		if err != nil || c.Parent.Nice != tt.want {
			t.Errorf("%q: %+v, %v; want nice %d", tt.doc, c, err, tt.want)
		}
	}
	for _, tt := range []struct{ name, doc, field string }{
		{"negative", "parent: {adapter: codex, nice: -5}\n", "parent.nice"},
		{"above 19", "parent: {adapter: codex, nice: 20}\n", "parent.nice"},
		{"not a number", "parent: {adapter: codex, nice: low}\n", ""},
		{"misspelt", "parent: {adapter: codex, niceness: 5}\n", "niceness"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("host.yaml", []byte(tt.doc))
			var e *Error
			if !errors.As(err, &e) || e.Field != tt.field {
				t.Fatalf("err = %v, want an error on field %q", err, tt.field)
			}
		})
	}
}

// log_format is text (the default) or json; anything else names the field.
func TestLogFormat(t *testing.T) {
	for doc, want := range map[string]string{"": "", "log_format: text\n": "text", "log_format: json\n": "json"} {
		c, err := Parse("host.yaml", []byte(doc))
		if err != nil || c.LogFormat != want {
			t.Errorf("%q: %q, %v; want %q", doc, c.LogFormat, err, want)
		}
	}
	_, err := Parse("host.yaml", []byte("log_format: logfmt\n"))
	var e *Error
	if !errors.As(err, &e) || e.Field != "log_format" || !strings.Contains(err.Error(), "text or json") {
		t.Fatalf("err = %v, want one on log_format", err)
	}
}
