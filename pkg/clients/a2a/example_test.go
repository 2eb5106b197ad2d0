package a2a_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/seed0634/agentadaptor/pkg/clients/a2a"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

// A client is made from an agent's card URL; a streaming send is read event
// by event until the task is terminal (or interrupted, e.g. input-required).
func ExampleClient_SendStreaming() {
	cardURL, stop := startGreeter() // an A2A agent on 127.0.0.1
	defer stop()

	ctx := context.Background()
	c, err := a2a.NewClient(ctx, cardURL, a2a.Options{}) // fetches the card, picks an interface
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Println("agent:", c.Card().Name(), "over", c.Transport())

	s, err := c.SendStreaming(ctx, a2a.SendRequest{Text: "Ada"})
	if err != nil {
		fmt.Println(err) // *clienterr.Error: unavailable, unauthorized, rejected, ...
		return
	}
	defer s.Close()
	for s.Next() {
		switch ev := s.Event().(type) {
		case *a2a.Task:
			fmt.Println("task:", ev.Status.State)
		case *a2a.StatusUpdate:
			fmt.Println("status:", ev.Status.State)
		case *a2a.ArtifactUpdate:
			fmt.Printf("artifact %s: %s\n", ev.Artifact.Name, a2a.TextOf(ev.Artifact.Parts))
		}
	}
	if err := s.Err(); err != nil {
		fmt.Println(err) // e.g. KindInterrupted: see RecoverTask
		return
	}
	fmt.Println("terminal:", s.Terminal(), s.State())
	// Output:
	// agent: greeter over JSONRPC
	// task: TASK_STATE_SUBMITTED
	// status: TASK_STATE_WORKING
	// artifact greeting: Hello, Ada!
	// status: TASK_STATE_COMPLETED
	// terminal: true TASK_STATE_COMPLETED
}

// Errors are *clienterr.Error values whose Kind says what the caller can do
// about them: match them with errors.Is and clienterr's Err* sentinels, or
// switch on clienterr.KindOf. The kinds are the same for both clients.
func Example_errors() {
	cardURL, stop := startGreeter()
	defer stop()

	ctx := context.Background()
	c, err := a2a.NewClient(ctx, cardURL, a2a.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	_, err = c.GetTask(ctx, a2a.GetTaskRequest{TaskID: "no-such-task"})
	fmt.Println(errors.Is(err, clienterr.ErrNotFound), clienterr.KindOf(err) == clienterr.KindNotFound)
	var e *clienterr.Error
	if errors.As(err, &e) {
		fmt.Println(e.Op, "/", e.Kind, "/ retryable:", e.Retryable())
	}
	// Output:
	// true true
	// get task / not found / retryable: false
}

// startGreeter serves an A2A agent named "greeter" on 127.0.0.1 with
// a2a-go's own server: its card at /.well-known/agent-card.json and a
// JSON-RPC interface. Each task streams submitted, working, one "greeting"
// artifact, completed.
func startGreeter() (cardURL string, stop func()) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	card := &sdk.AgentCard{
		Name:               "greeter",
		Description:        "greets whoever it is sent",
		Version:            "1.0.0",
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Capabilities:       sdk.AgentCapabilities{Streaming: true},
		Skills:             []sdk.AgentSkill{{ID: "greet", Name: "greet", Description: "says hello", Tags: []string{"example"}}},
		SupportedInterfaces: []*sdk.AgentInterface{{
			URL: srv.URL + "/jsonrpc", ProtocolBinding: sdk.TransportProtocolJSONRPC, ProtocolVersion: sdk.Version,
		}},
	}
	handler := a2asrv.NewHandler(greeter{}, a2asrv.WithLogger(slog.New(slog.DiscardHandler)))
	mux.Handle("/.well-known/agent-card.json", a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/jsonrpc", a2asrv.NewJSONRPCHandler(handler))
	return srv.URL + "/.well-known/agent-card.json", srv.Close
}

// greeter is the example agent's executor.
type greeter struct{}

func (greeter) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		if ec.StoredTask == nil && !yield(sdk.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateWorking, nil), nil) {
			return
		}
		name := a2a.TextOf(ec.Message.Parts)
		greeting := sdk.NewArtifactEvent(ec, sdk.NewTextPart("Hello, "+name+"!"))
		greeting.Artifact.Name, greeting.LastChunk = "greeting", true
		if !yield(greeting, nil) {
			return
		}
		yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateCompleted, nil), nil)
	}
}

func (greeter) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateCanceled, nil), nil)
	}
}
