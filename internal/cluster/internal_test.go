package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/seed0634/agentadaptor/internal/testkit/natstest"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/artifact"
	"github.com/seed0634/agentadaptor/pkg/delegation/audit"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"go.uber.org/goleak"
)

// Any id becomes one subject token and KV key segment; distinct ids stay
// distinct.
func TestToken(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9_=-]+$`)
	seen := map[string]string{}
	for _, id := range []string{"", "run-1", "a.b", "a b", "a*b>c", "日本", strings.Repeat("x", 96), strings.Repeat("x", 97), strings.Repeat("y", 5000), "_", "="} {
		tk := token(id)
		if !valid.MatchString(tk) || len(tk) > 130 {
			t.Errorf("token(%q) = %q", id, tk)
		}
		if other, dup := seen[tk]; dup {
			t.Errorf("token(%q) = token(%q)", id, other)
		}
		seen[tk] = id
	}
}

func TestRedactURL(t *testing.T) {
	if got := redactURL("nats://u:p@a:4222,nats://b:4222"); got != "nats://***@a:4222,nats://b:4222" {
		t.Fatal(got)
	}
}

// An audit record larger than a NATS message keeps its critical events.
func TestFitRecord(t *testing.T) {
	rec := audit.Record{DelegationID: "d", RunID: "r"}
	for i := range 3000 {
		kind := delegation.DelegationStatus
		if i == 2999 {
			kind = delegation.DelegationFinished
		}
		rec.Events = append(rec.Events, audit.Event{Kind: kind, Text: strings.Repeat("z", 500)})
	}
	data, err := fitRecord(rec)
	if err != nil || len(data) > maxRecordBytes {
		t.Fatalf("%d bytes, %v", len(data), err)
	}
	var got audit.Record
	_ = json.Unmarshal(data, &got)
	if len(got.Events) != 1 || got.Events[0].Kind != delegation.DelegationFinished {
		t.Fatalf("events %v", len(got.Events))
	}
}

// NATS credentials come by reference, as a .creds file's content.
func TestCredsOption(t *testing.T) {
	kp, _ := nkeys.CreateUser()
	seed, _ := kp.Seed()
	creds := "-----BEGIN NATS USER JWT-----\neyJhbGciOiJlZDI1NTE5In0.e30.sig\n------END NATS USER JWT------\n\n" +
		"-----BEGIN USER NKEY SEED-----\n" + string(seed) + "\n------END USER NKEY SEED------\n"
	t.Setenv("NATS_CREDS", creds)
	if _, err := credsOption("env:NATS_CREDS"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NATS_CREDS", "not creds")
	_, err := credsOption("env:NATS_CREDS")
	if err == nil || strings.Contains(err.Error(), "not creds") {
		t.Fatalf("bad creds: %v", err)
	}
	if _, err := credsOption("env:NATS_CREDS_MISSING"); err == nil {
		t.Fatal("a missing variable must fail")
	}
}

func newCluster(t *testing.T, ns *natstest.Server, replica string) *Cluster {
	t.Helper()
	c, err := New(context.Background(), Config{URL: ns.URL(), CredsRef: ns.CredsRef(), Replica: replica, Lease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// The shared stores: audit records (begin, task named, end), artifacts
// and thread contexts written on one replica are read on another.
func TestSharedStores(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ns := natstest.New(t)
	a, b := newCluster(t, ns, "a"), newCluster(t, ns, "b")
	ctx := context.Background()

	a.Audit().Begin(audit.Record{DelegationID: "d1", RunID: "run-1", AgentKey: "research", StartedAt: time.Now()})
	a.Audit().Event("d1", audit.Event{Kind: delegation.DelegationStatus, RemoteTaskID: "task-1"})
	waitUntil(t, func() bool {
		recs := b.Audit().ListRun("run-1")
		return len(recs) == 1 && recs[0].RemoteTaskID == "task-1" && recs[0].Status == audit.StatusRunning
	})
	a.Audit().End(audit.Record{DelegationID: "d1", RunID: "run-1", AgentKey: "research", Status: "completed", EndedAt: time.Now()})
	waitUntil(t, func() bool {
		recs := b.Audit().ListRun("run-1")
		return len(recs) == 1 && recs[0].Status == "completed" && len(recs[0].Events) == 1
	})
	if recs := b.Audit().ListRun("run-2"); len(recs) != 0 {
		t.Fatalf("another run: %v", recs)
	}

	if err := a.Artifacts().Put(ctx, artifact.Stored{RunID: "run-1", DelegationID: "d1", ID: "x.md", Name: "x.md", MimeType: "text/markdown", Content: []byte("# X")}); err != nil {
		t.Fatal(err)
	}
	got, err := b.Artifacts().Get(ctx, "run-1", "d1", "x.md")
	if err != nil || string(got.Content) != "# X" || got.MimeType != "text/markdown" || got.Name != "x.md" {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := b.Artifacts().Get(ctx, "run-2", "d1", "x.md"); err != artifact.ErrNotFound {
		t.Fatalf("another run's artifact: %v", err)
	}

	ca, cb := a.Contexts(), b.Contexts()
	ca.Put(ctx, delegator.ContextKey{Thread: "alice/t-1", Agent: "research"}, "ctx-1")
	if id, ok := cb.Get(ctx, delegator.ContextKey{Thread: "alice/t-1", Agent: "research"}); !ok || id != "ctx-1" {
		t.Fatalf("thread context on b: %q %v", id, ok)
	}
	ca.Put(ctx, delegator.ContextKey{Run: "run-1", Agent: "research"}, "ctx-r")
	if _, ok := cb.Get(ctx, delegator.ContextKey{Run: "run-1", Agent: "research"}); ok {
		t.Fatal("a per-run context must stay on its replica")
	}
}

// settle returns once the audit writes queued before it are in the bucket.
func TestAuditSettle(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ns := natstest.New(t)
	a := newCluster(t, ns, "a")
	for i := range 50 {
		a.Audit().Begin(audit.Record{DelegationID: fmt.Sprintf("d%d", i), RunID: "run-1", StartedAt: time.Now()})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.audit.settle(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := a.auditKV.Get(ctx, auditKey("run-1", fmt.Sprintf("d%d", i))); err != nil {
			t.Fatalf("record %d after settle: %v", i, err)
		}
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
