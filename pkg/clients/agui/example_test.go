package agui_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"

	aguiclient "github.com/seed0634/agentadaptor/pkg/clients/agui"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

// Run POSTs one user message to an AG-UI endpoint; the stream yields the
// SDK's event values up to exactly one terminal event (RUN_FINISHED or
// RUN_ERROR).
func ExampleClient_Run() {
	endpoint, stop := startEchoAgent() // an AG-UI agent on 127.0.0.1
	defer stop()

	c, err := aguiclient.New(aguiclient.Options{EndpointURL: endpoint})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	s, err := c.Run(context.Background(), aguiclient.Input{ThreadID: "thread-1", RunID: "run-1", Text: "hello"})
	if err != nil {
		fmt.Println(err) // *clienterr.Error with Op "run": unauthorized, not found, ...
		return
	}
	defer s.Close()
	for s.Next() {
		switch ev := s.Event().(type) {
		case *events.TextMessageContentEvent:
			fmt.Printf("%s %q\n", ev.Type(), ev.Delta)
		case *events.RunErrorEvent:
			fmt.Println(ev.Type(), ev.Message) // a remote outcome, not a Go error
		case *aguiclient.UnknownEvent:
			fmt.Println(ev.Type(), "(passed through as JSON)")
		default:
			fmt.Println(ev.Type())
		}
	}
	if err := s.Err(); err != nil {
		fmt.Println(err) // e.g. errors.Is(err, clienterr.ErrInterrupted)
		return
	}
	fmt.Println("terminal:", s.Terminal().Type())
	// Output:
	// RUN_STARTED
	// TEXT_MESSAGE_START
	// TEXT_MESSAGE_CONTENT "You said: "
	// TEXT_MESSAGE_CONTENT "hello"
	// TEXT_MESSAGE_END
	// THINKING_START (passed through as JSON)
	// RUN_FINISHED
	// terminal: RUN_FINISHED
}

// A remote that refuses the run answers with an *clienterr.Error whose
// Kind says what to do; its message carries the status and a bounded
// excerpt of what the remote said.
func ExampleKindOf() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no such agent", http.StatusNotFound)
	}))
	defer srv.Close()

	c, err := aguiclient.New(aguiclient.Options{EndpointURL: srv.URL + "/agents/missing"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	_, err = c.Run(context.Background(), aguiclient.Input{Text: "hello"})
	fmt.Println(errors.Is(err, clienterr.ErrNotFound), clienterr.KindOf(err))
	fmt.Println(err)
	// Output:
	// true not found
	// agui: run: not found (HTTP 404): remote said "no such agent" — there is no AG-UI endpoint at this URL; check endpoint_url
}

// startEchoAgent serves a minimal AG-UI agent on 127.0.0.1: it answers each
// run with an SSE stream echoing the user's message, with a keep-alive
// comment and an event type the Go SDK does not model.
func startEchoAgent() (endpoint string, stop func()) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			ThreadID string `json:"threadId"`
			RunID    string `json:"runId"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || len(in.Messages) == 0 {
			http.Error(w, "want a RunAgentInput with a message", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(ev map[string]any) {
			b, _ := json.Marshal(ev)
			_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		}
		send(map[string]any{"type": "RUN_STARTED", "threadId": in.ThreadID, "runId": in.RunID})
		_, _ = io.WriteString(w, ": keep-alive\n\n")
		send(map[string]any{"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"})
		send(map[string]any{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "You said: "})
		send(map[string]any{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": in.Messages[0].Content})
		send(map[string]any{"type": "TEXT_MESSAGE_END", "messageId": "m1"})
		send(map[string]any{"type": "THINKING_START"})
		send(map[string]any{"type": "RUN_FINISHED", "threadId": in.ThreadID, "runId": in.RunID})
	}))
	return srv.URL + "/agent", srv.Close
}
