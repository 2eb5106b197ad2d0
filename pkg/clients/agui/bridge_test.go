package agui_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"

	"github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/shellagent"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
	aguiclient "github.com/seed0634/agentadaptor/pkg/clients/agui"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

// Shell scripts for the test adapter (internal/testkit/shellagent), keyed by
// prompt: each stdout line is a StreamPayload JSON.
var bridgeScripts = map[string]string{
	"tool": `printf '%s\n' '{"kind":"text.start","message_id":"m1"}' '{"kind":"text.delta","message_id":"m1","delta":"Searching"}' \
		'{"kind":"text.end","message_id":"m1","text":"Searching"}' \
		'{"kind":"tool_call.start","tool_call_id":"call-1","tool_name":"search","message_id":"m1"}' \
		'{"kind":"tool_call.args","tool_call_id":"call-1","delta":"{\"q\":\"go\"}"}' '{"kind":"tool_call.end","tool_call_id":"call-1"}' \
		'{"kind":"tool_call.result","tool_call_id":"call-1","tool_result":"3 results"}' \
		'{"name":"remote.note","raw":{"n":1}}' '{"kind":"text.end","message_id":"m2","text":"Found 3 results."}'`,
	"fail": `printf '%s\n' '{"kind":"text.delta","message_id":"m1","delta":"partial"}'; echo 'remote agent crashed' >&2; exit 3`,
	"slow": `printf '%s\n' '{"kind":"text.delta","message_id":"m1","delta":"working"}'; exec sleep 30`,
}

// bridgeRemote is a real pkg/bridges/sse handler over an SDK running the
// shell adapter; it records the RunHandle of every run by AG-UI runId.
type bridgeRemote struct {
	srv     *httptest.Server
	mu      sync.Mutex
	handles map[string]*agentadaptor.RunHandle
}

func newBridgeRemote(t *testing.T) *bridgeRemote {
	t.Helper()
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(&shellagent.Adapter{AdapterName: "sh", Scripts: bridgeScripts}), agentadaptor.WithRunDefaults(
		agentadaptor.WithTempRoot(t.TempDir()), agentadaptor.WithWorkDir(t.TempDir()),
		agentadaptor.WithCancelGrace(5*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	b := &bridgeRemote{handles: map[string]*agentadaptor.RunHandle{}}
	h := sse.NewHandler(sdk, sse.WithOnRunStart(func(id string, rh *agentadaptor.RunHandle) {
		b.mu.Lock()
		b.handles[id] = rh
		b.mu.Unlock()
	}))
	b.srv = httptest.NewServer(h)
	t.Cleanup(b.srv.Close)
	return b
}

func (b *bridgeRemote) handle(t *testing.T, runID string) *agentadaptor.RunHandle {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.handles[runID]
	if h == nil {
		t.Fatalf("run %s was not started", runID)
	}
	return h
}

func (b *bridgeRemote) waitEnded(t *testing.T, runID string) *agentadaptor.RunResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := b.handle(t, runID).Wait(ctx)
	if err != nil {
		t.Fatalf("run %s did not end: %v", runID, err)
	}
	return res
}

func TestAgainstTheSSEBridge(t *testing.T) {
	leakCheck(t)
	b := newBridgeRemote(t)
	c := newClient(t, aguiclient.Options{EndpointURL: b.srv.URL})

	t.Run("full run", func(t *testing.T) {
		s := run(t, c, aguiclient.Input{ThreadID: "th-1", RunID: "run-tool", Text: "tool"})
		evs := drain(s)
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
			"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "CUSTOM",
			"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}
		if got := typesOf(evs); !slices.Equal(got, want) {
			t.Fatalf("types:\n got  %v\n want %v", got, want)
		}
		if err := events.ValidateSequence(evs); err != nil {
			t.Errorf("sequence: %v", err)
		}
		if rs := evs[0].(*events.RunStartedEvent); rs.RunID() != "run-tool" || rs.ThreadID() != "th-1" {
			t.Errorf("RUN_STARTED %+v", rs)
		}
		if a := evs[5].(*events.ToolCallArgsEvent); a.Delta != `{"q":"go"}` {
			t.Errorf("args %q", a.Delta)
		}
		if ce := evs[8].(*events.CustomEvent); ce.Name != "remote.note" {
			t.Errorf("custom %+v", ce)
		}
		if s.Terminal() == nil || s.LastEventID() != "13" {
			t.Errorf("terminal %v, last id %q", s.Terminal(), s.LastEventID())
		}
		if res := b.waitEnded(t, "run-tool"); res.Status != agentadaptor.StatusCompleted {
			t.Errorf("remote run status %s", res.Status)
		}
	})

	t.Run("remote failure is a RUN_ERROR terminal", func(t *testing.T) {
		s := run(t, c, aguiclient.Input{RunID: "run-fail", Text: "fail"})
		evs := drain(s)
		re, ok := s.Terminal().(*events.RunErrorEvent)
		if s.Err() != nil || !ok || evs[len(evs)-1] != re || re.Message == "" {
			t.Fatalf("got %v, %v, terminal %#v", typesOf(evs), s.Err(), s.Terminal())
		}
		b.waitEnded(t, "run-fail")
	})

	for _, how := range []string{"Close", "cancel"} {
		t.Run(how+" mid-run cancels the remote run", func(t *testing.T) {
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			runID := "run-slow-" + how
			s, err := c.Run(ctx, aguiclient.Input{RunID: runID, Text: "slow"})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for s.Next() {
				if s.Event().Type() == events.EventTypeTextMessageContent {
					break
				}
			}
			if s.Err() != nil {
				t.Fatal(s.Err())
			}
			if how == "Close" {
				_ = s.Close()
			} else {
				cancel()
			}
			if s.Next() || !errors.Is(s.Err(), clienterr.ErrCanceled) {
				t.Errorf("after %s: Err = %v", how, s.Err())
			}
			if res := b.waitEnded(t, runID); res.Status != agentadaptor.StatusCancelled {
				t.Errorf("remote run status %s, want cancelled", res.Status)
			}
		})
	}
}
