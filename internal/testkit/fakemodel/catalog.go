package fakemodel

import (
	"encoding/json"
	"os"
)

// FakeCodexModel is the model slug of the catalog WriteCodexModelCatalog
// writes and of OpenAI.CodexConfig.
const FakeCodexModel = "fake-model"

// CodexModelCatalog returns a Codex model catalog (the shape of
// `codex debug models --bundled`) holding one model, slug, that does not
// support the search tool, so Codex offers MCP tools to the model directly
// instead of behind tool_search, and knows the model's metadata.
func CodexModelCatalog(slug string) map[string]any {
	levels := []any{
		map[string]any{"effort": "low", "description": "low"},
		map[string]any{"effort": "medium", "description": "medium"},
	}
	return map[string]any{"models": []any{map[string]any{
		"slug":                              slug,
		"display_name":                      slug,
		"description":                       "Fake model for tests.",
		"default_reasoning_level":           "low",
		"supported_reasoning_levels":        levels,
		"shell_type":                        "unified_exec",
		"visibility":                        "list",
		"supported_in_api":                  true,
		"priority":                          1,
		"additional_speed_tiers":            []any{},
		"service_tiers":                     []any{},
		"availability_nux":                  nil,
		"upgrade":                           nil,
		"base_instructions":                 "You are a test agent.",
		"include_skills_usage_instructions": false,
		"include_plugin_usage_instructions": false,
		"include_apps_usage_instructions":   false,
		"default_reasoning_summary":         "none",
		"support_verbosity":                 false,
		"default_verbosity":                 nil,
		"apply_patch_tool_type":             "freeform",
		"web_search_tool_type":              "text",
		"truncation_policy":                 map[string]any{"mode": "tokens", "limit": 10000},
		"supports_image_detail_original":    false,
		"context_window":                    128000,
		"max_context_window":                128000,
		"effective_context_window_percent":  95,
		"experimental_supported_tools":      []any{},
		"input_modalities":                  []any{"text"},
		"supports_search_tool":              false,
		"supports_experimental_context":     false,
		"use_responses_lite":                false,
		"supports_reasoning_effort_updates": false,
		"node_repl_auto_review_required":    false,
		"node_repl_disabled":                true,
	}}}
}

// WriteCodexModelCatalog writes CodexModelCatalog(FakeCodexModel) to path
// (mode 0600), for Codex's model_catalog_json setting.
func WriteCodexModelCatalog(path string) error {
	b, err := json.MarshalIndent(CodexModelCatalog(FakeCodexModel), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
