package scripted_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
)

func TestMain(m *testing.M) {
	scripted.MaybeRunAgent()
	os.Exit(m.Run())
}

func writeScenario(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConformance(t *testing.T) {
	a, err := scripted.New(scripted.Config{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	plain := writeScenario(t, "- say: Hello from the scripted agent, streamed in a few chunks.\n")
	slow := writeScenario(t, "- say: working\n- sleep: 1h\n")
	adaptertest.Run(t, adaptertest.Harness{
		Adapter:        a,
		Plain:          []agentadaptor.RunOption{agentadaptor.WithAdapterOption(scripted.OptionScenario, plain)},
		Slow:           []agentadaptor.RunOption{agentadaptor.WithAdapterOption(scripted.OptionScenario, slow)},
		AdapterOptions: map[string]string{scripted.OptionScenario: plain},
	})
}

// A run with a scenario file needs no temp dir (the MCP configuration goes
// on the command line as JSON); a scenario file that changed since it
// validated is validated again, so a broken edit fails the next start.
func TestPrepareWithoutTempDirRevalidatesChangedScenario(t *testing.T) {
	path := writeScenario(t, "- say: one\n")
	a, err := scripted.New(scripted.Config{Scenario: path, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	mcp := []agentadaptor.MCPServerSpec{{Key: "a2a-delegation", Transport: agentadaptor.MCPTransportHTTP, URL: "http://127.0.0.1:9/mcp",
		Headers: map[string]string{"Authorization": "Bearer ${AGENT_ADAPTOR_RUN_TOKEN}"}}}
	prepare := func() error {
		req := &agentadaptor.AdapterRequest{RunID: "run-1", Prompt: "p", WorkDir: t.TempDir(), MCPServers: mcp}
		inv, err := a.Prepare(t.Context(), req)
		if err != nil {
			return err
		}
		if req.TempDir != "" {
			t.Errorf("a scenario file needs no temp dir, got %s", req.TempDir)
		}
		if !slices.Contains(inv.Args, `{"mcpServers":{"a2a-delegation":{"type":"http","url":"http://127.0.0.1:9/mcp","headers":{"Authorization":"Bearer ${AGENT_ADAPTOR_RUN_TOKEN}"}}}}`) {
			t.Errorf("the MCP configuration is not on the command line as JSON: %q", inv.Args)
		}
		return nil
	}
	for range 2 {
		if err := prepare(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, []byte("- bogus_step: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := prepare(); err == nil {
		t.Fatal("a scenario file broken since it validated was not validated again")
	}
}
