package audit_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
)

// A record names its run twice on the wire: run_id is the client's id
// (ClientRunID, or RunID when the host did not name it) and sdk_run_id
// the SDK's; a file written before sdk_run_id existed (run_id then held
// the SDK's id) still reads back, keyed by that id.
func TestRecordRunIDsOnTheWire(t *testing.T) {
	for _, tt := range []struct {
		rec  audit.Record
		want string
	}{
		{audit.Record{DelegationID: "d1", ClientRunID: "run-client", RunID: "run-sdk", Status: "completed"}, `{"delegation_id":"d1","run_id":"run-client","sdk_run_id":"run-sdk",`},
		{audit.Record{DelegationID: "d2", RunID: "run-sdk", Status: "completed"}, `{"delegation_id":"d2","run_id":"run-sdk","sdk_run_id":"run-sdk",`},
	} {
		b, err := json.Marshal(tt.rec)
		if err != nil || !strings.HasPrefix(string(b), tt.want) {
			t.Fatalf("%s (%v), want it to begin %s", b, err, tt.want)
		}
		var back audit.Record
		if err := json.Unmarshal(b, &back); err != nil || back.RunID != tt.rec.RunID || back.ClientRunID != tt.rec.ClientRunID && tt.rec.ClientRunID != "" {
			t.Fatalf("read back %+v (%v), want %+v", back, err, tt.rec)
		}
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	old := `{"delegation_id":"d-old","run_id":"run-7f3a","agent_key":"research","protocol":"a2a","status":"completed","started_at":"2026-01-02T03:04:05Z"}` + "\n" +
		`{"delegation_id":"d-new","run_id":"r1","sdk_run_id":"run-9b2c","agent_key":"research","protocol":"a2a","status":"completed","started_at":"2026-01-02T03:04:05Z"}` + "\n"
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := audit.OpenFile(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if recs := store.ListRun("run-7f3a"); len(recs) != 1 || recs[0].DelegationID != "d-old" || recs[0].ClientRunID != "" {
		t.Errorf("the older record by its SDK id: %+v", recs)
	}
	if recs := store.ListRun("run-9b2c"); len(recs) != 1 || recs[0].DelegationID != "d-new" || recs[0].ClientRunID != "r1" {
		t.Errorf("the newer record by its SDK id: %+v", recs)
	}
}
