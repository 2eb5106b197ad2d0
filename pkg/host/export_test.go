package host

import (
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// MCPURL returns the URL of h's delegation MCP endpoint (for tests).
func MCPURL(h *Host) string { return h.tools.URL() }

// Agents returns h's registry specs (for tests).
func Agents(h *Host) []registry.RemoteAgentSpec { return h.cfg.Agents }

// SetBus makes the hosts New builds from now on use the bus f returns,
// until the test ends.
func SetBus(t interface{ Cleanup(func()) }, f func() delegation.EventBus) {
	prev := newBus
	newBus = f
	t.Cleanup(func() { newBus = prev })
}
