package delegator_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"

	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
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

// The objective is the model's text, and a model may paste a credential
// into it: the audit keeps it redacted in every copy — the memory record
// while the delegation runs and after it ended, both JSONL lines (begin
// and end) and GET /agui/runs/{runId}/delegations (docs/design.md#secrets,
// docs/design.md#guarantees 11).
func TestAuditRecordsRedactTheObjective(t *testing.T) {
	dt.CheckLeaks(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	store, err := audit.OpenFile(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv := dt.StreamingFake(t, fakeWorkingThenRelease()...)
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv)}, func(c *env.Config) { c.Audit = store })
	rec := e.Record(t, "run-obj")
	objective := "log in with the key " + dt.SecretToken + " and list the repositories"
	done := make(chan delegation.Result, 1)
	go func() {
		done <- e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-obj", Agent: "research", Objective: objective})
	}()
	working := rec.WaitKind(t, delegation.DelegationStatus, "working")

	// While it runs: the record written by Begin.
	running := store.ListRun("run-obj")
	if len(running) != 1 || running[0].Status != audit.StatusRunning {
		t.Fatalf("records while running: %+v", running)
	}
	checkObjective := func(what, got string) {
		t.Helper()
		dt.NoSecret(t, what, got)
		if !strings.Contains(got, "[REDACTED]") || !strings.Contains(got, "list the repositories") {
			t.Errorf("%s: objective %q, want it kept with the secret redacted", what, got)
		}
	}
	checkObjective("memory record while running", running[0].Objective)

	srv.Release(a2a.TaskID(working.RemoteTaskID))
	res := <-done
	if res.Status != delegation.StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	ended := store.ListRun("run-obj")
	if len(ended) != 1 || ended[0].Status != delegation.StatusCompleted {
		t.Fatalf("records after the end: %+v", ended)
	}
	checkObjective("memory record after the end", ended[0].Objective)
	dt.NoSecret(t, "audit records", ended)
	dt.NoSecret(t, "tool result", res)

	// JSONL: the begin line and the end line.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d JSONL lines, want 2 (begin, end)", len(lines))
	}
	for i, line := range lines {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("JSONL line %d: %v", i, err)
		}
		checkObjective(fmt.Sprintf("JSONL line %d", i+1), r.Objective)
		dt.NoSecret(t, "JSONL", line)
	}

	// GET /agui/runs/{runId}/delegations.
	h := httptest.NewServer(audit.Handler(e.D.Audit()))
	defer h.Close()
	defer h.Client().CloseIdleConnections()
	resp, err := h.Client().Get(h.URL + "/agui/runs/run-obj/delegations")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var list []audit.Record
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list) != 1 {
		t.Fatalf("GET: %d %s", resp.StatusCode, body)
	}
	checkObjective("GET /delegations", list[0].Objective)
	dt.NoSecret(t, "GET /delegations", string(body))
}
