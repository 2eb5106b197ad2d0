package a2adelegation

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/seed0634/agentadaptor/internal/fakea2a"
)

// randomBehavior builds a random remote script. Remote text sometimes
// echoes the secret, to check redaction.
func randomBehavior(rng *rand.Rand) (fakea2a.Behavior, string) {
	word := func() string {
		if rng.Intn(5) == 0 {
			return "token=" + secretToken
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
			steps = append(steps, textArtifact(fmt.Sprintf("a%d.txt", i), "text/plain", word()))
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
	checkLeaks(t)
	rng := rand.New(rand.NewSource(20260101))
	const n = 24
	behaviors := map[string]fakea2a.Behavior{}
	descs := map[string]string{}
	for i := 0; i < n; i++ {
		obj := fmt.Sprintf("case-%d", i)
		behaviors[obj], descs[obj] = randomBehavior(rng)
	}
	srv := fake(t, fakea2a.Options{Streaming: true, Choose: fakea2a.ByText(behaviors, fakea2a.Script(fakea2a.Completed("default")))})
	e := newEnv(t, []RemoteAgentSpec{specFor("research", srv, func(s *RemoteAgentSpec) {
		s.Policy.MaxTimeout = time.Second
		s.Policy.MaxConcurrentPerRun = n
		s.Policy.AuditLevel = AuditFull
	})})
	rec := e.record(t, "run-prop")
	var wg sync.WaitGroup
	results := make([]Result, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.svc.Delegate(tctx(t), Request{RunID: "run-prop", Agent: "research", Objective: fmt.Sprintf("case-%d", i)})
		}()
	}
	wg.Wait()
	evs := rec.waitTerminals(t, n)
	checkLifecycle(t, evs)
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
		b, _ := json.Marshal(toolResult(r))
		noSecret(t, "tool result", string(b))
	}
	noSecret(t, "events", evs)
	noSecret(t, "audit", e.svc.Audit().ListRun("run-prop"))
	noSecret(t, "logs", e.logs.String())
}

// TestPropertyMapperOneTerminal: random A2A event sequences (including
// duplicates, events after terminal, malformed ones) never yield more than
// one terminal, and started-first is the delegator's job (checked above).
func TestPropertyMapperOneTerminal(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	states := []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateInputRequired, a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected, "bogus"}
	for iter := 0; iter < 500; iter++ {
		m := newMapper(mapperConfig{streamText: rng.Intn(2) == 0, allowInput: rng.Intn(2) == 0, put: NewMemoryArtifactStore(0).putBG, runID: "r", delegationID: "d"})
		terminals := 0
		texts := map[string]string{}
		sent := map[string]string{}
		for i, k := 0, rng.Intn(30); i < k; i++ {
			var evs []DelegationEvent
			switch rng.Intn(3) {
			case 0:
				evs = m.Map(status(states[rng.Intn(len(states))], fmt.Sprint("s", rng.Intn(3))))
			case 1:
				id := fmt.Sprint("msg-", rng.Intn(2))
				d := fmt.Sprint("<", i, ">")
				ap := sent[id] != ""
				sent[id] += d
				evs = m.Map(chunk(ArtifactAssistantOutput, id, d, ap, rng.Intn(4) == 0))
			default:
				evs = m.Map(chunk(fmt.Sprint("file-", rng.Intn(3)), fmt.Sprint("f", rng.Intn(3)), "data", rng.Intn(2) == 0, rng.Intn(2) == 0))
			}
			for _, ev := range evs {
				if ev.Kind.Terminal() {
					terminals++
				}
				if ev.Kind == DelegationTextDelta {
					texts[ev.RemoteMessageID] += ev.Delta
				}
			}
		}
		for _, ev := range m.finish(DelegationFailed, &DelegationError{Code: CodeRemoteFailed}) {
			if ev.Kind.Terminal() {
				terminals++
			}
		}
		if terminals != 1 {
			t.Fatalf("iteration %d: %d terminal events", iter, terminals)
		}
		for id, got := range texts {
			if !strings.HasPrefix(sent[strings.TrimPrefix(id, "")], got) {
				t.Fatalf("iteration %d: text of %s out of order: %q vs sent %q", iter, id, got, sent[id])
			}
		}
	}
}
