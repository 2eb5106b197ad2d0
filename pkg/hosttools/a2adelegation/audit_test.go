package a2adelegation

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

	"github.com/seed0634/agentadaptor/internal/fakea2a"
)

func TestAuditRecordsAndServesDelegations(t *testing.T) {
	checkLeaks(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	audit, err := NewMemoryAudit(path)
	if err != nil {
		t.Fatal(err)
	}
	defer audit.Close()
	srv := streamingFake(t, fakea2a.Working("echo "+secretToken), fakea2a.TextChunks("leak? "+secretToken), fakea2a.Failed("bad token "+secretToken))
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv, func(s *RemoteAgentSpec) { s.Policy.AuditLevel = AuditFull; s.Tenant = "acme" })},
		func(c *Config) { c.Audit = audit })
	rec := e.record(t, "run-au")
	res := e.svc.Delegate(tctx(t), Request{RunID: "run-au", ParentToolCallID: "toolu-9", Agent: "research", Objective: "audit me"})
	evs := rec.waitTerminals(t, 1)
	recs := audit.ListRun("run-au")
	if len(recs) != 1 {
		t.Fatalf("records %+v", recs)
	}
	r := recs[0]
	if r.DelegationID != res.DelegationID || r.RunID != "run-au" || r.ParentToolCallID != "toolu-9" || r.AgentKey != "research" || r.Protocol != "a2a" ||
		r.RemoteTaskID == "" || r.RemoteContextID == "" || r.CardFingerprint == "" || r.Status != StatusFailed || r.Result == nil ||
		r.EndedAt.IsZero() || r.Tenant != "acme" || len(r.Events) < 3 {
		t.Errorf("record %+v", r)
	}
	// The remote echoed the credential: it is redacted everywhere.
	noSecret(t, "audit record", recs)
	noSecret(t, "events", evs)
	noSecret(t, "result", res)
	noSecret(t, "logs", e.logs.String())
	if !strings.Contains(res.Error.Message, redactedMark) {
		t.Errorf("echoed secret not visibly redacted: %q", res.Error.Message)
	}
	// JSONL: one line per completed delegation.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	lines := 0
	for sc.Scan() {
		var line AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil || line.DelegationID != res.DelegationID {
			t.Errorf("line %q: %v", sc.Text(), err)
		}
		noSecret(t, "jsonl", sc.Text())
		lines++
	}
	if lines != 1 {
		t.Errorf("%d JSONL lines", lines)
	}
	// HTTP.
	h := httptest.NewServer(e.svc.AuditHandler())
	defer h.Close()
	defer h.Client().CloseIdleConnections()
	resp, err := h.Client().Get(h.URL + "/agui/runs/run-au/delegations")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var list []AuditRecord
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list) != 1 || list[0].DelegationID != res.DelegationID {
		t.Errorf("GET: %d %s", resp.StatusCode, body)
	}
	noSecret(t, "audit HTTP", string(body))
	if strings.Contains(string(body), "env:"+secretEnv) {
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
