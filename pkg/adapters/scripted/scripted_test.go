package scripted_test

import (
	"os"
	"path/filepath"
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
