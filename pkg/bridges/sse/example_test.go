package sse_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
)

// TestMain lets this test binary be the scripted agent the example's run
// starts: the scripted adapter re-executes the current binary.
func TestMain(m *testing.M) {
	scripted.MaybeRunAgent()
	os.Exit(m.Run())
}

// An AG-UI endpoint over the SDK: each POST of a RunAgentInput starts one
// run and streams it back as AG-UI events, one SSE frame per event. Here the
// run is the scripted agent's; a host registers claude, codex or cursor the
// same way.
func ExampleNewHandler() {
	agent, err := scripted.New(scripted.Config{ScenarioData: []byte("- say: Hello over AG-UI.\n")})
	if err != nil {
		log.Fatal(err)
	}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(agent))
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /agui", sse.NewHandler(sdk))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// What @ag-ui/client's HttpAgent (or CopilotKit) sends.
	input := `{"threadId":"thread-1","runId":"run-1","state":{},"tools":[],"context":[],"forwardedProps":{},
		"messages":[{"id":"u1","role":"user","content":"Say hello."}]}`
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/agui", strings.NewReader(input))
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := srv.Client().Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()

	// Each frame is "id: N\ndata: JSON\n\n".
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Delta string `json:"delta"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			log.Fatal(err)
		}
		switch ev.Type {
		case "CUSTOM":
			fmt.Println(ev.Type, ev.Name)
		case "TEXT_MESSAGE_CONTENT":
			fmt.Printf("%s %q\n", ev.Type, ev.Delta)
		default:
			fmt.Println(ev.Type)
		}
	}
	// Output:
	// RUN_STARTED
	// CUSTOM scripted.init
	// TEXT_MESSAGE_START
	// TEXT_MESSAGE_CONTENT "Hello over AG-UI."
	// TEXT_MESSAGE_END
	// CUSTOM agentadaptor.usage
	// RUN_FINISHED
}
