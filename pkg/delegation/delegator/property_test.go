package delegator_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	env "github.com/seed0634/agentadaptor/internal/testkit/delegationenv"
	dt "github.com/seed0634/agentadaptor/internal/testkit/delegationtest"
	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/delegator"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"

	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
)

// randomBehavior builds a random remote script. Remote text sometimes
// echoes the secret, to check redaction.
func randomBehavior(rng *rand.Rand) (fakea2a.Behavior, string) {
	word := func() string {
		if rng.Intn(5) == 0 {
			return "token=" + dt.SecretToken
		}
		return []string{"alpha", "beta", "gamma", "delta"}[rng.Intn(4)]
	}
	var steps []any
	var desc []string
	for i, n := 0, rng.Intn(5); i < n; i++ {
		switch rng.Intn(5) {
		case 0:
			steps = append(steps, fakea2a.Working(word()))
			desc = append(desc, "working")
		case 1:
			steps = append(steps, fakea2a.TextChunks(word()+" ", word()+" ", word()))
			desc = append(desc, "text")
		case 2:
			steps = append(steps, dt.TextArtifact(fmt.Sprintf("a%d.txt", i), "text/plain", word()))
			desc = append(desc, "artifact")
		case 3:
			steps = append(steps, fakea2a.Working(word()), fakea2a.Duplicate())
			desc = append(desc, "dup")
		case 4:
			steps = append(steps, fakea2a.Working("before cut"), fakea2a.DropStream(), fakea2a.AwaitSubscribe())
			desc = append(desc, "drop")
		}
	}
	switch rng.Intn(6) {
	case 0, 1:
		steps = append(steps, fakea2a.Completed(word()))
		desc = append(desc, "completed")
	case 2:
		steps = append(steps, fakea2a.Failed(word()))
		desc = append(desc, "failed")
	case 3:
		steps = append(steps, fakea2a.Rejected(word()))
		desc = append(desc, "rejected")
	case 4:
		steps = append(steps, fakea2a.InputRequired(word()), fakea2a.Completed("never"))
		desc = append(desc, "input")
	case 5:
		steps = append(steps, fakea2a.Hang())
		desc = append(desc, "hang")
	}
	return fakea2a.Script(fakea2a.Steps(steps...)...), strings.Join(desc, ",")
}

// TestPropertyLifecycleAndSecrets: over random remote behaviors (fixed
// seed), run concurrent delegations through the real delegator and check
// for every delegation: subagent.started is its first event, exactly one
// terminal event follows, per-message text deltas arrive in order, and the
// configured secret appears in no event, tool result, log line or audit record.
func TestPropertyLifecycleAndSecrets(t *testing.T) {
	dt.CheckLeaks(t)
	rng := rand.New(rand.NewSource(20260101))
	const n = 24
	behaviors := map[string]fakea2a.Behavior{}
	descs := map[string]string{}
	for i := range n {
		obj := fmt.Sprintf("case-%d", i)
		behaviors[obj], descs[obj] = randomBehavior(rng)
	}
	srv := dt.Fake(t, fakea2a.Options{Streaming: true, Choose: fakea2a.ByText(behaviors, fakea2a.Script(fakea2a.Completed("default")))})
	e := env.NewEnv(t, []registry.RemoteAgentSpec{dt.SpecFor("research", srv, func(s *registry.RemoteAgentSpec) {
		s.Policy.MaxTimeout = time.Second
		s.Policy.MaxConcurrentPerRun = n
		s.Policy.AuditLevel = registry.AuditFull
	})})
	rec := e.Record(t, "run-prop")
	var wg sync.WaitGroup
	results := make([]delegation.Result, n)
	for i := range n {
		wg.Go(func() {
			results[i] = e.D.Delegate(dt.Ctx(t), delegator.Request{RunID: "run-prop", Agent: "research", Objective: fmt.Sprintf("case-%d", i)})
		})
	}
	wg.Wait()
	evs := rec.WaitTerminals(t, n)
	dt.CheckLifecycle(t, evs)
	byDel := map[string]int{}
	for _, ev := range evs {
		if ev.Kind.Terminal() {
			byDel[ev.DelegationID]++
		}
	}
	for i, r := range results {
		if byDel[r.DelegationID] != 1 || r.Status == "" {
			t.Errorf("case-%d (%s): %d terminal events, result %+v", i, descs[fmt.Sprintf("case-%d", i)], byDel[r.DelegationID], r)
		}
		b, _ := json.Marshal(r)
		dt.NoSecret(t, "tool result", string(b))
	}
	dt.NoSecret(t, "events", evs)
	dt.NoSecret(t, "audit", e.D.Audit().ListRun("run-prop"))
	dt.NoSecret(t, "logs", e.Logs.String())
}
