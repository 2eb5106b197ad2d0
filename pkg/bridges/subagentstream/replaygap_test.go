package subagentstream_test

import (
	"fmt"
	"testing"

	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"go.uber.org/goleak"
)

// A stream.replay_gap marker is sent only for a cursor older than the
// replay log, and names exactly the ids the client misses; a cursor right
// before the log's first frame misses nothing, so it gets the log whole
// without a marker (docs/design.md#replay-and-reconnect).
func TestReplayGapOnlyForCursorsOlderThanTheLog(t *testing.T) {
	defer goleak.VerifyNone(t)
	hub, st, a, p := openStream(t, subagentstream.HubOptions{Stream: subagentstream.Options{ReplayFrames: 8}})
	defer hub.Close()
	live, _ := st.Subscribe(0)
	readUntil(t, live, isType("TOOL_CALL_START(delegate_to_agent)"))
	p.send(delegation.DelegationStarted)
	for i := range 20 {
		p.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) { e.Status = fmt.Sprint("step ", i) })
	}
	p.send(delegation.DelegationFinished)
	readUntil(t, live, isType("CUSTOM(subagent.finished)"))
	a.release(t, "go")
	all := readAll(t, live)
	last := all[len(all)-1].ID
	first := last - 8 + 1 // the log holds the last ReplayFrames frames
	if first < 4 {
		t.Fatalf("the log was not trimmed enough for the test: %d frames", last)
	}

	for _, tt := range []struct {
		name   string
		cursor uint64
		gap    bool // a marker naming [cursor+1, first-1]
	}{
		{"two before the log", first - 2, true},
		{"right before the log", first - 1, false},
		{"at the log's first frame", first, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sub, err := st.Subscribe(tt.cursor)
			if err != nil {
				t.Fatal(err)
			}
			rest := readAll(t, sub)
			var gaps []map[string]any
			var ids []uint64
			for _, f := range rest {
				if label(f) == "CUSTOM("+subagentstream.EventReplayGap+")" {
					gaps = append(gaps, value(f))
				}
				if f.ID != 0 {
					ids = append(ids, f.ID)
				}
			}
			switch {
			case tt.gap && (len(gaps) != 1 || gaps[0]["from"] != float64(tt.cursor+1) || gaps[0]["to"] != float64(first-1)):
				t.Errorf("cursor %d (log from %d): gap markers %v, want one {from: %d, to: %d}", tt.cursor, first, gaps, tt.cursor+1, first-1)
			case !tt.gap && len(gaps) != 0:
				t.Errorf("cursor %d (log from %d) misses nothing, got gap markers %v", tt.cursor, first, gaps)
			}
			from := max(tt.cursor+1, first)
			if len(ids) != int(last-from+1) || ids[0] != from || ids[len(ids)-1] != last {
				t.Fatalf("cursor %d: replayed ids %v, want every id from %d to %d", tt.cursor, ids, from, last)
			}
			verifyGo(t, rest)
		})
	}
}
