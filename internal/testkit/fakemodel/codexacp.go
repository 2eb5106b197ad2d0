package fakemodel

import (
	"encoding/json"
	"os"
)

// CodexACPModelCatalog is CodexModelCatalog(slug) in the shape the Codex
// core inside codex-acp 0.16.0 (@zed-industries/codex-acp) parses: it
// also requires supports_reasoning_summaries and
// supports_parallel_tool_calls on every model.
func CodexACPModelCatalog(slug string) map[string]any {
	c := CodexModelCatalog(slug)
	for _, m := range c["models"].([]any) {
		mm := m.(map[string]any)
		mm["supports_reasoning_summaries"] = false
		mm["supports_parallel_tool_calls"] = false
	}
	return c
}

// WriteCodexACPModelCatalog writes CodexACPModelCatalog(FakeCodexModel) to
// path (mode 0600), for codex-acp's model_catalog_json setting.
func WriteCodexACPModelCatalog(path string) error {
	b, err := json.MarshalIndent(CodexACPModelCatalog(FakeCodexModel), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// CodexACPArgs returns codex-acp's arguments for this server: every
// CodexConfig override as "-c", override (codex-acp takes no other flag),
// and features.shell_snapshot=false, without which Codex writes its
// environment, the run's token among it, to CODEX_HOME/shell_snapshots.
func (o *OpenAI) CodexACPArgs(keyEnv, catalogPath string) []string {
	args := []string{"-c", "features.shell_snapshot=false"}
	for _, c := range o.CodexConfig(keyEnv, catalogPath) {
		args = append(args, "-c", c)
	}
	return args
}
