package host_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/hostconfig"
	"github.com/seed0634/agentadaptor/internal/hostyaml"
	"github.com/seed0634/agentadaptor/internal/testkit/hosttest"
	"github.com/seed0634/agentadaptor/internal/testkit/shellagent"
)

// procEnviron reads a live process's environment as the kernel holds it.
func procEnviron(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			out[k] = v
		}
	}
	return out
}

// waitPID waits for a process to write its pid to path.
func waitPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A parent CLI started by serve's wiring, and a process it spawns, hold no
// secret of the host in their real environment (/proc/PID/environ): not
// the principals' tokens, not an agent's auth_ref, not the OTLP exporter's
// headers, not a parent.env.deny variable; with parent.env.allow only the
// listed variables, PATH, HOME and the run's own pass. The run's own
// variables (its MCP token) are there.
func TestParentEnvironmentHoldsNoHostSecret(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/environ")
	}
	secrets := map[string]string{
		"ENVTEST_ALICE_TOKEN":               "alice-secret-token-0123456789",
		"ENVTEST_BOB_TOKEN":                 "bob-secret-token-0123456789ab",
		"ENVTEST_RESEARCH_TOKEN":            "research-secret-9876543210",
		"OTEL_EXPORTER_OTLP_HEADERS":        "api-key=otlp-secret-headers-1",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "api-key=otlp-secret-headers-2",
		"ENVTEST_OPERATOR_DENIED":           "operator-denied-value-42",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("ENVTEST_PLAIN", "plain-value")
	t.Setenv("ENVTEST_ALLOWED", "allowed-value")
	for _, tc := range []struct {
		name         string
		allow        []string
		want, absent []string
	}{
		{"inherit less the secrets", nil, []string{"ENVTEST_PLAIN", "ENVTEST_ALLOWED", "PATH"}, nil},
		{"allow list", []string{"ENVTEST_ALLOWED", "ENVTEST_ALICE_*"}, []string{"ENVTEST_ALLOWED", "PATH", "HOME"}, []string{"ENVTEST_PLAIN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			parentGate, childGate := shellagent.Gate(filepath.Join(dir, "parent-gate")), shellagent.Gate(filepath.Join(dir, "child-gate"))
			grandchild := "echo $$ > " + shellagent.Quote(filepath.Join(dir, "grandchild.pid")) + "; " + childGate.Wait()
			script := shellagent.Script(
				"echo $$ > "+shellagent.Quote(filepath.Join(dir, "parent.pid")),
				"sh -c "+shellagent.Quote(grandchild)+" &",
				parentGate.Wait(),
				"wait",
				shellagent.Text("m1", "done"),
			)
			cfg := &hostconfig.Config{
				Parent: hostconfig.Parent{Adapter: "claude", Env: hostconfig.ParentEnv{Allow: tc.allow, Deny: []string{"ENVTEST_OPERATOR_*"}}},
				Auth:   hostconfig.Auth{Tokens: []hostconfig.Token{{Name: "alice", TokenRef: "env:ENVTEST_ALICE_TOKEN"}, {Name: "bob", TokenRef: "env:ENVTEST_BOB_TOKEN"}}},
				Agents: []hostconfig.Agent{{Key: "research", Protocol: "a2a", AgentCardURL: "http://127.0.0.1:1/.well-known/agent-card.json", AuthRef: "env:ENVTEST_RESEARCH_TOKEN"}},
			}
			h, err := hostyaml.New(context.Background(), cfg, hostyaml.Options{StateDir: t.TempDir(),
				AdapterFactory: func(hostconfig.Parent) (agentadaptor.Adapter, error) {
					return &shellagent.Adapter{AdapterName: "claude", Script: script}, nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			srv := hosttest.Serve(t, h)
			done := make(chan string, 1)
			go func() {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/agui", strings.NewReader(runBody("env-1")))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+secrets["ENVTEST_ALICE_TOKEN"])
				resp, err := srv.Client().Do(req)
				if err != nil {
					done <- err.Error()
					return
				}
				defer resp.Body.Close()
				var b bytes.Buffer
				_, _ = b.ReadFrom(resp.Body)
				done <- b.String()
			}()
			pids := map[string]int{"parent": waitPID(t, filepath.Join(dir, "parent.pid")), "grandchild": waitPID(t, filepath.Join(dir, "grandchild.pid"))}
			for who, pid := range pids {
				env := procEnviron(t, pid)
				raw, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
				for name, value := range secrets {
					if bytes.Contains(raw, []byte(value)) {
						t.Errorf("%s: the value of %s is in its environment", who, name)
					}
					if _, ok := env[name]; ok {
						t.Errorf("%s: %s is in its environment", who, name)
					}
				}
				for _, k := range append(tc.want, agentadaptor.EnvRunToken, agentadaptor.EnvRunID) {
					if _, ok := env[k]; !ok {
						t.Errorf("%s: %s missing", who, k)
					}
				}
				for _, k := range tc.absent {
					if _, ok := env[k]; ok {
						t.Errorf("%s: %s passed outside the allow list", who, k)
					}
				}
			}
			childGate.Release(t)
			parentGate.Release(t)
			select {
			case body := <-done:
				if !strings.Contains(body, "RUN_FINISHED") {
					t.Fatalf("the run did not finish: %s", body)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the run did not end")
			}
		})
	}
}
