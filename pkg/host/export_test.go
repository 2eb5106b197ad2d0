package host

import "github.com/seed0634/agentadaptor/pkg/delegation/registry"

// MCPURL returns the URL of h's delegation MCP endpoint (for tests).
func MCPURL(h *Host) string { return h.tools.URL() }

// Agents returns h's registry specs (for tests).
func Agents(h *Host) []registry.RemoteAgentSpec { return h.cfg.Agents }
