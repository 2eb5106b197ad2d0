package agentadaptor_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
)

// TestMain lets this test binary be the scripted agent the examples' runs
// start: the scripted adapter re-executes the current binary.
func TestMain(m *testing.M) {
	scripted.MaybeRunAgent()
	os.Exit(m.Run())
}

// A streamed run of the scripted agent; every adapter (claude.New,
// codex.New, cursor.New) is used the same way. Start returns as soon as the
// child runs, StreamEvents delivers the run's payloads in order and closes
// after the terminal one, and Wait returns the result.
func Example() {
	// A program using the scripted adapter calls scripted.MaybeRunAgent()
	// first thing in main (this example's TestMain does).
	agent, err := scripted.New(scripted.Config{ScenarioData: []byte("- say: Hello from the agent.\n")})
	if err != nil {
		log.Fatal(err)
	}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(agent))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	h, err := sdk.Start(ctx, "Say hello.", agentadaptor.WithStreaming())
	if err != nil {
		log.Fatal(err) // the run could not start: a *StartError says why
	}
	for p := range h.StreamEvents() {
		switch p.Kind {
		case agentadaptor.KindTextDelta:
			fmt.Printf("%s %q\n", p.Kind, p.Delta)
		case agentadaptor.KindCustom:
			fmt.Println("custom", p.Name)
		default:
			fmt.Println(p.Kind)
		}
	}
	res, err := h.Wait(ctx)
	if err != nil {
		log.Fatal(err) // ctx ended before the run
	}
	fmt.Println(res.Status, res.Output)
	// Output:
	// run.started
	// custom scripted.init
	// text.start
	// text.delta "Hello from the "
	// text.delta "agent."
	// text.end
	// usage
	// run.finished
	// completed Hello from the agent.
}

// echoAdapter is a complete Adapter: its "agent CLI" is echo(1), and its
// parser makes each line the child prints an assistant message.
type echoAdapter struct{}

func (echoAdapter) Name() string { return "echo" }

func (echoAdapter) Prepare(_ context.Context, req *agentadaptor.AdapterRequest) (*agentadaptor.Invocation, error) {
	return &agentadaptor.Invocation{Path: "echo", Args: []string{req.Prompt}, Parser: &echoParser{}}, nil
}

// echoParser is the Parser of one echoAdapter run.
type echoParser struct{ last string }

func (p *echoParser) ParseLine(line []byte, emit agentadaptor.Emitter) error {
	p.last = string(line)
	emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextStart, MessageID: "m1"})
	emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: "m1", Delta: p.last})
	emit(agentadaptor.StreamPayload{Kind: agentadaptor.KindTextEnd, MessageID: "m1", Text: p.last})
	return nil
}

func (p *echoParser) Finish(agentadaptor.ExitStatus, agentadaptor.Emitter) agentadaptor.Outcome {
	return agentadaptor.Outcome{Output: p.last}
}

// The Adapter SPI: an adapter names its CLI's command line (Prepare) and
// translates the CLI's stdout (Parser); the SDK does the rest (process group,
// streaming, cancellation, the result). Run is Start followed by Wait.
func Example_adapter() {
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(echoAdapter{}))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := sdk.Run(ctx, "Hello, adapter.")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, res.Output, res.ExitCode)
	// Output: completed Hello, adapter. 0
}
