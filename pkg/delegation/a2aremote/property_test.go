package a2aremote

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
)

// TestPropertyMapperOneTerminal: random A2A event sequences (including
// duplicates, events after terminal, malformed ones) never yield more than
// one terminal, and started-first is the delegator's job (checked above).
func TestPropertyMapperOneTerminal(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	states := []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateInputRequired, a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected, "bogus"}
	for iter := range 500 {
		m := testMapper(artifact.NewMemoryStore(0), rng.Intn(2) == 0, rng.Intn(2) == 0, 0)
		terminals := 0
		texts := map[string]string{}
		sent := map[string]string{}
		for i, k := 0, rng.Intn(30); i < k; i++ {
			var evs []delegation.DelegationEvent
			switch rng.Intn(3) {
			case 0:
				evs = m.Map(status(states[rng.Intn(len(states))], fmt.Sprint("s", rng.Intn(3))))
			case 1:
				id := fmt.Sprint("msg-", rng.Intn(2))
				d := fmt.Sprint("<", i, ">")
				ap := sent[id] != ""
				sent[id] += d
				evs = m.Map(chunk(ArtifactAssistantOutput, id, d, ap, rng.Intn(4) == 0))
			default:
				evs = m.Map(chunk(fmt.Sprint("file-", rng.Intn(3)), fmt.Sprint("f", rng.Intn(3)), "data", rng.Intn(2) == 0, rng.Intn(2) == 0))
			}
			for _, ev := range evs {
				if ev.Kind.Terminal() {
					terminals++
				}
				if ev.Kind == delegation.DelegationTextDelta {
					texts[ev.RemoteMessageID] += ev.Delta
				}
			}
		}
		for _, ev := range m.t.Finish(delegation.DelegationFailed, &delegation.DelegationError{Code: delegation.CodeRemoteFailed}) {
			if ev.Kind.Terminal() {
				terminals++
			}
		}
		if terminals != 1 {
			t.Fatalf("iteration %d: %d terminal events", iter, terminals)
		}
		for id, got := range texts {
			if strings.HasPrefix(id, "final") {
				// The final status message, shown as the last text message.
				if !strings.HasPrefix(got, "s") {
					t.Fatalf("iteration %d: final message %q", iter, got)
				}
				continue
			}
			if !strings.HasPrefix(sent[id], got) {
				t.Fatalf("iteration %d: text of %s out of order: %q vs sent %q", iter, id, got, sent[id])
			}
		}
	}
}
