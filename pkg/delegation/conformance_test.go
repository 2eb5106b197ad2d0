package delegation_test

import (
	"testing"

	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/bustest"
)

// MemoryBus keeps every guarantee of an EventBus (docs/design.md#the-bus),
// as package bustest checks them on any implementation.
func TestMemoryBusConforms(t *testing.T) {
	bustest.Run(t, func() delegation.EventBus { return delegation.NewMemoryBus() })
}
