package subagentstream_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/shellagent"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"go.uber.org/goleak"
)

// recorder is an Observer that remembers what it was told.
type recorder struct {
	mu      sync.Mutex
	relayed []time.Time
	dropped map[string]int
}

func (r *recorder) Relayed(received time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.relayed = append(r.relayed, received)
}

func (r *recorder) Dropped(stage string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropped[stage] += n
}

// The Observer hears of every live subagent frame written to a client,
// with the receipt time of the delegation event it carries (not of parent
// frames, markers or replayed frames), and of the deltas dropped by the bus
// and the mux.
func TestObserverMeasuresRelayAndDrops(t *testing.T) {
	defer goleak.VerifyNone(t)
	bus := delegation.NewMemoryBus()
	rec := &recorder{dropped: map[string]int{}}
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{Stream: subagentstream.Options{Observer: rec, SubscriberMaxBytes: 4}})
	defer hub.Close()
	a := &shellParent{dir: t.TempDir()}
	h := startParent(t, a, a.script("wait:go"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			hub.ServeRun(w, r, h, "th", "run-x")
			return
		}
		hub.EventsHandler().ServeHTTP(w, r)
	}))
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()
	resp, err := http.Post(srv.URL, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := newPub(bus, h.RunID(), "del-1", "")
	at := time.Now().Add(-time.Second) // the delegator's publishing time
	stamp := func(e *delegation.DelegationEvent) { e.Time = at }
	p.send(delegation.DelegationStarted, stamp)
	p.send(delegation.DelegationTextDelta, delta("m1", "0123456789"), stamp) // beyond SubscriberMaxBytes: dropped by the mux
	p.send(delegation.DelegationStatus, func(e *delegation.DelegationEvent) {
		e.Status, e.Raw, e.Time = delegation.StatusStreamDropped, map[string]any{"dropped": 2}, at // the bus's own marker
	})
	p.send(delegation.DelegationFinished, stamp)
	a.release(t, "go")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "RUN_FINISHED") {
		t.Fatalf("stream: %s", body)
	}
	subagentFrames := strings.Count(string(body), `"name":"subagent.`)
	rec.mu.Lock()
	relayed, dropped := append([]time.Time(nil), rec.relayed...), rec.dropped
	rec.mu.Unlock()
	if len(relayed) != subagentFrames || subagentFrames != 3 { // started, the drop status, finished
		t.Fatalf("relayed %d frames, the stream has %d subagent frames:\n%s", len(relayed), subagentFrames, body)
	}
	for _, r := range relayed {
		if !r.Equal(at) {
			t.Fatalf("relayed a frame received at %v, want the event's time %v", r, at)
		}
	}
	if dropped[subagentstream.DropSDK] != 0 || dropped[subagentstream.DropBus] != 2 || dropped[subagentstream.DropMux] != 1 {
		t.Fatalf("dropped %v", dropped)
	}
	// A reconnect replays the frames: nothing more is relayed.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/agui/runs/run-x/events", nil)
	req.SetPathValue("runId", "run-x")
	rr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(rr.Body)
	rr.Body.Close()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.relayed) != len(relayed) {
		t.Fatalf("a replay was measured as relayed: %d frames", len(rec.relayed)-len(relayed))
	}
}

// The SDK's stream.dropped payloads reach the Observer with their counts.
func TestObserverCountsTheSDKsDrops(t *testing.T) {
	defer goleak.VerifyNone(t)
	bus := delegation.NewMemoryBus()
	rec := &recorder{dropped: map[string]int{}}
	hub := subagentstream.NewHub(bus, subagentstream.HubOptions{Stream: subagentstream.Options{Observer: rec}})
	defer hub.Close()
	a := &shellParent{dir: t.TempDir()}
	script := shellagent.Script(shellagent.Print(P{Kind: agentadaptor.KindTextStart, MessageID: "m1"}),
		"i=0; while [ $i -lt 2000 ]; do "+shellagent.Print(P{Kind: agentadaptor.KindTextDelta, MessageID: "m1", Delta: "some text of the parent "})+"; i=$((i+1)); done",
		shellagent.Print(P{Kind: agentadaptor.KindTextEnd, MessageID: "m1"}), a.gate("printed").Wait(), a.gate("go").Wait())
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(&shellagent.Adapter{}))
	if err != nil {
		t.Fatal(err)
	}
	// A queue of one payload that nobody reads until the parent printed
	// everything (more than a pipe holds): the SDK drops deltas.
	h, err := sdk.Start(context.Background(), "x", agentadaptor.WithAdapterOption(shellagent.OptionScript, script),
		agentadaptor.WithStreaming(), agentadaptor.WithStreamBuffer(1))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Cancel(context.Background()) }()
	testenv.WaitUntil(t, "the parent to print its deltas", func() bool {
		_, err := os.Stat(string(a.gate("printed")))
		return err == nil
	})
	a.release(t, "printed")
	a.release(t, "go")
	st := hub.Start(h, "th", "run-x")
	sub, _ := st.Subscribe(0)
	frames := readAll(t, sub)
	announced := 0
	for _, f := range frames {
		if label(f) == "CUSTOM(stream.dropped)" {
			n, _ := value(f)["dropped"].(float64)
			announced += int(n)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if announced == 0 || rec.dropped[subagentstream.DropSDK] != announced {
		t.Fatalf("the stream announced %d dropped deltas, the Observer heard of %d", announced, rec.dropped[subagentstream.DropSDK])
	}
}
