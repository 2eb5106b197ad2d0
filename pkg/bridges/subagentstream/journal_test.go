package subagentstream_test

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"
	"github.com/seed0634/agentadaptor/pkg/bridges/subagentstream"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"go.uber.org/goleak"
)

// recJournal records what a hub journals.
type recJournal struct {
	mu     sync.Mutex
	runs   []subagentstream.JournalRun
	frames []*subagentstream.Frame
	ended  []bool
}

func (j *recJournal) Begin(run subagentstream.JournalRun) subagentstream.RunJournal {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.runs = append(j.runs, run)
	return j
}

func (j *recJournal) Append(f *subagentstream.Frame) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.frames = append(j.frames, f)
}

func (j *recJournal) End(complete bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ended = append(j.ended, complete)
}

func (j *recJournal) snapshot() ([]*subagentstream.Frame, []bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.frames), slices.Clone(j.ended)
}

// The journal gets every frame with its id, in order, and the end; a Mirror
// fed those frames (shuffled, with duplicates) serves every cursor exactly
// as the original stream does.
func TestMirrorServesTheSameStreamAsTheOriginal(t *testing.T) {
	defer goleak.VerifyNone(t)
	j := &recJournal{}
	hub, st, a, p := openStream(t, subagentstream.HubOptions{Journal: j})
	defer hub.Close()
	sub, _ := st.Subscribe(0)
	readUntil(t, sub, isType("TOOL_CALL_START(delegate_to_agent)"))
	p.send(delegation.DelegationStarted)
	p.send(delegation.DelegationTextStart, msg("rm"))
	for _, d := range []string{"one ", "two ", "three"} {
		p.send(delegation.DelegationTextDelta, delta("rm", d))
	}
	p.send(delegation.DelegationTextEnd, msg("rm"))
	p.send(delegation.DelegationFinished)
	a.release(t, "go")
	all := readAll(t, sub)
	<-st.Done()
	frames, ended := j.snapshot()
	if len(j.runs) != 1 || j.runs[0].RunID != "run-r" || j.runs[0].ThreadID != "th" || j.runs[0].SDKRunID == "" {
		t.Fatalf("journal runs: %+v", j.runs)
	}
	if !slices.Equal(ended, []bool{true}) {
		t.Fatalf("journal end: %v", ended)
	}
	for i, f := range frames {
		if f.ID != uint64(i+1) {
			t.Fatalf("journal frame %d has id %d", i, f.ID)
		}
	}
	if last := all[len(all)-1]; last.ID != frames[len(frames)-1].ID {
		t.Fatalf("journal ends at %d, stream at %d", frames[len(frames)-1].ID, last.ID)
	}

	m := subagentstream.NewMirror("th", "run-r", subagentstream.Options{})
	order := rand.Perm(len(frames))
	order = append(order, order[:len(order)/2]...) // duplicates
	m.End(frames[len(frames)-1].ID)
	for _, i := range order {
		f := frames[i]
		if err := m.Append(f.ID, f.Type, f.Data); err != nil {
			t.Fatal(err)
		}
	}
	if !m.Ended() {
		t.Fatal("the mirror did not end at the end marker")
	}
	for cursor := uint64(0); cursor < frames[len(frames)-1].ID; cursor++ {
		want := subscribeAll(t, st, cursor)
		got := subscribeAll(t, m.Stream(), cursor)
		if strings.Join(labelIDs(got), ",") != strings.Join(labelIDs(want), ",") {
			t.Fatalf("cursor %d:\nmirror   %v\noriginal %v", cursor, labelIDs(got), labelIDs(want))
		}
		verifyGo(t, got) // a resumed stream is valid at every cursor
	}
	verify(t, subscribeAll(t, m.Stream(), 0))
	verifyGo(t, subscribeAll(t, m.Stream(), 6))
	if _, err := m.Stream().Subscribe(frames[len(frames)-1].ID); err == nil {
		t.Fatal("a complete mirror must report completion at its last cursor")
	}
}

func subscribeAll(t *testing.T, st *subagentstream.Stream, cursor uint64) []*subagentstream.Frame {
	t.Helper()
	sub, err := st.Subscribe(cursor)
	if err != nil {
		t.Fatalf("subscribe %d: %v", cursor, err)
	}
	return readAll(t, sub)
}

func labelIDs(fs []*subagentstream.Frame) []string {
	var out []string
	for _, f := range fs {
		l := label(f)
		if f.ID > 0 {
			l += "#" + strconv.FormatUint(f.ID, 10)
		}
		out = append(out, l)
	}
	return out
}

// Abort closes what was open at the mirror's last frame, the open subagent
// included, and ends with RUN_ERROR: a valid stream, replayable from any
// cursor; live subscribers get the closing frames, then EOF.
func TestMirrorAbortClosesWhatWasOpen(t *testing.T) {
	defer goleak.VerifyNone(t)
	j := &recJournal{}
	hub, st, a, p := openStream(t, subagentstream.HubOptions{Journal: j})
	defer hub.Close()
	sub, _ := st.Subscribe(0)
	readUntil(t, sub, isType("TOOL_CALL_START(delegate_to_agent)"))
	p.send(delegation.DelegationStarted)
	p.send(delegation.DelegationTextStart, msg("rm"))
	p.send(delegation.DelegationTextDelta, delta("rm", "half"))
	readUntil(t, sub, isType("CUSTOM(subagent.text.delta)"))
	frames, _ := j.snapshot()

	m := subagentstream.NewMirror("th", "run-r", subagentstream.Options{})
	for _, f := range frames {
		_ = m.Append(f.ID, f.Type, f.Data)
	}
	live, _ := m.Stream().Subscribe(uint64(len(frames)))
	closing := m.Abort("host_lost", "the replica running this run stopped")
	if len(closing) == 0 || closing[0].ID != uint64(len(frames)+1) {
		t.Fatalf("closing frames: %v", labels(closing))
	}
	if got := strings.Join(labels(closing), ","); got != "CUSTOM(subagent.failed),TOOL_CALL_END,TEXT_MESSAGE_END,RUN_ERROR" {
		t.Fatalf("closing frames: %s", got)
	}
	var runErr map[string]any
	_ = json.Unmarshal(closing[len(closing)-1].Data, &runErr)
	if runErr["code"] != "host_lost" {
		t.Fatalf("RUN_ERROR: %v", runErr)
	}
	if v := value(closing[0]); v["delegationId"] != "del-1" || v["error"].(map[string]any)["code"] != "host_lost" {
		t.Fatalf("subagent.failed: %v", v)
	}
	rest := readAll(t, live)
	if len(rest) < len(closing) {
		t.Fatalf("live subscriber got %v", labels(rest))
	}
	whole := subscribeAll(t, m.Stream(), 0)
	verify(t, whole)
	verifyGo(t, subscribeAll(t, m.Stream(), 5))
	if m.Abort("host_lost", "again") != nil {
		t.Fatal("a second Abort must do nothing")
	}
	// Frames the lost process still sends after the end are ignored.
	_ = m.Append(uint64(len(frames)+1), "CUSTOM", []byte(`{"type":"CUSTOM","name":"x","value":{}}`))
	if m.LastID() != closing[len(closing)-1].ID {
		t.Fatal("a frame after the end was applied")
	}
	a.release(t, "go")
}

// A never-started run aborts as RUN_STARTED, RUN_ERROR.
func TestMirrorAbortOfAnEmptyRun(t *testing.T) {
	m := subagentstream.NewMirror("th", "run-x", subagentstream.Options{})
	got := strings.Join(labels(m.Abort("host_lost", "gone")), ",")
	if got != "RUN_STARTED,RUN_ERROR" {
		t.Fatalf("got %s", got)
	}
	verifyGo(t, subscribeAll(t, m.Stream(), 0))
}

type mapSource struct {
	streams map[string]*subagentstream.Stream
	owner   string
	opened  int
}

func (s *mapSource) Open(_ context.Context, runID string) (*subagentstream.Stream, string, func(), error) {
	st, ok := s.streams[runID]
	if !ok {
		return nil, "", nil, subagentstream.ErrNoRun
	}
	s.opened++
	return st, s.owner, func() {}, nil
}

func (s *mapSource) Known(principal, runID string) bool {
	_, ok := s.streams[runID]
	return ok && principal == s.owner
}

// appendJSON appends an AG-UI event's JSON to m as frame id.
func appendJSON(t *testing.T, m *subagentstream.Mirror, id uint64, frame string) {
	var e struct{ Type string }
	_ = json.Unmarshal([]byte(frame), &e)
	if err := m.Append(id, events.EventType(e.Type), []byte(frame)); err != nil {
		t.Error(err)
	}
}

// eventsServer serves a hub's EventsHandler over HTTP.
type eventsServer struct{ srv *httptest.Server }

func serveEvents(hub *subagentstream.Hub) *eventsServer {
	mux := http.NewServeMux()
	mux.Handle("/agui/runs/{runId}/events", hub.EventsHandler())
	return &eventsServer{httptest.NewServer(mux)}
}

// get reads a run's events from cursor to the end: the status and body (a
// transport error as status 0 and its text).
func (s *eventsServer) get(run, cursor string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/agui/runs/"+run+"/events", nil)
	req.Header.Set("Last-Event-ID", cursor)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// close stops the server and drops its connections (before goleak looks).
func (s *eventsServer) close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
	http.DefaultClient.CloseIdleConnections()
}

// EventsHandler serves a run it does not hold from its Source, with the
// same answers, and the Source's runs count as in use.
func TestEventsHandlerReadsTheSource(t *testing.T) {
	defer goleak.VerifyNone(t)
	m := subagentstream.NewMirror("th", "run-m", subagentstream.Options{})
	for i, ev := range []string{
		`{"type":"RUN_STARTED","threadId":"th","runId":"run-m","timestamp":1}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant","timestamp":1}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"hi","timestamp":1}`,
		`{"type":"TEXT_MESSAGE_END","messageId":"m1","timestamp":1}`,
		`{"type":"RUN_FINISHED","threadId":"th","runId":"run-m","timestamp":1}`,
	} {
		appendJSON(t, m, uint64(i+1), ev)
	}
	m.End(5)
	// A source looks a run up by its runId under the requester's principal
	// (Source.Open reads it from the request's context) and says whose it
	// is; this one holds alice's run-m.
	src := &mapSource{streams: map[string]*subagentstream.Stream{"run-m": m.Stream()}, owner: "alice"}
	who := "alice"
	hub := subagentstream.NewHub(delegation.NewMemoryBus(), subagentstream.HubOptions{Source: src, Owner: func(*http.Request) string { return who }})
	defer hub.Close()
	srv := serveEvents(hub)
	defer srv.close()
	get := srv.get
	if code, body := get("run-m", "2"); code != 200 || !strings.Contains(body, "id: 3\n") || !strings.Contains(body, "RUN_FINISHED") {
		t.Fatalf("%d %s", code, body)
	}
	if code, _ := get("run-m", "5"); code != http.StatusNoContent {
		t.Fatalf("complete: %d", code)
	}
	if code, _ := get("run-m", "9"); code != http.StatusNotFound {
		t.Fatalf("beyond: %d", code)
	}
	if code, _ := get("run-none", "1"); code != http.StatusNotFound {
		t.Fatalf("unknown: %d", code)
	}
	who = "bob"
	if code, _ := get("run-m", "1"); code != http.StatusNotFound {
		t.Fatalf("another principal: %d", code)
	}
	// The source's runs are in use for their own principal only.
	if !hub.RunIDInUse(sse.RunKey("alice", "run-m")) || hub.RunIDInUse(sse.RunKey("bob", "run-m")) || hub.RunIDInUse("run-none") {
		t.Fatal("RunIDInUse must count the source's runs, each for its principal")
	}
}

// signalSource is a mapSource that reports every Open.
type signalSource struct {
	mapSource
	opened chan struct{}
}

func (s *signalSource) Open(ctx context.Context, runID string) (*subagentstream.Stream, string, func(), error) {
	st, owner, release, err := s.mapSource.Open(ctx, runID)
	s.opened <- struct{}{}
	return st, owner, release, err
}

// A client that switches to another process right after a frame may hold a
// cursor that process's copy has not received yet: EventsHandler waits for
// the copy (up to SourceLag) instead of answering 404 at once.
func TestEventsHandlerWaitsForASourceBehindTheCursor(t *testing.T) {
	defer goleak.VerifyNone(t)
	frames := []string{
		`{"type":"RUN_STARTED","threadId":"th","runId":"run-m","timestamp":1}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant","timestamp":1}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"a","timestamp":1}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"b","timestamp":1}`,
		`{"type":"TEXT_MESSAGE_END","messageId":"m1","timestamp":1}`,
		`{"type":"RUN_FINISHED","threadId":"th","runId":"run-m","timestamp":1}`,
	}
	m := subagentstream.NewMirror("th", "run-m", subagentstream.Options{})
	appendFrames := func(from, to int) {
		for i := from; i <= to; i++ {
			appendJSON(t, m, uint64(i), frames[i-1])
		}
	}
	appendFrames(1, 2)
	src := &signalSource{mapSource{streams: map[string]*subagentstream.Stream{"run-m": m.Stream()}, owner: "alice"}, make(chan struct{}, 1)}
	hub := subagentstream.NewHub(delegation.NewMemoryBus(), subagentstream.HubOptions{Source: src, SourceLag: time.Hour})
	defer hub.Close()
	srv := serveEvents(hub)
	defer srv.close()
	type answer struct {
		code int
		body string
	}
	get := func(cursor string) <-chan answer {
		out := make(chan answer, 1)
		go func() {
			code, body := srv.get("run-m", cursor)
			out <- answer{code, body}
		}()
		return out
	}

	// Cursor 4 while the copy holds 2: the frames arrive after the request.
	got := get("4")
	<-src.opened
	appendFrames(3, 6)
	m.End(6)
	a := <-got
	if a.code != http.StatusOK || strings.Contains(a.body, "id: 4\n") || !strings.Contains(a.body, "id: 5\n") || !strings.Contains(a.body, "id: 6\n") {
		t.Fatalf("resume at 4 from a lagging copy: %d\n%s", a.code, a.body)
	}

	// The copy ended before the cursor: the cursor is unknown, without
	// waiting for SourceLag.
	got = get("9")
	<-src.opened
	if a := <-got; a.code != http.StatusNotFound {
		t.Fatalf("cursor beyond an ended copy: %d %s", a.code, a.body)
	}
}

// Past SourceLag, a cursor the copy of a live run never reached is unknown.
func TestEventsHandlerSourceLagBoundsTheWait(t *testing.T) {
	defer goleak.VerifyNone(t)
	m := subagentstream.NewMirror("th", "run-m", subagentstream.Options{})
	_ = m.Append(1, events.EventTypeRunStarted, []byte(`{"type":"RUN_STARTED","threadId":"th","runId":"run-m","timestamp":1}`))
	defer m.Stop()
	src := &mapSource{streams: map[string]*subagentstream.Stream{"run-m": m.Stream()}, owner: "alice"}
	hub := subagentstream.NewHub(delegation.NewMemoryBus(), subagentstream.HubOptions{Source: src, SourceLag: time.Millisecond})
	defer hub.Close()
	srv := serveEvents(hub)
	defer srv.close()
	if code, body := srv.get("run-m", "7"); code != http.StatusNotFound || !strings.Contains(body, "cursor_not_found") {
		t.Fatalf("got %d %s, want 404 cursor_not_found", code, body)
	}
}

// committedJournal is a ServingJournal that commits only a run's first
// keep frames and, at the run's end, aborts what it committed (as a
// cluster's journal does when its appends stop being acknowledged).
type committedJournal struct{ keep uint64 }

type committedRun struct {
	m    *subagentstream.Mirror
	keep uint64
}

func (j committedJournal) Begin(run subagentstream.JournalRun) subagentstream.RunJournal {
	return &committedRun{m: subagentstream.NewMirror(run.ThreadID, run.RunID, subagentstream.Options{}), keep: j.keep}
}

func (r *committedRun) Append(f *subagentstream.Frame) {
	if f.ID <= r.keep {
		_ = r.m.Append(f.ID, f.Type, f.Data)
	}
}

func (r *committedRun) End(bool) { r.m.Abort("host_lost", "the journal stopped committing") }

func (r *committedRun) Served() *subagentstream.Stream { return r.m.Stream() }

// With a ServingJournal, a client that reconnects to a run of this hub is
// served what the journal committed, as the run's first client is, not the
// merged stream (docs/design.md#scale-out).
func TestEventsHandlerServesWhatTheJournalCommitted(t *testing.T) {
	defer goleak.VerifyNone(t)
	hub, st, a, p := openStream(t, subagentstream.HubOptions{Journal: committedJournal{keep: 3}})
	defer hub.Close()
	srv := serveEvents(hub)
	defer srv.close()
	p.send(delegation.DelegationStarted)
	p.send(delegation.DelegationFinished)
	a.release(t, "go")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := hub.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	first := strings.Join(labels(subscribeAll(t, st, 0)), ",")
	if !strings.HasSuffix(first, "RUN_ERROR") {
		t.Fatalf("the run's first client got %s, want the journal's stream", first)
	}
	code, body := srv.get("run-r", "0")
	if code != http.StatusOK || strings.Contains(body, "RUN_FINISHED") || !strings.Contains(body, "host_lost") {
		t.Fatalf("a reconnecting client got %d:\n%s\nwant what the journal committed", code, body)
	}
}
