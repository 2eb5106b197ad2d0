package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	agentadaptor "github.com/seed0634/agentadaptor"

	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
	"github.com/seed0634/agentadaptor/pkg/delegation/mcptool"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// TestFeatures runs the delegation scenarios (features/*.feature,
// docs/design.md#testing) through
// the real MCP path; see parentHarness.
func TestFeatures(t *testing.T) {
	suite := godog.TestSuite{
		Name:                "a2adelegation",
		ScenarioInitializer: func(sc *godog.ScenarioContext) { initScenario(t, sc) },
		Options:             &godog.Options{Format: "pretty", Paths: []string{"features"}, TestingT: t, Strict: true},
	}
	if suite.Run() != 0 {
		t.Fatal("feature scenarios failed")
	}
}

// world is the state of one scenario.
type world struct {
	t       *testing.T
	fakes   map[string]*fakea2a.Server
	specs   []registry.RemoteAgentSpec
	p       *parentHarness
	alias   map[string]string
	second  chan map[string]any // result of the parallel tool call (scenario 6)
	closers []func()
}

func (w *world) addAgent(key string, opts fakea2a.Options, mod ...func(*registry.RemoteAgentSpec)) {
	if opts.RequireToken == "" {
		opts.RequireToken = dt.SecretToken
	}
	srv := fakea2a.New(w.t, opts)
	w.fakes[key] = srv
	w.specs = append(w.specs, dt.SpecFor(key, srv, mod...))
}

func (w *world) harness() (*parentHarness, error) {
	if w.p != nil {
		return w.p, nil
	}
	p, err := newParentHarness(w.specs, w.fakes)
	if err != nil {
		return nil, err
	}
	w.p = p
	return p, nil
}

func (w *world) run(scenario string) error {
	p, err := w.harness()
	if err != nil {
		return err
	}
	return p.start(scenario)
}

func (w *world) runAndWait(scenario string) error {
	if err := w.run(scenario); err != nil {
		return err
	}
	_, err := w.p.finish()
	return err
}

func delegateCall(agent, objective string) string {
	return fmt.Sprintf("- call: {tool: delegate_to_agent, args: {agent: %q, objective: %q}}\n", agent, objective)
}

func (w *world) events() []delegation.DelegationEvent { _, evs := w.p.snapshot(); return evs }

func (w *world) findEvent(kind delegation.DelegationEventKind, pred func(delegation.DelegationEvent) bool) (delegation.DelegationEvent, error) {
	for _, ev := range w.events() {
		if ev.Kind == kind && (pred == nil || pred(ev)) {
			return ev, nil
		}
	}
	return delegation.DelegationEvent{}, fmt.Errorf("no %s event; events: %s", kind, dt.KindsOf(w.events()))
}

func (w *world) waitEvent(kind delegation.DelegationEventKind, pred func(delegation.DelegationEvent) bool) (delegation.DelegationEvent, error) {
	var found delegation.DelegationEvent
	err := w.p.wait(string(kind), func() bool {
		for _, ev := range w.p.events {
			if ev.Kind == kind && (pred == nil || pred(ev)) {
				found = ev
				return true
			}
		}
		return false
	})
	return found, err
}

func initScenario(t *testing.T, sc *godog.ScenarioContext) {
	w := &world{t: t, fakes: map[string]*fakea2a.Server{}, alias: map[string]string{}}
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		if w.p != nil {
			w.p.close()
		} else {
			for _, f := range w.fakes {
				f.Close()
			}
		}
		for _, c := range w.closers {
			c()
		}
		return ctx, nil
	})

	// Scenario 1.
	sc.Step(`^a parent SDK run is started with streaming enabled$`, func() error { return nil })
	sc.Step(`^the A2A delegation tool is available through MCP$`, func() error { return nil })
	sc.Step(`^the remote "([^"]*)" agent supports streaming and artifacts$`, func(key string) error {
		w.addAgent(key, fakea2a.Options{Name: key, Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
			fakea2a.Working("Searching official A2A SDK examples..."),
			fakea2a.TextChunks("Comparing task streaming ", "and artifact behavior."),
			dt.TextArtifact("a2a-sdk-notes.md", "text/markdown", "# A2A SDK notes"),
			dt.AdaptorResultArtifact("Official a2a-go streams task events."),
			fakea2a.Completed(""))...)})
		return nil
	})
	sc.Step(`^the parent agent calls delegate_to_agent with agent "([^"]*)"$`, func(key string) error {
		return w.runAndWait("- say: Let me ask the research agent.\n" + delegateCall(key, "Find the A2A Go SDK streaming API.") +
			"- say_result: \"Research done: {{.JSON.summary}}\"\n")
	})
	sc.Step(`^the SSE stream emits a parent tool_call.start for delegate_to_agent$`, func() error {
		if s, _ := w.p.toolCall(); s == nil {
			return errors.New("no parent tool_call.start for delegate_to_agent")
		}
		return nil
	})
	sc.Step(`^the SSE stream emits subagent.started for agent "([^"]*)"$`, func(key string) error {
		start, _ := w.p.toolCall()
		ev, err := w.findEvent(delegation.DelegationStarted, nil)
		if err != nil {
			return err
		}
		if ev.AgentKey != key || ev.AgentName == "" || ev.ParentToolCallID != start.ToolCallID {
			return fmt.Errorf("started %+v (parent tool call %s)", ev, start.ToolCallID)
		}
		return nil
	})
	sc.Step(`^the SSE stream emits subagent.text.delta events before the tool result$`, func() error {
		_, result := w.p.toolCall()
		if result == nil {
			return errors.New("no tool result")
		}
		deltas := dt.OfKind(w.events(), delegation.DelegationTextDelta)
		if len(deltas) == 0 {
			return errors.New("no subagent.text.delta")
		}
		for _, d := range deltas {
			// Causal order: the delta was published before the tool returned,
			// which is before the parent reported the result.
			if !d.Time.Before(result.Time) {
				return fmt.Errorf("delta at %v not before the tool result at %v", d.Time, result.Time)
			}
		}
		return nil
	})
	sc.Step(`^the SSE stream emits subagent.artifact for the remote artifact$`, func() error {
		ev, err := w.findEvent(delegation.DelegationArtifactCreated, nil)
		if err != nil {
			return err
		}
		if ev.Artifact == nil || ev.Artifact.Name != "a2a-sdk-notes.md" || !strings.HasPrefix(ev.Artifact.URI, artifact.URIPrefix) {
			return fmt.Errorf("artifact %+v", ev.Artifact)
		}
		return nil
	})
	sc.Step(`^the SSE stream emits subagent.finished with the remote task ID$`, func() error {
		ev, err := w.findEvent(delegation.DelegationFinished, nil)
		if err != nil {
			return err
		}
		tasks := w.fakes["research"].Tasks()
		if len(tasks) != 1 || ev.RemoteTaskID != string(tasks[0]) {
			return fmt.Errorf("finished remote task %q, remote tasks %v", ev.RemoteTaskID, tasks)
		}
		return nil
	})
	sc.Step(`^the parent agent receives a structured MCP tool result$`, func() error {
		out, r, err := w.p.toolResultJSON()
		if err != nil {
			return err
		}
		fin, _ := w.findEvent(delegation.DelegationFinished, nil)
		if r.ToolError || out["status"] != "completed" || out["remote_task_id"] != fin.RemoteTaskID || out["delegation_id"] != fin.DelegationID ||
			out["summary"] != "Official a2a-go streams task events." {
			return fmt.Errorf("tool result %v", out)
		}
		return nil
	})
	sc.Step(`^the parent agent can continue and emit final assistant text$`, func() error {
		res, err := w.p.finish()
		if err != nil {
			return err
		}
		if res.Status != agentadaptor.StatusCompleted || res.Output != "Research done: Official a2a-go streams task events." {
			return fmt.Errorf("run %s output %q", res.Status, res.Output)
		}
		return nil
	})

	// Scenario 2.
	sc.Step(`^the remote "([^"]*)" agent does not advertise streaming$`, func(key string) error {
		w.addAgent(key, fakea2a.Options{Name: key, Streaming: false, Behavior: fakea2a.Script(fakea2a.Steps(
			fakea2a.Working("Looking it up"), fakea2a.Sleep(50*time.Millisecond), fakea2a.TextChunks("Legacy ", "answer."), fakea2a.Completed("Legacy result: 42"))...)})
		return nil
	})
	sc.Step(`^the parent agent delegates a task to "([^"]*)"$`, func(key string) error {
		return w.runAndWait(delegateCall(key, "Answer the question.") + "- say_result: \"Got: {{.JSON.summary}}\"\n")
	})
	sc.Step(`^the SSE stream emits subagent.started$`, func() error {
		_, err := w.findEvent(delegation.DelegationStarted, nil)
		return err
	})
	sc.Step(`^the SSE stream emits status updates from polling or task state$`, func() error {
		_, err := w.findEvent(delegation.DelegationStatus, func(ev delegation.DelegationEvent) bool {
			return ev.RemoteTaskID != "" && ev.Raw["remote_state"] != nil
		})
		return err
	})
	sc.Step(`^the SSE stream shows the polled text without invented deltas$`, func() error {
		// Each delta is what a poll added to the text: together they are
		// the message, and the answer is there before the last word.
		sum := map[string]string{}
		var ends []string
		for _, ev := range w.events() {
			switch ev.Kind {
			case delegation.DelegationTextDelta:
				sum[ev.RemoteMessageID] += ev.Delta
			case delegation.DelegationTextEnd:
				if sum[ev.RemoteMessageID] != ev.Text {
					return fmt.Errorf("message %s: deltas %q, text %q", ev.RemoteMessageID, sum[ev.RemoteMessageID], ev.Text)
				}
				ends = append(ends, ev.Text)
			}
		}
		if len(ends) != 2 || ends[0] != "Legacy answer." || ends[1] != "Legacy result: 42" {
			return fmt.Errorf("polled text messages %q", ends)
		}
		return nil
	})
	sc.Step(`^the final tool result contains the remote task result$`, func() error {
		out, _, err := w.p.toolResultJSON()
		if err != nil {
			return err
		}
		res, _ := w.p.finish()
		// The remote's answer is its output (the assistant text), then its
		// final status message "Legacy result: 42".
		if out["status"] != "completed" || out["summary"] != "Legacy answer.\n\nLegacy result: 42" || res.Output != "Got: Legacy answer.\n\nLegacy result: 42" {
			return fmt.Errorf("tool result %v, output %q", out, res.Output)
		}
		return nil
	})

	// Scenario 3.
	sc.Step(`^the parent run has an active delegation with remote task ID "([^"]*)"$`, func(alias string) error {
		w.addAgent("research", fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Working("Working on it"), fakea2a.Hang())},
			func(s *registry.RemoteAgentSpec) { s.Tenant = "acme" })
		if err := w.run(delegateCall("research", "A long task.") + "- say: never reached\n"); err != nil {
			return err
		}
		ev, err := w.waitEvent(delegation.DelegationStatus, func(ev delegation.DelegationEvent) bool { return ev.Status == "working" })
		if err != nil {
			return err
		}
		w.alias[alias] = ev.RemoteTaskID
		return nil
	})
	sc.Step(`^the user cancels the parent run$`, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return w.p.h.Cancel(ctx)
	})
	sc.Step(`^the delegator calls A2A cancel task for "([^"]*)"$`, func(alias string) error {
		if _, err := w.p.finish(); err != nil {
			return err
		}
		for _, c := range w.fakes["research"].RequestsFor("CancelTask") {
			reason, _ := c.Metadata["reason"].(string)
			if string(c.TaskID) == w.alias[alias] && c.Tenant == "acme" && (reason == "parent_cancelled" || reason == "parent_run_ended") &&
				c.Metadata["run_id"] == w.p.h.RunID() && c.Metadata["delegation_id"] != "" {
				return nil
			}
		}
		return fmt.Errorf("no CancelTask for %s with tenant and metadata: %+v", w.alias[alias], w.fakes["research"].RequestsFor("CancelTask"))
	})
	sc.Step(`^the SSE stream emits subagent.cancelled or subagent.status cancel_pending$`, func() error {
		if _, err := w.findEvent(delegation.DelegationCancelled, nil); err == nil {
			return nil
		}
		_, err := w.findEvent(delegation.DelegationStatus, func(ev delegation.DelegationEvent) bool { return ev.Status == string(delegation.CodeCancelPending) })
		return err
	})
	sc.Step(`^the parent run terminates without leaking the remote task watcher$`, func() error {
		res, err := w.p.finish()
		if err != nil {
			return err
		}
		if res.Status != agentadaptor.StatusCancelled {
			return fmt.Errorf("run status %s", res.Status)
		}
		if st := w.p.d.Stats(); st.ActiveDelegations != 0 || st.CleanupWatchers != 0 || st.LiveRuns != 0 {
			return fmt.Errorf("stats %+v", st)
		}
		return nil
	})

	// Scenario 4.
	sc.Step(`^the remote A2A agent accepts a delegated task$`, func() error {
		w.addAgent("research", fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Working("On it"), fakea2a.Failed("quota exceeded"))})
		return nil
	})
	sc.Step(`^the remote task reaches a failed terminal status$`, func() error {
		return w.runAndWait(delegateCall("research", "Try this.") +
			"- say_result: \"Remote said {{.JSON.error.code}} (retryable={{.JSON.error.retryable}}); continuing without it.\"\n")
	})
	sc.Step(`^the SSE stream emits subagent.failed with the remote status$`, func() error {
		ev, err := w.findEvent(delegation.DelegationFailed, nil)
		if err != nil {
			return err
		}
		if ev.Error == nil || ev.Error.RemoteStatus != "failed" || ev.Error.Code != delegation.CodeRemoteFailed {
			return fmt.Errorf("failed %+v", ev.Error)
		}
		return nil
	})
	sc.Step(`^the MCP tool returns a structured error result$`, func() error {
		out, r, err := w.p.toolResultJSON()
		if err != nil {
			return err
		}
		e, _ := out["error"].(map[string]any)
		if !r.ToolError || out["status"] != "failed" || e["code"] != "remote_failed" || e["remote_status"] != "failed" || !strings.Contains(fmt.Sprint(e["message"]), "quota exceeded") {
			return fmt.Errorf("tool result %v (isError %v)", out, r.ToolError)
		}
		return nil
	})
	sc.Step(`^the parent agent can decide whether to retry or continue$`, func() error {
		res, err := w.p.finish()
		if err != nil {
			return err
		}
		if res.Output != "Remote said remote_failed (retryable=false); continuing without it." {
			return fmt.Errorf("output %q", res.Output)
		}
		return nil
	})

	// Scenario 5.
	var allowInput bool
	sc.Step(`^the remote A2A task enters input-required state$`, func() error { return nil })
	sc.Step(`^host policy allows surfacing remote input requests$`, func() error {
		allowInput = true
		return nil
	})
	sc.Step(`^the delegator receives the input-required event$`, func() error {
		w.addAgent("research", fakea2a.Options{Name: "research", Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
			fakea2a.InputRequired("Which year should I use?"), fakea2a.TextChunks("Using the year given."), fakea2a.Completed("Report for 2024"))...)},
			func(s *registry.RemoteAgentSpec) { s.Policy.AllowInputRequired = allowInput })
		if err := w.run(delegateCall("research", "Write the yearly report.") + "- say_result: \"{{.JSON.summary}}\"\n"); err != nil {
			return err
		}
		_, err := w.waitEvent(delegation.DelegationInputRequired, nil)
		return err
	})
	sc.Step(`^the SSE stream emits subagent.input_required$`, func() error {
		ev, err := w.findEvent(delegation.DelegationInputRequired, nil)
		if err != nil {
			return err
		}
		if ev.Text != "Which year should I use?" {
			return fmt.Errorf("input_required %+v", ev)
		}
		return nil
	})
	sc.Step(`^the MCP tool blocks until the input is resolved or times out$`, func() error {
		if _, r := w.p.toolCall(); r != nil {
			return errors.New("the tool returned before the input was resolved")
		}
		ev, _ := w.findEvent(delegation.DelegationInputRequired, nil)
		h := httptest.NewServer(w.p.d.InputHandler())
		defer h.Close()
		defer h.Client().CloseIdleConnections()
		resp, err := h.Client().Post(h.URL+"/agui/runs/"+w.p.h.RunID()+"/delegations/"+ev.DelegationID+"/input", "application/json", strings.NewReader(`{"text":"2024"}`))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("input POST: HTTP %d", resp.StatusCode)
		}
		res, err := w.p.finish()
		if err != nil {
			return err
		}
		out, _, err := w.p.toolResultJSON()
		if err != nil {
			return err
		}
		// The answer is the task's output after the input, then its final
		// status message.
		if out["status"] != "completed" || res.Output != "Using the year given.\n\nReport for 2024" {
			return fmt.Errorf("tool result %v output %q", out, res.Output)
		}
		for _, r := range w.fakes["research"].RequestsFor("SendStreamingMessage") {
			if string(r.TaskID) == ev.RemoteTaskID && r.MessageText == "2024" {
				return nil
			}
		}
		return errors.New("the answer was not sent to the same remote task")
	})

	// Scenario 6.
	sc.Step(`^the parent run starts two delegate_to_agent tool calls$`, func() error {
		for _, key := range []string{"research", "review"} {
			w.addAgent(key, fakea2a.Options{Name: key, Streaming: true, Behavior: fakea2a.Script(fakea2a.Steps(
				fakea2a.Working(key+" working"), fakea2a.TextChunks(key+" says ", "hello."), fakea2a.AwaitRelease(), fakea2a.Completed(key+" done"))...)})
		}
		if err := w.run(delegateCall("research", "First task.") + "- say_result: \"{{.JSON.summary}}\"\n"); err != nil {
			return err
		}
		if err := w.p.wait("the run token", func() bool { return w.p.token != "" }); err != nil {
			return err
		}
		// The scripted parent makes one call at a time; the second,
		// parallel tool call of the same parent run (as Claude or Codex
		// issue them) comes over MCP with the run's own token.
		w.p.mu.Lock()
		token := w.p.token
		w.p.mu.Unlock()
		tr := &http.Transport{}
		w.closers = append(w.closers, tr.CloseIdleConnections)
		client := mcp.NewClient(&mcp.Implementation{Name: "parallel-parent-call", Version: "1"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		sess, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: w.p.srv.URL(), HTTPClient: &http.Client{Transport: bearer{token, tr}}}, nil)
		if err != nil {
			cancel()
			return err
		}
		w.second = make(chan map[string]any, 1)
		done := make(chan struct{})
		w.closers = append(w.closers, func() { cancel(); <-done; _ = sess.Close() })
		go func() {
			defer close(done)
			res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: mcptool.ToolName, Arguments: map[string]any{"agent": "review", "objective": "Second task."},
				Meta: mcp.Meta{mcptool.MetaScriptedToolCallID: "parallel-call-2"}})
			out := map[string]any{}
			if err == nil {
				b, _ := json.Marshal(res.StructuredContent)
				_ = json.Unmarshal(b, &out)
			} else {
				out["error"] = err.Error()
			}
			w.second <- out
		}()
		return nil
	})
	sc.Step(`^both remote agents stream events concurrently$`, func() error {
		err := w.p.wait("both delegations streaming", func() bool {
			ended := map[string]bool{}
			for _, ev := range w.p.events {
				if ev.Kind == delegation.DelegationTextEnd {
					ended[ev.AgentKey] = true
				}
			}
			return ended["research"] && ended["review"]
		})
		if err != nil {
			return err
		}
		// The parallel call ends first: the scripted parent does not know
		// about it and ends the run once its own call returns, and a run's
		// end ends its delegations (as a real parent would not, since it
		// waits for all its parallel calls).
		release := func(key string) {
			for _, id := range w.fakes[key].Tasks() {
				w.fakes[key].Release(id)
			}
		}
		release("review")
		select {
		case out := <-w.second:
			if out["status"] != "completed" || out["summary"] != "review says hello.\n\nreview done" {
				return fmt.Errorf("parallel call result %v", out)
			}
		case <-time.After(30 * time.Second):
			return errors.New("parallel call did not return")
		}
		release("research")
		_, err = w.p.finish()
		return err
	})
	sc.Step(`^every subagent event includes a distinct delegation ID$`, func() error {
		ids := map[string]string{}
		for _, ev := range w.events() {
			if ev.DelegationID == "" {
				return fmt.Errorf("event without delegation id: %+v", ev)
			}
			if k, ok := ids[ev.DelegationID]; ok && k != ev.AgentKey {
				return fmt.Errorf("delegation %s mixes agents %s and %s", ev.DelegationID, k, ev.AgentKey)
			}
			ids[ev.DelegationID] = ev.AgentKey
		}
		if len(ids) != 2 {
			return fmt.Errorf("%d delegation ids, want 2", len(ids))
		}
		return nil
	})
	sc.Step(`^events are grouped under the correct parent tool call when known$`, func() error {
		start, _ := w.p.toolCall()
		want := map[string]string{"research": start.ToolCallID, "review": "parallel-call-2"}
		for _, ev := range w.events() {
			if ev.ParentToolCallID != want[ev.AgentKey] {
				return fmt.Errorf("%s event under %q, want %q", ev.AgentKey, ev.ParentToolCallID, want[ev.AgentKey])
			}
		}
		return nil
	})
	sc.Step(`^terminal events are emitted for both delegations$`, func() error {
		per := map[string]int{}
		for _, ev := range w.events() {
			if ev.Kind.Terminal() {
				if ev.Kind != delegation.DelegationFinished {
					return fmt.Errorf("terminal %s for %s", ev.Kind, ev.AgentKey)
				}
				per[ev.DelegationID]++
			}
		}
		if len(per) != 2 {
			return fmt.Errorf("terminal events for %d delegations", len(per))
		}
		for id, n := range per {
			if n != 1 {
				return fmt.Errorf("delegation %s has %d terminal events", id, n)
			}
		}
		return nil
	})

	// Scenario 8.
	sc.Step(`^the remote registry only contains "([^"]*)"$`, func(key string) error {
		w.addAgent(key, fakea2a.Options{Name: key, Streaming: true, Behavior: fakea2a.Script(fakea2a.Completed("x"))})
		return nil
	})
	sc.Step(`^the model calls delegate_to_agent with agent "([^"]*)"$`, func(key string) error {
		return w.runAndWait(delegateCall(key, "Do something.") + "- say_result: \"{{.JSON.error.code}}\"\n")
	})
	sc.Step(`^the tool returns agent_not_found$`, func() error {
		out, r, err := w.p.toolResultJSON()
		if err != nil {
			return err
		}
		e, _ := out["error"].(map[string]any)
		if !r.ToolError || e["code"] != "agent_not_found" || e["retryable"] != false {
			return fmt.Errorf("tool result %v", out)
		}
		return nil
	})
	sc.Step(`^no outbound network request is made$`, func() error {
		for key, f := range w.fakes {
			if n := len(f.Requests()); n != 0 {
				return fmt.Errorf("%d requests reached %s: %+v", n, key, f.Requests())
			}
		}
		return nil
	})
	sc.Step(`^no secret is exposed in the tool result or stream$`, func() error {
		res, err := w.p.finish()
		if err != nil {
			return err
		}
		pls, evs := w.p.snapshot()
		w.p.mu.Lock()
		token := w.p.token
		w.p.mu.Unlock()
		for what, v := range map[string]any{"parent stream": pls, "delegation events": evs, "run result": res,
			"audit": w.p.d.Audit().ListRun(w.p.h.RunID())} {
			b, _ := json.Marshal(v)
			if strings.Contains(string(b), dt.SecretToken) || strings.Contains(string(b), token) {
				return fmt.Errorf("%s exposes a secret", what)
			}
		}
		if logs := w.p.logs.String(); strings.Contains(logs, dt.SecretToken) || strings.Contains(logs, token) {
			return errors.New("logs expose a secret")
		}
		return nil
	})
}
