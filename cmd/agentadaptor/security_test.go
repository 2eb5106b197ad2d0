package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/internal/testkit/conntest"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
)

// envLogEnv names a file where every scripted agent this test binary runs
// appends its environment, one NAME=value per line (see TestMain).
const envLogEnv = "AGENTADAPTOR_TEST_ENV_LOG"

// recordEnv is the scripted agent's side of envLogEnv: the environment the
// agent CLI was started with.
func recordEnv() {
	p := os.Getenv(envLogEnv)
	if p == "" || os.Getenv(scripted.AgentEnv) != "1" {
		return
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	for _, kv := range os.Environ() {
		fmt.Fprintln(f, strings.ReplaceAll(kv, "\n", " "))
	}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	scenario := filepath.Join(dir, "parent.yaml")
	if err := os.WriteFile(scenario, []byte("- say: hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(body, "SCENARIO", scenario)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Every env:/file: reference of the host configuration is resolved when
// serve starts: an unset variable, an empty one or an unreadable file stops
// it with exit 2 and one line naming the field and the reference, never a
// value; an agent whose card is fetched at its first call included.
func TestServeResolvesEveryReferenceAtStartup(t *testing.T) {
	t.Setenv("CLI_ALICE_TOKEN", "alice-cli-token-0123456789")
	t.Setenv("CLI_EMPTY", "")
	missing := filepath.Join(t.TempDir(), "missing-secret")
	const agents = "parent: {adapter: scripted, scenario: SCENARIO}\nauth: {tokens: [{name: alice, token_ref: env:CLI_ALICE_TOKEN}]}\nagents:\n  - {key: research, agent_card_url: 'http://127.0.0.1:1/card', fetch_card: first_call, "
	for _, tc := range []struct{ name, config, field, ref string }{
		{"unset auth_ref", agents + "auth_ref: env:CLI_UNSET_RESEARCH_TOKEN}\n", "agents[0].auth_ref", "env:CLI_UNSET_RESEARCH_TOKEN"},
		{"empty client secret", agents + "auth: {scheme: oauth2, client_id: c, client_secret_ref: env:CLI_EMPTY, token_url: 'https://auth.example/token'}}\n", "agents[0].auth.client_secret_ref", "env:CLI_EMPTY"},
		{"unreadable token file", "parent: {adapter: scripted, scenario: SCENARIO}\nauth: {tokens: [{name: alice, token_ref: env:CLI_ALICE_TOKEN}, {name: bob, token_ref: 'file:" + missing + "'}]}\n", "auth.tokens[1].token_ref", "file:" + missing},
		{"unset NATS credentials", "parent: {adapter: scripted, scenario: SCENARIO}\ncluster: {nats_url: 'nats://127.0.0.1:1', creds_ref: env:CLI_UNSET_NATS}\n", "cluster.creds_ref", "env:CLI_UNSET_NATS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, tc.config)
			code, out, errOut := run(t, "serve", "--config", cfg, "--addr", "127.0.0.1:0")
			if code != 2 || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			line := strings.TrimSuffix(errOut, "\n")
			if strings.Contains(line, "\n") || !strings.Contains(line, cfg) || !strings.Contains(line, tc.field) || !strings.Contains(line, `"`+tc.ref+`"`) {
				t.Fatalf("want one line naming %s, %s and %s: %q", cfg, tc.field, tc.ref, errOut)
			}
			if strings.Contains(errOut, "alice-cli-token") {
				t.Fatalf("a value in the error: %q", errOut)
			}
		})
	}
}

// serve's listener takes at most max_connections connections at once.
func TestServeMaxConnections(t *testing.T) {
	base, stop := startServe(t, writeConfig(t, "parent: {adapter: scripted, scenario: SCENARIO}\nmax_connections: 2\n"))
	conntest.CheckLimit(t, strings.TrimPrefix(base, "http://"), 2, "/healthz")
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// a2a serve's listeners take at most --max-connections connections at
// once each: the HTTP one and the gRPC one.
func TestA2AServeMaxConnections(t *testing.T) {
	s := startA2AServe(t, "- say: hi\n", "--max-connections", "2", "--grpc-addr", "127.0.0.1:0")
	conntest.CheckLimit(t, s.listen, 2, a2abridge.PathAgentCard)
	if s.grpc == "" {
		t.Fatal("a2a serve did not report its gRPC address")
	}
	conntest.CheckLimitH2(t, s.grpc, 2)
	if code, errOut := runA2AServe(t, "--adapter", "scripted", "--scenario", writeScenarioFile(t, "- say: hi\n"), "--max-connections", "0"); code != 2 || !strings.Contains(errOut, "--max-connections") {
		t.Fatalf("--max-connections 0: exit %d %s", code, errOut)
	}
}

// The agent CLI that a2a serve runs inherits neither the --auth-token
// variables nor the tracing exporter's credential headers.
func TestA2AServeAgentInheritsNoSecret(t *testing.T) {
	log := filepath.Join(t.TempDir(), "env.log")
	t.Setenv(envLogEnv, log)
	t.Setenv("A2A_ENV_TOKEN", testToken)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "api-key=otlp-secret-9f8e7d")
	t.Setenv("A2A_ENV_PLAIN", "plain-value")
	s := startA2AServe(t, "- say: hi\n", "--auth-token", "env:A2A_ENV_TOKEN")
	status, _, b := s.do(t, &http.Client{}, httpCall{method: "POST", path: "/a2a/jsonrpc", ct: "application/json", body: sendMessageRPC,
		header: map[string]string{"Authorization": "Bearer " + testToken, "A2A-Version": "1.0"}})
	if status != 200 || !strings.Contains(string(b), "TASK_STATE_COMPLETED") {
		t.Fatalf("%d %s", status, b)
	}
	s.stop()
	f, err := os.Open(log)
	if err != nil {
		t.Fatalf("the agent logged no environment: %v", err)
	}
	defer f.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), testToken) || strings.Contains(sc.Text(), "otlp-secret-9f8e7d") {
			t.Errorf("a secret in the agent's environment: %s", strings.SplitN(sc.Text(), "=", 2)[0])
		}
		names[strings.SplitN(sc.Text(), "=", 2)[0]] = true
	}
	if !names["A2A_ENV_PLAIN"] || !names["PATH"] {
		t.Errorf("the agent lacks the ordinary environment: %v", names)
	}
}
