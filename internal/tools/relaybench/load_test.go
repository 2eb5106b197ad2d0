package relaybench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// sseServer answers every POST /agui with frames.
func sseServer(t *testing.T, frames ...string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, f := range frames {
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", i+1, f)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func delta(markers ...string) string {
	return `{"type":"CUSTOM","name":"subagent.text.delta","value":{"delta":"xx ` + strings.Join(markers, "xx ") + `"}}`
}

func TestRunOnceCountsChunksAndTerminals(t *testing.T) {
	s := Stream{Chunks: 3}
	for _, tc := range []struct {
		name               string
		kind               *systemKind
		frames             []string
		chunks, lost, dups int
		terminal, wantErr  bool
		steady             int
	}{
		{"complete", kindBare, []string{`{"type":"RUN_STARTED"}`, delta("~c0:1~"), delta("~c1:2~"), delta("~c2:3~"), `{"type":"RUN_FINISHED"}`}, 3, 0, 0, true, false, 1},
		{"coalesced frame", kindBare, []string{delta("~c0:1~", "~c1:2~"), delta("~c2:3~"), `{"type":"RUN_FINISHED"}`}, 3, 0, 0, true, false, 1},
		{"text.end repeats the text, not counted", kindProject, []string{delta("~c0:1~", "~c1:2~", "~c2:3~"),
			`{"type":"CUSTOM","name":"subagent.text.end","value":{"text":"~c0:1~~c1:2~~c2:3~"}}`,
			`{"type":"CUSTOM","name":"subagent.finished","value":{}}`, `{"type":"RUN_FINISHED"}`}, 3, 0, 0, true, false, 1},
		{"project without subagent.finished", kindProject, []string{delta("~c0:1~", "~c1:2~", "~c2:3~"), `{"type":"RUN_FINISHED"}`}, 3, 0, 0, false, false, 1},
		{"lost chunk and duplicate", kindBare, []string{delta("~c0:1~"), delta("~c0:1~"), delta("~c2:3~"), `{"type":"RUN_FINISHED"}`}, 2, 1, 1, true, false, 0},
		{"no terminal", kindBare, []string{delta("~c0:1~"), delta("~c1:2~"), delta("~c2:3~")}, 3, 0, 0, false, false, 1},
		{"run error", kindBare, []string{delta("~c0:1~"), `{"type":"RUN_ERROR","message":"x"}`}, 1, 2, 0, false, true, 0},
		{"peer RAW artifact-update", kindPeer, []string{`{"type":"RAW","event":{"kind":"task"}}`,
			`{"type":"RAW","event":{"kind":"artifact-update","artifact":{"parts":[{"kind":"text","text":"x ~c0:1~"}]}}}`,
			`{"type":"RAW","event":{"kind":"artifact-update","artifact":{"parts":[{"kind":"text","text":"x ~c1:1~"}]}}}`,
			`{"type":"RAW","event":{"kind":"artifact-update","artifact":{"parts":[{"kind":"text","text":"x ~c2:1~"}]}}}`,
			`{"type":"RUN_FINISHED"}`}, 3, 0, 0, true, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := runOnce(context.Background(), sseServer(t, tc.frames...), tc.kind, s, 1, runOpts{})
			if st.Chunks != tc.chunks || st.Lost != tc.lost || st.Duplicates != tc.dups || st.Terminal != tc.terminal || (st.Err != nil) != tc.wantErr || len(st.Steady) != tc.steady {
				t.Errorf("got chunks %d lost %d dups %d terminal %v err %v steady %d; want %d %d %d %v err=%v %d",
					st.Chunks, st.Lost, st.Duplicates, st.Terminal, st.Err, len(st.Steady), tc.chunks, tc.lost, tc.dups, tc.terminal, tc.wantErr, tc.steady)
			}
		})
	}
}

// A fan-out run carries several streams told apart by their markers' tag;
// it ends when each has its finished frame and the run its RUN_FINISHED,
// and the tracker sees every stream start and the first one end.
func TestRunOnceFanOut(t *testing.T) {
	s := Stream{Chunks: 3}
	fin := `{"type":"CUSTOM","name":"subagent.finished","value":{}}`
	for _, tc := range []struct {
		name                        string
		kind                        *systemKind
		frames                      []string
		chunks, lost, dups, started int
		terminal, ended             bool
	}{
		{"two streams interleaved", kindBare, []string{delta("~c0:1:0~"), delta("~c0:1:1~", "~c1:2:1~"), delta("~c1:2:0~"), delta("~c2:3:1~"), fin, delta("~c2:3:0~"), fin, `{"type":"RUN_FINISHED"}`}, 6, 0, 0, 2, true, true},
		{"one stream without its finished frame", kindProject, []string{delta("~c0:1:0~", "~c1:1:0~", "~c2:1:0~"), delta("~c0:1:1~", "~c1:1:1~", "~c2:1:1~"), fin, `{"type":"RUN_FINISHED"}`}, 6, 0, 0, 2, false, true},
		{"a stream lost, a tag out of range ignored", kindBare, []string{delta("~c0:1:0~", "~c1:1:0~", "~c2:1:0~"), delta("~c0:1:2~"), fin, fin, `{"type":"RUN_FINISHED"}`}, 3, 3, 0, 1, true, true},
		{"same chunk twice in one stream", kindBare, []string{delta("~c0:1:0~", "~c0:1:0~"), delta("~c0:1:1~"), fin, fin, `{"type":"RUN_FINISHED"}`}, 2, 4, 1, 2, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fan := newFanTracker(2)
			st := runOnce(context.Background(), sseServer(t, tc.frames...), tc.kind, s, 1, runOpts{width: 2, fan: fan})
			if st.Chunks != tc.chunks || st.Lost != tc.lost || st.Duplicates != tc.dups || st.Terminal != tc.terminal || int(fan.started.Load()) != tc.started {
				t.Errorf("got chunks %d lost %d dups %d terminal %v started %d (%s); want %d %d %d %v %d",
					st.Chunks, st.Lost, st.Duplicates, st.Terminal, fan.started.Load(), st.Diag, tc.chunks, tc.lost, tc.dups, tc.terminal, tc.started)
			}
			select {
			case <-fan.firstEnded:
				if !tc.ended {
					t.Error("a stream ended, want none")
				}
			default:
				if tc.ended {
					t.Error("no stream ended")
				}
			}
			if len(st.SteadyAt) != len(st.Steady) {
				t.Errorf("%d arrival times for %d steady chunks", len(st.SteadyAt), len(st.Steady))
			}
		})
	}
}
