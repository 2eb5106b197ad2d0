package agui_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"testing"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"

	"github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
)

// TestMain lets this test binary be the scripted agent the example's run
// starts: the scripted adapter re-executes the current binary.
func TestMain(m *testing.M) {
	scripted.MaybeRunAgent()
	os.Exit(m.Run())
}

// A started run's payloads as AG-UI events, with the run's id as the AG-UI
// runId: frame each event (ev.ToJSON) and send it to an AG-UI client. The
// channel closes after the terminal event.
func ExampleWrapWithContext() {
	agent, err := scripted.New(scripted.Config{ScenarioData: []byte("- say: Hello.\n")})
	if err != nil {
		log.Fatal(err)
	}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(agent))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	h, err := sdk.Start(ctx, "Say hello.", agentadaptor.WithStreaming())
	if err != nil {
		log.Fatal(err)
	}
	for ev := range agui.WrapWithContext(ctx, h, agui.Options{ThreadID: "thread-1"}) {
		if rs, ok := ev.(*events.RunStartedEvent); ok {
			fmt.Println(ev.Type(), rs.ThreadID(), rs.RunID() == h.RunID())
			continue
		}
		fmt.Println(ev.Type())
	}
	if _, err := h.Wait(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// RUN_STARTED thread-1 true
	// CUSTOM
	// TEXT_MESSAGE_START
	// TEXT_MESSAGE_CONTENT
	// TEXT_MESSAGE_END
	// CUSTOM
	// RUN_FINISHED
}
