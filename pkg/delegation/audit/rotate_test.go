package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor/pkg/delegation"
)

// checkWholeLines fails unless every line of path is a whole record and
// the file ends with a line break; it returns the delegation ids in it.
func checkWholeLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("%s does not end with a whole record", filepath.Base(path))
	}
	var ids []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.DelegationID == "" {
			t.Errorf("%s holds a split record: %.60q", filepath.Base(path), sc.Text())
			continue
		}
		ids = append(ids, r.DelegationID)
	}
	return ids
}

// Records written across several rotations (several within one
// millisecond, too) are all read back after a restart, each in its last
// state; no record is split across files.
func TestFileRotationLosesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	opts := Options{MaxFileBytes: 2048, MaxRecords: 10000}
	f, err := OpenFile(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	objective := strings.Repeat("x", 300)
	const n = 60
	for i := range n {
		id := fmt.Sprintf("d%03d", i)
		f.Begin(Record{DelegationID: id, RunID: "r", Objective: objective})
		if i%2 == 0 { // the odd ones were still running when the host stopped
			f.End(Record{DelegationID: id, RunID: "r", Objective: objective, Status: delegation.StatusCompleted})
		}
		if f.Err() != nil {
			t.Fatal(f.Err())
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	rotated, err := rotatedFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rotated) < 5 {
		t.Fatalf("%d rotated files, want several", len(rotated))
	}
	lines := 0
	for _, p := range append(rotated, path) {
		if fi, err := os.Stat(p); err != nil || fi.Size() > 2048 {
			t.Errorf("%s: %v bytes, bound 2048 (%v)", filepath.Base(p), fi.Size(), err)
		}
		lines += len(checkWholeLines(t, p))
	}
	if lines != n+n/2 {
		t.Errorf("%d lines in all files, want %d", lines, n+n/2)
	}

	g, err := OpenFile(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	recs := g.ListRun("r")
	if len(recs) != n {
		t.Fatalf("%d records read back, want %d", len(recs), n)
	}
	for _, r := range recs {
		var i int
		fmt.Sscanf(r.DelegationID, "d%03d", &i)
		want := StatusRunning
		if i%2 == 0 {
			want = delegation.StatusCompleted
		}
		if r.Status != want {
			t.Errorf("%s: status %s, want %s", r.DelegationID, r.Status, want)
		}
	}
	// The reopened store appends to the same file and keeps rotating.
	g.Begin(Record{DelegationID: "after", RunID: "r2", Objective: objective})
	if g.Err() != nil || len(g.ListRun("r2")) != 1 {
		t.Fatal(g.Err())
	}
}

// MaxFiles keeps that many rotated files; older ones are deleted (by the
// rotation library, shortly after a rotation).
func TestFileRotationKeepsMaxFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := OpenFile(path, Options{MaxFileBytes: 1024, MaxFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 30 {
		f.Begin(Record{DelegationID: fmt.Sprintf("d%d", i), RunID: "r", Objective: strings.Repeat("y", 400)})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		rotated, err := rotatedFiles(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(rotated) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rotated files kept, want 2", len(rotated))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Without MaxFileBytes the file never rotates.
func TestFileWithoutRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := OpenFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		f.Begin(Record{DelegationID: fmt.Sprintf("d%d", i), RunID: "r", Objective: strings.Repeat("y", 400)})
	}
	f.Close()
	if rotated, _ := rotatedFiles(path); len(rotated) != 0 {
		t.Fatalf("rotated %v", rotated)
	}
	if ids := checkWholeLines(t, path); len(ids) != 30 {
		t.Fatalf("%d records", len(ids))
	}
}
