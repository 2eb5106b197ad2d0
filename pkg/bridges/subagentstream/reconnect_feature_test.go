package subagentstream_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cucumber/godog"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// reconnectWorld is the state of one scenario 7 run: a parent run whose
// delegation keeps streaming while the browser is away.
type reconnectWorld struct {
	t        *testing.T
	hub      *subagentstream.Hub
	st       *subagentstream.Stream
	parent   *shellParent
	pub      *pub
	before   []*subagentstream.Frame
	cursor   uint64
	resumed  []*subagentstream.Frame
	sentText string
}

func (w *reconnectWorld) delegationActive() error {
	w.hub, w.st, w.parent, w.pub = openStream(w.t, subagentstream.HubOptions{})
	sub, err := w.st.Subscribe(0)
	if err != nil {
		return err
	}
	w.before = readUntil(w.t, sub, isType("TOOL_CALL_START(delegate_to_agent)"))
	w.pub.send(delegation.DelegationStarted)
	w.pub.send(delegation.DelegationTextStart, msg("rm"))
	for i := range 3 {
		d := fmt.Sprintf("part %d; ", i)
		w.sentText += d
		w.pub.send(delegation.DelegationTextDelta, delta("rm", d))
	}
	w.before = append(w.before, readUntil(w.t, sub, func(f *subagentstream.Frame) bool {
		return label(f) == "CUSTOM(subagent.text.delta)" && strings.Contains(string(f.Data), "part 2")
	})...)
	sub.Close() // the browser goes away
	return nil
}

func (w *reconnectWorld) reconnect() error {
	w.cursor = w.before[len(w.before)-1].ID
	// The remote keeps streaming while nobody watches, then finishes.
	for i := 3; i < 6; i++ {
		d := fmt.Sprintf("part %d; ", i)
		w.sentText += d
		w.pub.send(delegation.DelegationTextDelta, delta("rm", d))
	}
	w.pub.send(delegation.DelegationTextEnd, msg("rm"))
	w.pub.send(delegation.DelegationFinished)
	w.parent.release(w.t, "go")
	sub, err := w.st.Subscribe(w.cursor)
	if err != nil {
		return err
	}
	w.resumed = readAll(w.t, sub)
	return nil
}

func (w *reconnectWorld) replaysAfterCursor() error {
	for _, f := range w.resumed {
		if f.ID != 0 {
			if f.ID != w.cursor+1 {
				return fmt.Errorf("replay starts at %d, want %d", f.ID, w.cursor+1)
			}
			break
		}
	}
	verify(w.t, w.resumed)
	return nil
}

func (w *reconnectWorld) delegatorKeptGoing() error {
	// The disconnect did not reach the delegation: nothing it published
	// while the browser was away is missing from what the UI now has.
	var text strings.Builder
	for _, f := range append(append([]*subagentstream.Frame{}, w.before...), w.resumed...) {
		if label(f) == "CUSTOM(subagent.text.delta)" {
			text.WriteString(value(f)["delta"].(string))
		}
	}
	if text.String() != w.sentText {
		return fmt.Errorf("UI text %q, remote sent %q", text.String(), w.sentText)
	}
	return nil
}

func (w *reconnectWorld) terminalOnce() error {
	all := append(append([]*subagentstream.Frame{}, w.before...), w.resumed...)
	counts := map[string]int{}
	for _, f := range all {
		counts[label(f)]++
	}
	if counts["CUSTOM(subagent.finished)"] != 1 || counts["RUN_FINISHED"] != 1 {
		return fmt.Errorf("terminal counts: subagent %d, run %d", counts["CUSTOM(subagent.finished)"], counts["RUN_FINISHED"])
	}
	if _, err := w.st.Subscribe(w.resumed[len(w.resumed)-1].ID); err == nil {
		return fmt.Errorf("a reconnect after the terminal must not replay it again")
	}
	return nil
}

func TestReconnectFeature(t *testing.T) {
	suite := godog.TestSuite{
		Name: "reconnect",
		ScenarioInitializer: func(sc *godog.ScenarioContext) {
			w := &reconnectWorld{t: t}
			sc.Step(`^a remote delegation is active and streaming$`, w.delegationActive)
			sc.Step(`^the browser disconnects and reconnects with Last-Event-ID$`, w.reconnect)
			sc.Step(`^the mux replays buffered events after the requested cursor$`, w.replaysAfterCursor)
			sc.Step(`^the delegator resubscribes or polls the remote A2A task if needed$`, w.delegatorKeptGoing)
			sc.Step(`^the UI receives a consistent terminal state exactly once$`, w.terminalOnce)
			sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
				if w.hub != nil {
					w.hub.Close()
				}
				return ctx, err
			})
		},
		Options: &godog.Options{Format: "pretty", Paths: []string{"features"}, TestingT: t, Strict: true},
	}
	if suite.Run() != 0 {
		t.Fatal("scenario 7 failed")
	}
}
