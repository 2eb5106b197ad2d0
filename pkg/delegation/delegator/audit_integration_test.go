package delegator_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	env "github.com/seed0634/agentadaptor/internal/delegationenv"

	dt "github.com/seed0634/agentadaptor/internal/delegationtest"
	"github.com/seed0634/agentadaptor/internal/fakea2a"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

func TestAuditRecordsAndServesDelegations(t *testing.T) {
	dt.CheckLeaks(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	store, err := audit.OpenFile(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv := dt.StreamingFake(t, fakea2a.Working("echo "+dt.SecretToken), fakea2a.TextChunks("leak? "+dt.SecretToken), fakea2a.Failed("bad token "+dt.SecretToken))
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) { s.Policy.AuditLevel = registry.AuditFull; s.Tenant = "acme" })},
		func(c *env.Config) { c.Audit = store })
	rec := e.Record(t, "run-au")
	res := e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-au", ParentToolCallID: "toolu-9", Agent: "research", Objective: "audit me"})
	evs := rec.WaitTerminals(t, 1)
	recs := store.ListRun("run-au")
	if len(recs) != 1 {
		t.Fatalf("records %+v", recs)
	}
	r := recs[0]
	if r.DelegationID != res.DelegationID || r.RunID != "run-au" || r.ParentToolCallID != "toolu-9" || r.AgentKey != "research" || r.Protocol != "a2a" ||
		r.RemoteTaskID == "" || r.RemoteContextID == "" || r.CardFingerprint == "" || r.Status != delegation.StatusFailed || r.Result == nil ||
		r.EndedAt.IsZero() || r.Tenant != "acme" || len(r.Events) < 3 {
		t.Errorf("record %+v", r)
	}
	// The remote echoed the credential: it is redacted everywhere.
	dt.NoSecret(t, "audit record", recs)
	dt.NoSecret(t, "events", evs)
	dt.NoSecret(t, "result", res)
	dt.NoSecret(t, "logs", e.Logs.String())
	if !strings.Contains(res.Error.Message, "[REDACTED]") {
		t.Errorf("echoed secret not visibly redacted: %q", res.Error.Message)
	}
	// JSONL: a line when the delegation began (running) and one when it ended.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	lines := 0
	for sc.Scan() {
		var line audit.Record
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil || line.DelegationID != res.DelegationID {
			t.Errorf("line %q: %v", sc.Text(), err)
		}
		dt.NoSecret(t, "jsonl", sc.Text())
		lines++
	}
	if lines != 2 {
		t.Errorf("%d JSONL lines, want 2 (begin, end)", lines)
	}
	// HTTP.
	h := httptest.NewServer(audit.Handler(e.D.Audit()))
	defer h.Close()
	defer h.Client().CloseIdleConnections()
	resp, err := h.Client().Get(h.URL + "/agui/runs/run-au/delegations")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var list []audit.Record
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list) != 1 || list[0].DelegationID != res.DelegationID {
		t.Errorf("GET: %d %s", resp.StatusCode, body)
	}
	dt.NoSecret(t, "audit HTTP", string(body))
	if strings.Contains(string(body), "env:"+dt.SecretEnv) {
		t.Error("auth ref in the audit")
	}
	resp, err = h.Client().Get(h.URL + "/agui/runs/nobody/delegations")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("empty run: %s", body)
	}
}
