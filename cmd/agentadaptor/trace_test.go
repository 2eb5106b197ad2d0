package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/seed0634/agentadaptor/internal/testkit/otlpsink"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
)

// traceLogEnv names a file where every scripted agent this test binary
// runs appends "<scenario file name> <its TRACEPARENT>" (see TestMain).
const traceLogEnv = "AGENTADAPTOR_TEST_TRACEPARENT_LOG"

// recordTraceparent is the scripted agent's side of traceLogEnv: what
// TRACEPARENT the agent CLI was started with.
func recordTraceparent() {
	p := os.Getenv(traceLogEnv)
	if p == "" || os.Getenv(scripted.AgentEnv) != "1" {
		return
	}
	scenario := ""
	for i, a := range os.Args {
		if a == "--scenario" && i+1 < len(os.Args) {
			scenario = filepath.Base(os.Args[i+1])
		}
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s %s\n", scenario, os.Getenv("TRACEPARENT"))
	f.Close()
}

// traceToSink starts an OTLP receiver and points the OTEL_* environment of
// the commands this test runs at it (every other OTEL_* variable emptied);
// the scripted agents they start log their TRACEPARENT to traceLog.
func traceToSink(t *testing.T) (sink *otlpsink.Sink, traceLog string) {
	t.Helper()
	sink, err := otlpsink.Start("", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
	traceLog = filepath.Join(t.TempDir(), "traceparents.log")
	t.Setenv(traceLogEnv, traceLog)
	return sink, traceLog
}

var listeningLine = regexp.MustCompile(`agentadaptor serve: listening on (\S+)`)

// startServe runs `agentadaptor serve --config cfg` in this process on a
// loopback port; stop ends it like SIGINT (flushing its traces).
func startServe(t *testing.T, cfg string) (base string, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	stderr := &syncBuffer{}
	go func() {
		code <- dispatch(ctx, []string{"serve", "--config", cfg, "--addr", "127.0.0.1:0"}, io.Discard, pw)
		_ = pw.Close()
	}()
	ready := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			_, _ = stderr.Write([]byte(sc.Text() + "\n"))
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				ready <- m[1]
			}
		}
	}()
	var once sync.Once
	exit := -1
	stop = func() int {
		once.Do(func() { cancel(); exit = <-code; <-read })
		return exit
	}
	t.Cleanup(func() { stop() })
	select {
	case base = <-ready:
	case c := <-code:
		code <- c
		t.Fatalf("serve exited %d before listening:\n%s", c, stderr.String())
	}
	return base, stop
}

// One trace runs from the browser's request to the remote's agent CLI:
// serve continues the caller's traceparent in its run span, gives it to the
// parent CLI as TRACEPARENT, traces the delegation and its remote calls and
// sends traceparent to a2a serve, which continues it in its request and
// turn spans and gives its own agent CLI TRACEPARENT. Both export over OTLP
// HTTP to a receiver this test runs, and put no prompt or remote text in
// span attributes.
func TestTraceFromBrowserToRemoteAgent(t *testing.T) {
	sink, traceLog := traceToSink(t)
	defer sink.Close()

	const answer = "research-notes-zebra"
	remote := startA2AServe(t, "- say: "+answer+"\n")
	dir := t.TempDir()
	parent := filepath.Join(dir, "parent.yaml")
	const objective = "objective-giraffe"
	if err := os.WriteFile(parent, []byte("- call: {tool: delegate_to_agent, args: {agent: research, objective: "+objective+"}}\n- say: done\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "host.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `parent: {adapter: scripted, scenario: %s}
agents:
  - key: research
    display_name: Research Agent
    description: Researches.
    protocol: a2a
    agent_card_url: %s
`, parent, remote.cardURL), 0o600); err != nil {
		t.Fatal(err)
	}
	base, stopServe := startServe(t, cfg)

	const traceID, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest(http.MethodPost, base+"/agui", strings.NewReader(
		`{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"hello"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+callerSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "subagent.finished") || !strings.Contains(string(body), "RUN_FINISHED") || !strings.Contains(string(body), answer) {
		t.Fatalf("the run: %s", body)
	}
	// a2a serve's own metrics, on its listener.
	mresp, err := http.Get("http://" + remote.listen + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{`agentadaptor_a2a_tasks_total{state="completed"} 1`, `agentadaptor_a2a_active_tasks 0`, `agentadaptor_a2a_request_duration_seconds_count{binding="card",code="200"}`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("a2a serve /metrics lacks %s:\n%s", want, metrics)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	if c := stopServe(); c != 0 {
		t.Fatalf("serve exited %d", c)
	}
	if c := remote.stop(); c != 0 {
		t.Fatalf("a2a serve exited %d", c)
	}

	spans := sink.Spans()
	byName := func(service, name string) []otlpsink.Span {
		var out []otlpsink.Span
		for _, s := range spans {
			if s.Service == service && s.Name == name {
				out = append(out, s)
			}
		}
		return out
	}
	dump := func() string {
		var b strings.Builder
		for _, s := range spans {
			fmt.Fprintf(&b, "%s %q trace=%s span=%s parent=%s %v\n", s.Service, s.Name, s.TraceID, s.SpanID, s.ParentSpanID, s.Attrs)
		}
		return b.String()
	}
	for _, s := range spans {
		if s.TraceID != traceID {
			t.Errorf("span %s %q is in trace %s, not the browser's %s", s.Service, s.Name, s.TraceID, traceID)
		}
		for k, v := range s.Attrs {
			if strings.Contains(v, objective) || strings.Contains(v, answer) || strings.Contains(v, "hello") {
				t.Errorf("span %q records prompt or remote text: %s=%q", s.Name, k, v)
			}
		}
	}
	runs := byName("agentadaptor-serve", "agentadaptor.run")
	dels := byName("agentadaptor-serve", "agentadaptor.delegation")
	turns := byName("agentadaptor-a2a-serve", "agentadaptor.a2a.turn")
	if len(runs) != 1 || len(dels) != 1 || len(turns) != 1 {
		t.Fatalf("want one run, delegation and remote turn span:\n%s", dump())
	}
	run, del, turn := runs[0], dels[0], turns[0]
	if run.ParentSpanID != callerSpan || del.ParentSpanID != run.SpanID || del.Attrs["agentadaptor.agent"] != "research" ||
		del.Attrs["agentadaptor.status"] != "completed" || del.Attrs["agentadaptor.remote_task_id"] == "" ||
		del.Attrs["agentadaptor.run_id"] != run.Attrs["agentadaptor.run_id"] || run.Attrs["agentadaptor.agui_run_id"] != "r1" {
		t.Fatalf("run and delegation spans:\n%s", dump())
	}
	// The remote calls are the delegation's children; a2a serve's request
	// spans are children of those calls, and the turn a child of a request.
	calls := map[string]bool{}
	for _, s := range spans {
		if s.Service == "agentadaptor-serve" && strings.HasPrefix(s.Name, "a2a ") && s.ParentSpanID == del.SpanID && s.Kind == "SPAN_KIND_CLIENT" &&
			s.Attrs["agentadaptor.delegation_id"] == del.Attrs["agentadaptor.delegation_id"] {
			calls[s.SpanID] = true
		}
	}
	requests := map[string]bool{}
	for _, s := range spans {
		if s.Service == "agentadaptor-a2a-serve" && strings.HasPrefix(s.Name, "a2a serve ") && calls[s.ParentSpanID] {
			requests[s.SpanID] = true
		}
	}
	if len(calls) < 2 || len(requests) < 2 || !requests[turn.ParentSpanID] || turn.Attrs["agentadaptor.remote_task_id"] != del.Attrs["agentadaptor.remote_task_id"] ||
		turn.Attrs["agentadaptor.state"] != "completed" {
		t.Fatalf("remote calls %v, a2a serve requests %v, turn %+v:\n%s", calls, requests, turn, dump())
	}
	// Both agent CLIs got their span as TRACEPARENT.
	got, err := os.ReadFile(traceLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"parent.yaml 00-" + traceID + "-" + run.SpanID + "-01", "scenario.yaml 00-" + traceID + "-" + turn.SpanID + "-01"} {
		if !strings.Contains(string(got), want+"\n") {
			t.Errorf("no agent CLI started with %q; they got:\n%s", want, got)
		}
	}
}

// traceparentKey holds the traceparent a test's gRPC client sends with a
// call (none without it).
type traceparentKey struct{}

// withTraceparent is a client's dial option that sends the context's
// traceparentKey, with a tracestate, as gRPC metadata on every call.
func withTraceparent() []grpc.DialOption {
	add := func(ctx context.Context) context.Context {
		if tp, ok := ctx.Value(traceparentKey{}).(string); ok {
			return metadata.AppendToOutgoingContext(ctx, "traceparent", tp, "tracestate", "vendor=opaque")
		}
		return ctx
	}
	return []grpc.DialOption{
		grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(add(ctx), method, req, reply, cc, opts...)
		}),
		grpc.WithStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(add(ctx), desc, cc, method, opts...)
		}),
	}
}

// a2a serve's gRPC binding continues the caller's traceparent as its HTTP
// bindings do: a server span per call ("a2a serve grpc") under the
// caller's span, the turn under it and the agent CLI started with the
// turn's span as TRACEPARENT. A call without traceparent starts a new
// trace. No span records the prompt or the agent's answer; the calls are
// measured with binding="grpc".
func TestA2AServeGRPCTrace(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	sink, traceLog := traceToSink(t)
	defer sink.Close()
	const prompt, answer = "prompt-text-okapi", "answer-text-lynx"
	s := startA2AServe(t, "- say: "+answer+"\n", "--grpc-addr", "127.0.0.1:0")
	if s.grpc == "" {
		t.Fatalf("no gRPC line:\n%s", s.stderr.String())
	}
	c, err := a2aclient.NewFromEndpoints(context.Background(),
		[]*a2a.AgentInterface{a2a.NewAgentInterface(s.grpc, a2a.TransportProtocolGRPC)},
		a2agrpc.WithGRPCTransport(append(withTraceparent(), grpc.WithTransportCredentials(insecure.NewCredentials()))...))
	if err != nil {
		t.Fatal(err)
	}
	message := func() *a2a.SendMessageRequest {
		return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(prompt))}
	}

	// A streaming call in the caller's trace.
	const traceID, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	ctx := context.WithValue(context.Background(), traceparentKey{}, "00-"+traceID+"-"+callerSpan+"-01")
	var state a2a.TaskState
	for ev, err := range c.SendStreamingMessage(ctx, message()) {
		if err != nil {
			t.Fatal(err)
		}
		switch v := ev.(type) {
		case *a2a.Task:
			state = v.Status.State
		case *a2a.TaskStatusUpdateEvent:
			state = v.Status.State
		}
	}
	if state != a2a.TaskStateCompleted {
		t.Fatalf("the streamed task ended %q", state)
	}
	// A unary call without traceparent.
	res, err := c.SendMessage(context.Background(), message())
	if err != nil {
		t.Fatal(err)
	}
	if task, ok := res.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("SendMessage: %#v", res)
	}
	_ = c.Destroy()

	client := &http.Client{}
	mresp, err := client.Get("http://" + s.listen + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	client.CloseIdleConnections()
	for _, want := range []string{`agentadaptor_a2a_request_duration_seconds_count{binding="grpc",code="OK"} 2`, `agentadaptor_a2a_tasks_total{state="completed"} 2`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("a2a serve /metrics lacks %s:\n%s", want, metrics)
		}
	}
	if code := s.stop(); code != 0 { // flushes the spans
		t.Fatalf("a2a serve exited %d:\n%s", code, s.stderr.String())
	}

	spans := sink.Spans()
	dump := func() string {
		var b strings.Builder
		for _, s := range spans {
			fmt.Fprintf(&b, "%s %q trace=%s span=%s parent=%s %v\n", s.Service, s.Name, s.TraceID, s.SpanID, s.ParentSpanID, s.Attrs)
		}
		return b.String()
	}
	calls := map[string]otlpsink.Span{} // by method
	turns := map[string]otlpsink.Span{} // by parent span
	for _, s := range spans {
		for k, v := range s.Attrs {
			if strings.Contains(v, prompt) || strings.Contains(v, answer) || strings.Contains(v, "opaque") {
				t.Errorf("span %q records prompt, answer or metadata text: %s=%q", s.Name, k, v)
			}
		}
		switch {
		case s.Service != "agentadaptor-a2a-serve":
			t.Errorf("span of %s", s.Service)
		case s.Name == "a2a serve grpc":
			if s.Kind != "SPAN_KIND_SERVER" || len(s.Attrs) != 2 || s.Attrs["rpc.response.status_code"] != "OK" {
				t.Errorf("gRPC span %+v", s)
			}
			_, method, _ := strings.Cut(s.Attrs["rpc.method"], "/")
			calls[method] = s
		case s.Name == "agentadaptor.a2a.turn":
			turns[s.ParentSpanID] = s
		}
	}
	stream, unary := calls["SendStreamingMessage"], calls["SendMessage"]
	if len(calls) != 2 || len(turns) != 2 || stream.TraceID != traceID || stream.ParentSpanID != callerSpan ||
		unary.SpanID == "" || unary.TraceID == traceID || unary.ParentSpanID != "" {
		t.Fatalf("want a SendStreamingMessage span under the caller's and a root SendMessage span, each with a turn:\n%s", dump())
	}
	streamTurn, unaryTurn := turns[stream.SpanID], turns[unary.SpanID]
	if streamTurn.TraceID != traceID || unaryTurn.TraceID != unary.TraceID || streamTurn.Attrs["agentadaptor.state"] != "completed" {
		t.Fatalf("the turns are not their calls' children:\n%s", dump())
	}
	got, err := os.ReadFile(traceLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"scenario.yaml 00-" + traceID + "-" + streamTurn.SpanID + "-01", "scenario.yaml 00-" + unary.TraceID + "-" + unaryTurn.SpanID + "-01"} {
		if !strings.Contains(string(got), want+"\n") {
			t.Errorf("no agent CLI started with %q; they got:\n%s", want, got)
		}
	}
	_ = sink.Close()
	goleak.VerifyNone(t, ignore)
}
