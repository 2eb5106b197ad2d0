package audit

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/pkg/delegation"
)

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func TestMemoryIsBoundedByCountAndAge(t *testing.T) {
	c := &clock{now: time.Unix(1_000_000, 0)}
	m := NewMemory(Options{MaxRecords: 3, MaxAge: time.Hour, Clock: c.Now})
	m.Begin(Record{DelegationID: "running", RunID: "r1", StartedAt: c.now})
	for _, id := range []string{"a", "b", "c"} {
		m.Begin(Record{DelegationID: id, RunID: "r1", StartedAt: c.now})
		m.End(Record{DelegationID: id, RunID: "r1", Status: delegation.StatusCompleted, EndedAt: c.now})
	}
	// Four records, bound three: the oldest finished one goes, never the running one.
	if got := ids(m.ListRun("r1")); got != "running b c" {
		t.Fatalf("after the count bound: %q", got)
	}
	c.now = c.now.Add(2 * time.Hour)
	if got := ids(m.ListRun("r1")); got != "running" {
		t.Fatalf("after the age bound: %q", got)
	}
	if m.Len() != 1 {
		t.Fatalf("Len = %d", m.Len())
	}
}

func TestMemoryKeepsEventsAcrossEndAndBoundsThem(t *testing.T) {
	m := NewMemory(Options{})
	m.Begin(Record{DelegationID: "d", RunID: "r"})
	for range MaxEvents + 5 {
		m.Event("d", Event{Kind: delegation.DelegationStatus})
	}
	m.Event("d", Event{Kind: delegation.DelegationFinished})
	m.Event("unknown", Event{Kind: delegation.DelegationStatus}) // ignored
	m.End(Record{DelegationID: "d", RunID: "r", Status: delegation.StatusCompleted})
	recs := m.ListRun("r")
	if len(recs) != 1 || len(recs[0].Events) != MaxEvents+1 || recs[0].Events[MaxEvents].Kind != delegation.DelegationFinished {
		t.Fatalf("events not bounded or the terminal lost: %d", len(recs[0].Events))
	}
	if recs[0].Status != delegation.StatusCompleted {
		t.Fatalf("status %q", recs[0].Status)
	}
}

// A File store writes a line when a delegation begins and when it ends,
// and a reopened store serves what the file holds: a delegation that was
// running when the process died stays visible as running.
func TestFileSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := OpenFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.Begin(Record{DelegationID: "done", RunID: "r"})
	f.Event("done", Event{Kind: delegation.DelegationFinished})
	f.End(Record{DelegationID: "done", RunID: "r", Status: delegation.StatusCompleted})
	f.Begin(Record{DelegationID: "inflight", RunID: "r"})
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), "\n"); n != 3 {
		t.Fatalf("%d lines, want begin+end+begin:\n%s", n, b)
	}
	g, err := OpenFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	recs := g.ListRun("r")
	if len(recs) != 2 || recs[0].Status != delegation.StatusCompleted || len(recs[0].Events) != 1 || recs[1].Status != StatusRunning {
		t.Fatalf("reloaded records: %+v", recs)
	}
	if g.Err() != nil {
		t.Fatal(g.Err())
	}
}

func TestFileReportsAFailingSink(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var logs strings.Builder
	f, err := OpenFile(path, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f.f.Close() // the sink breaks under the store
	f.Begin(Record{DelegationID: "d", RunID: "r"})
	f.End(Record{DelegationID: "d", RunID: "r", Status: delegation.StatusCompleted})
	if f.Err() == nil {
		t.Fatal("a failed write must be reported")
	}
	if n := strings.Count(logs.String(), "audit file write failed"); n != 1 {
		t.Fatalf("the failure is logged %d times, want once: %s", n, logs.String())
	}
	if len(f.ListRun("r")) != 1 {
		t.Fatal("the record must still be kept in memory")
	}
	var _ Checker = f
}

func TestHandler(t *testing.T) {
	m := NewMemory(Options{})
	m.Begin(Record{DelegationID: "d", RunID: "r", AgentKey: "research"})
	srv := httptest.NewServer(Handler(m))
	defer srv.Close()
	for path, want := range map[string]int{"/agui/runs/r/delegations": 1, "/agui/runs/other/delegations": 0} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var list []Record
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(list) != want || list == nil {
			t.Fatalf("GET %s: %d, %v, %d records", path, resp.StatusCode, err, len(list))
		}
	}
}

func ids(recs []Record) string {
	var out []string
	for _, r := range recs {
		out = append(out, r.DelegationID)
	}
	return strings.Join(out, " ")
}
