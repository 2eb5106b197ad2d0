package mcptool_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	agentadaptor "github.com/seed0634/agentadaptor"
	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation/mcptool"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// BenchmarkToolCall is one delegate_to_agent call over MCP (streamable
// HTTP on loopback, the official SDK on both sides) of a quick delegation
// (working, two text chunks, completed), with the server's default
// configuration. Besides time and allocations (both sides, in process) it
// reports the MCP messages the parent receives per call: the progress
// notifications and the result.
func BenchmarkToolCall(b *testing.B) {
	srv := dt.StreamingFake(b, fakea2a.Working("step one"), fakea2a.TextChunks("partial ", "text"), fakea2a.Completed("done"))
	e := env.NewEnv(b, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)})
	tools, err := mcptool.New(mcptool.Config{Delegator: e.D})
	if err != nil {
		b.Fatal(err)
	}
	defer tools.Close()
	const token = "bench-token-0123456789"
	rs, err := tools.RuntimeService().Ensure(dt.Ctx(b), agentadaptor.RuntimeServiceRequest{RunID: "run-bench", RunToken: token})
	if err != nil {
		b.Fatal(err)
	}
	defer rs.Release(context.Background())
	var progress atomic.Int64
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-parent", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
	})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	s, err := client.Connect(dt.Ctx(b), &mcp.StreamableClientTransport{Endpoint: tools.URL(), HTTPClient: &http.Client{Transport: bearer{token, tr}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p := &mcp.CallToolParams{Name: mcptool.ToolName, Arguments: map[string]any{"agent": "research", "objective": "x"}}
		p.SetProgressToken("p")
		res, err := s.CallTool(dt.Ctx(b), p)
		if err != nil || res.IsError {
			b.Fatalf("call: %v %v", err, res)
		}
	}
	b.ReportMetric(float64(progress.Load())/float64(b.N), "notifications/op")
}
