package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	agentadaptor "github.com/seed0634/agentadaptor"
	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/mcptool"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// parentHarness drives the REAL product path: the agentadaptor SDK runs
// the scripted parent agent as a child process; the SDK injects this
// package's MCP server through its RuntimeService (Option A); the child
// makes a real MCP tools/call of delegate_to_agent with its per-run bearer
// token; the delegator talks A2A to a fake remote agent; events go to the
// bus. It reports errors instead of failing a test so that godog steps can
// use it too.
type parentHarness struct {
	d        *delegator.Delegator
	srv      *mcptool.Server
	closeEnv func(context.Context) error
	bus      *delegation.MemoryBus
	logs     *dt.LogBuf
	fakes    map[string]*fakea2a.Server

	mu       sync.Mutex
	token    string
	h        *agentadaptor.RunHandle
	payloads []agentadaptor.StreamPayload
	events   []delegation.DelegationEvent
	res      *agentadaptor.RunResult
	waitErr  error
	done     chan struct{}
	notify   chan struct{}
	cancel   context.CancelFunc
	closers  []func()
	tempDirs []string
}

func newParentHarness(specs []registry.RemoteAgentSpec, fakes map[string]*fakea2a.Server, mod ...func(*env.Config)) (*parentHarness, error) {
	e, closeEnv, err := env.Build(specs, mod...)
	if err != nil {
		return nil, err
	}
	srv, err := mcptool.New(mcptool.Config{Delegator: e.D})
	if err != nil {
		_ = closeEnv(context.Background())
		return nil, err
	}
	p := &parentHarness{d: e.D, srv: srv, closeEnv: closeEnv, bus: e.Bus, logs: e.Logs, fakes: fakes, notify: make(chan struct{}, 1)}
	return p, nil
}

// tokenProbe lets the test see the run token the SDK generated (to act as
// a second, parallel tool call of the same parent, and to check it never leaks).
type tokenProbe struct {
	inner agentadaptor.RuntimeServiceManager
	p     *parentHarness
}

func (tp tokenProbe) Ensure(ctx context.Context, req agentadaptor.RuntimeServiceRequest) (agentadaptor.RuntimeService, error) {
	tp.p.mu.Lock()
	tp.p.token = req.RunToken
	tp.p.mu.Unlock()
	return tp.inner.Ensure(ctx, req)
}

// start runs the scripted parent with the scenario (YAML steps) in the background.
func (p *parentHarness) start(scenario string) error {
	dir, err := os.MkdirTemp("", "a2adelegation-e2e-")
	if err != nil {
		return err
	}
	p.tempDirs = append(p.tempDirs, dir)
	path := dir + "/scenario.yaml"
	if err := os.WriteFile(path, []byte(scenario), 0o600); err != nil {
		return err
	}
	a, err := scripted.New(scripted.Config{Scenario: path, StateDir: dir + "/state"})
	if err != nil {
		return err
	}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(a))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	p.cancel = cancel
	h, err := sdk.Start(ctx, "Please delegate.", agentadaptor.WithStreaming(), agentadaptor.WithSessionKey("chat-1"),
		agentadaptor.WithRuntimeServices(tokenProbe{p.srv.RuntimeService(), p}))
	if err != nil {
		cancel()
		return err
	}
	p.h = h
	p.done = make(chan struct{})
	sub := p.bus.SubscribeRun(ctx, h.RunID())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for pl := range h.StreamEvents() {
			p.mu.Lock()
			p.payloads = append(p.payloads, pl)
			p.mu.Unlock()
			p.poke()
		}
	}()
	go func() {
		defer wg.Done()
		for ev := range sub.C {
			p.mu.Lock()
			p.events = append(p.events, ev)
			p.mu.Unlock()
			p.poke()
		}
	}()
	go func() {
		res, err := h.Wait(ctx)
		p.bus.CloseRun(h.RunID()) // drains then ends the subscription
		wg.Wait()
		p.mu.Lock()
		p.res, p.waitErr = res, err
		p.mu.Unlock()
		close(p.done)
		p.poke()
	}()
	return nil
}

func (p *parentHarness) poke() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// wait waits (generously) until cond holds on the recorded state.
func (p *parentHarness) wait(what string, cond func() bool) error {
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		ok := cond()
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-p.notify:
		case <-deadline.C:
			p.mu.Lock()
			defer p.mu.Unlock()
			return fmt.Errorf("timed out waiting for %s; events: %s", what, dt.KindsOf(p.events))
		}
	}
}

func (p *parentHarness) finish() (*agentadaptor.RunResult, error) {
	if err := p.wait("the parent run to end", func() bool { return p.res != nil || p.waitErr != nil }); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.res, p.waitErr
}

func (p *parentHarness) snapshot() ([]agentadaptor.StreamPayload, []delegation.DelegationEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]agentadaptor.StreamPayload(nil), p.payloads...), append([]delegation.DelegationEvent(nil), p.events...)
}

// toolCalls returns the parent's delegate tool_call.start and its result payloads.
func (p *parentHarness) toolCall() (start, result *agentadaptor.StreamPayload) {
	pls, _ := p.snapshot()
	for i := range pls {
		pl := pls[i]
		if pl.Kind == agentadaptor.KindToolCallStart && strings.HasSuffix(pl.ToolName, mcptool.ToolName) && start == nil {
			start = &pl
		}
		if pl.Kind == agentadaptor.KindToolCallResult && start != nil && pl.ToolCallID == start.ToolCallID {
			result = &pl
		}
	}
	return start, result
}

func (p *parentHarness) toolResultJSON() (map[string]any, *agentadaptor.StreamPayload, error) {
	_, r := p.toolCall()
	if r == nil {
		return nil, nil, errors.New("no tool result for delegate_to_agent in the parent stream")
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(r.ToolResult), &out); err != nil {
		return nil, r, fmt.Errorf("tool result is not structured JSON: %q", r.ToolResult)
	}
	return out, r, nil
}

func (p *parentHarness) close() {
	if p.cancel != nil {
		if p.h != nil {
			ctx, c := context.WithTimeout(context.Background(), 10*time.Second)
			_ = p.h.Cancel(ctx)
			c()
			_, _ = p.finish()
		}
		p.cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = p.srv.Close()
	_ = p.closeEnv(ctx)
	for _, f := range p.fakes {
		f.Close()
	}
	for _, c := range p.closers {
		c()
	}
	for _, d := range p.tempDirs {
		_ = os.RemoveAll(d)
	}
}

// TestEndToEndRealPathContracts runs a scripted parent through the real
// path and checks the contracts of docs/design.md#layering: RawStreams hold no A2A wire
// data, remote artifacts are referenced (never appended to Output), the
// parent receives only the final structured result, and strong
// correlation ties every event to the parent's tool call.
func TestEndToEndRealPathContracts(t *testing.T) {
	dt.CheckLeaks(t)
	srv := dt.Fake(t, fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
		fakea2a.Working("Searching official A2A SDK examples..."), fakea2a.TextChunks("REMOTE-STREAM-TEXT ", "more."),
		dataArtifact("notes.json", "ARTIFACT-CONTENT-MARKER"), fakea2a.Completed("Remote summary."))...)})
	p, err := newParentHarness([]registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, map[string]*fakea2a.Server{"research": srv})
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	if err := p.start(`
- say: Delegating now.
- call: {tool: delegate_to_agent, args: {agent: research, objective: "Find the streaming API", constraints: {timeout_seconds: 60}}}
- say_result: "Result: {{.JSON.status}} / {{.JSON.summary}} / {{(index .JSON.artifacts 0).uri}}"
`); err != nil {
		t.Fatal(err)
	}
	res, err := p.finish()
	if err != nil || res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("run %+v %v", res, err)
	}
	out, _, err := p.toolResultJSON()
	if err != nil {
		t.Fatal(err)
	}
	del, _ := out["delegation_id"].(string)
	// The summary is the task's output, then its final status message (the
	// remote's last word); the (non-text) artifact is only referenced.
	if !strings.HasPrefix(res.Output, "Result: completed / REMOTE-STREAM-TEXT more.\n\nRemote summary. / host://delegations/"+del+"/artifacts/") {
		t.Errorf("output %q", res.Output)
	}
	raw := string(res.RawStreams.Stdout) + string(res.RawStreams.Stderr)
	for _, wire := range []string{"TASK_STATE_", `"jsonrpc"`, "artifactUpdate", "statusUpdate", "lastChunk", "ARTIFACT-CONTENT-MARKER", "Searching official A2A SDK examples"} {
		if strings.Contains(raw, wire) {
			t.Errorf("RawStreams contain A2A wire data %q", wire)
		}
	}
	if strings.Contains(res.Output, "ARTIFACT-CONTENT-MARKER") {
		t.Error("remote artifact content appended to Output")
	}
	start, _ := p.toolCall()
	_, evs := p.snapshot()
	dt.CheckLifecycle(t, evs)
	for _, ev := range evs {
		if ev.ParentToolCallID != start.ToolCallID || ev.RunID != p.h.RunID() {
			t.Errorf("event not tied to the parent tool call %s: %+v", start.ToolCallID, ev)
		}
	}
	pls, _ := p.snapshot()
	p.mu.Lock()
	token := p.token
	p.mu.Unlock()
	for _, s := range []any{pls, evs, res, p.d.Audit().ListRun(p.h.RunID()), p.logs.String()} {
		b, _ := json.Marshal(s)
		if str, ok := s.(string); ok {
			b = []byte(str)
		}
		if strings.Contains(string(b), dt.SecretToken) || (token != "" && strings.Contains(string(b), token)) {
			t.Errorf("a secret leaked: %.200s", b)
		}
	}
	if token == "" {
		t.Error("the SDK gave the run no token")
	}
}

// dataArtifact is a complete JSON (DataPart) artifact: not text, so it is
// referenced by URI only and never part of the summary
// (docs/design.md#tool-contract).
func dataArtifact(name, marker string) fakea2a.Step {
	return fakea2a.Artifact(fakea2a.ArtifactSpec{ID: name, Name: name, LastChunk: true,
		Parts: []*a2a.Part{a2a.NewDataPart(map[string]any{"marker": marker})}})
}
