package subagentstream_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"go.uber.org/goleak"
)

// hookJournal hands every frame the hub appends to hook, on the run's
// merge goroutine, while the frame is being appended: a test's hand on
// what happens while the merge is busy.
type hookJournal struct{ hook func(*subagentstream.Frame) }

func (j hookJournal) Begin(subagentstream.JournalRun) subagentstream.RunJournal { return j }
func (j hookJournal) Append(f *subagentstream.Frame)                            { j.hook(f) }
func (j hookJournal) End(bool)                                                  {}

// Before each parent event the merge drains the bus: a delegation event
// published before the merge takes the parent's next event comes first,
// even when that parent event was already waiting
// (docs/design.md#how-the-mux-orders-a-run).
//
// The parent has printed everything before the hub starts merging it, so
// its next event is always waiting; while the merge emits parent delta k,
// the remote publishes its status k. Each status must come right after the
// delta it was published during, before delta k+1. A merge that only
// selected between the two sources would pick the parent's next event about
// every other time: sixteen rounds leave such a merge no way to pass. It
// holds whichever way the merge reads the bus's queue: inline (the
// publisher merges) or direct.
func TestBusDrainedBeforeEachParentEvent(t *testing.T) {
	for _, r := range busReaders() {
		t.Run(r.name, func(t *testing.T) { testBusDrainedBeforeEachParentEvent(t, r.bus()) })
	}
}

func testBusDrainedBeforeEachParentEvent(t *testing.T, bus delegation.EventBus) {
	defer goleak.VerifyNone(t)
	const rounds = 16
	a := &shellParent{dir: t.TempDir()}
	steps := []any{P{Kind: agentadaptor.KindTextStart, MessageID: "m1"}}
	for k := range rounds {
		steps = append(steps, P{Kind: agentadaptor.KindTextDelta, MessageID: "m1", Delta: strconv.Itoa(k)})
	}
	steps = append(steps, P{Kind: agentadaptor.KindTextEnd, MessageID: "m1"})
	h := startParent(t, a, a.script(steps...))
	select {
	case <-h.Done(): // every parent event is queued for the merge
	case <-ctx(t).Done():
		t.Fatal("the parent run did not end")
	}

	p := newPub(bus, h.RunID(), "del-1", "")
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{Journal: hookJournal{func(f *subagentstream.Frame) {
		switch f.Type {
		case events.EventTypeTextMessageContent:
			var m struct{ Delta string }
			_ = json.Unmarshal(f.Data, &m)
			p.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status, e.Text = "working", "after "+m.Delta })
		case events.EventTypeTextMessageEnd:
			p.send(delegation.DelegationFinished, func(e *delegation.DelegationEvent) { e.Status = "completed" })
		}
	}}})
	defer hub.Close()
	st := hub.Start(h, "th", "run-drain")
	select {
	case <-st.Done():
	case <-ctx(t).Done():
		t.Fatal("the stream did not end")
	}
	sub, err := st.Subscribe(0)
	if err != nil {
		t.Fatal(err)
	}
	frames := readAll(t, sub)

	want := []string{"RUN_STARTED", "TEXT_MESSAGE_START"}
	for k := range rounds {
		want = append(want, fmt.Sprintf("TEXT_MESSAGE_CONTENT %d", k))
		if k == 0 {
			want = append(want, "CUSTOM(subagent.started)")
		}
		want = append(want, fmt.Sprintf("CUSTOM(subagent.status) after %d", k))
	}
	want = append(want, "TEXT_MESSAGE_END", "CUSTOM(subagent.finished)", "RUN_FINISHED")
	var got []string
	for _, f := range frames {
		l := label(f)
		switch l {
		case "TEXT_MESSAGE_CONTENT":
			var m struct{ Delta string }
			_ = json.Unmarshal(f.Data, &m)
			l += " " + m.Delta
		case "CUSTOM(subagent.status)":
			l += " " + fmt.Sprint(value(f)["text"])
		}
		got = append(got, l)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("order:\n%s\nwant (each delegation event before the parent's next event):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	verifyGo(t, frames)
}
