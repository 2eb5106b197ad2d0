package host_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/internal/hostconfig"
)

// demoRunBody is a demo chat turn: the demo parent delegates the message to
// the research agent, which streams an answer about it and attaches notes
// that quote it.
func demoRunBody(runID, message string) string {
	b, _ := json.Marshal(map[string]any{
		"threadId": "t-" + runID, "runId": runID,
		"messages": []map[string]string{{"id": "u1", "role": "user", "content": message}},
		"tools":    []any{}, "context": []any{}, "state": map[string]any{}, "forwardedProps": map[string]any{},
	})
	return string(b)
}

// demoRun is what a demo turn's stream showed: its runId, its delegation
// and its artifact's id.
type demoRun struct{ runID, delegationID, artifactID string }

func readDemoRun(t *testing.T, stream string) demoRun {
	t.Helper()
	var r demoRun
	for l := range strings.SplitSeq(stream, "\n") {
		data, ok := strings.CutPrefix(l, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type, RunID, Name string
			Value             struct {
				DelegationID string
				Artifact     struct{ ID string }
			}
		}
		_ = json.Unmarshal([]byte(data), &ev)
		if ev.Type == "RUN_STARTED" {
			r.runID = ev.RunID
		}
		if ev.Value.DelegationID != "" {
			r.delegationID = ev.Value.DelegationID
		}
		if ev.Name == "subagent.artifact" {
			r.artifactID = ev.Value.Artifact.ID
		}
	}
	if r.delegationID == "" || r.artifactID == "" || !strings.Contains(stream, "RUN_FINISHED") {
		t.Fatalf("the demo turn did not delegate and finish:\n%s", stream)
	}
	return r
}

// runIds are namespaced per principal (docs/design.md#secrets): bob may use
// the runId alice holds for a run of his own — no 409, no existence oracle —
// while each of them still gets 409 for their own; and every route (events,
// cancel, delegations, artifacts, input) resolves the runId within the
// caller's namespace, so each sees only their own run under it. The wire is
// unchanged: RUN_STARTED carries the client's runId.
func TestRunIDsAreNamespacedPerPrincipal(t *testing.T) {
	t.Setenv("ALICE_TOKEN", "alice-token-0123456789abcdef")
	t.Setenv("BOB_TOKEN", "bob-token-0123456789abcdefgh")
	cfg := &hostconfig.Config{Auth: hostconfig.Auth{Tokens: []hostconfig.Token{
		{Name: "alice", TokenRef: "env:ALICE_TOKEN"}, {Name: "bob", TokenRef: "env:BOB_TOKEN"}}}}
	_, srv := newHost(t, cfg)
	alice := map[string]string{"Authorization": "Bearer alice-token-0123456789abcdef", "Content-Type": "application/json"}
	bob := map[string]string{"Authorization": "Bearer bob-token-0123456789abcdefgh", "Content-Type": "application/json"}

	code, _, body := request(t, nil, "POST", srv.URL+"/agui", demoRunBody("same", "alice asks about otters"), alice)
	if code != 200 {
		t.Fatalf("alice's run: %d %s", code, body)
	}
	a := readDemoRun(t, body)
	code, _, body = request(t, nil, "POST", srv.URL+"/agui", demoRunBody("same", "bob asks about badgers"), bob)
	if code != 200 {
		t.Fatalf("bob's run with the runId alice holds: %d %s (another principal's runId must neither be visible nor blocking)", code, body)
	}
	b := readDemoRun(t, body)
	if a.runID != "same" || b.runID != "same" {
		t.Fatalf("RUN_STARTED runIds %q and %q, want the clients' own runId", a.runID, b.runID)
	}
	for who, hdr := range map[string]map[string]string{"alice": alice, "bob": bob} {
		if code, _, body := request(t, nil, "POST", srv.URL+"/agui", demoRunBody("same", "again"), hdr); code != http.StatusConflict {
			t.Errorf("%s reuses her own retained runId: %d %s, want 409", who, code, body)
		}
	}

	// Each follows, reads and downloads their own run under "same".
	for _, tt := range []struct {
		who        string
		hdr        map[string]string
		own, other demoRun
		mine, not  string
	}{
		{"alice", alice, a, b, "otters", "badgers"},
		{"bob", bob, b, a, "badgers", "otters"},
	} {
		_, _, events := request(t, nil, "GET", srv.URL+"/agui/runs/same/events", "", tt.hdr)
		if !strings.Contains(events, tt.mine) || strings.Contains(events, tt.not) {
			t.Errorf("%s's replay of run same is not her own run:\n%s", tt.who, events)
		}
		_, _, audit := request(t, nil, "GET", srv.URL+"/agui/runs/same/delegations", "", tt.hdr)
		if !strings.Contains(audit, tt.own.delegationID) || strings.Contains(audit, tt.other.delegationID) {
			t.Errorf("%s's delegations of run same: %s", tt.who, audit)
		}
		art := "/agui/runs/same/delegations/" + tt.own.delegationID + "/artifacts/" + tt.own.artifactID
		if code, _, body := request(t, nil, "GET", srv.URL+art, "", tt.hdr); code != 200 || !strings.Contains(body, tt.mine) {
			t.Errorf("%s's artifact: %d %s", tt.who, code, body)
		}
		art = "/agui/runs/same/delegations/" + tt.other.delegationID + "/artifacts/" + tt.other.artifactID
		if code, _, body := request(t, nil, "GET", srv.URL+art, "", tt.hdr); code != 404 {
			t.Errorf("%s downloads the other's artifact through her own runId: %d %s", tt.who, code, body)
		}
		input := "/agui/runs/same/delegations/" + tt.other.delegationID + "/input"
		if code, _, body := request(t, nil, "POST", srv.URL+input, `{"text":"x"}`, tt.hdr); code != 404 {
			t.Errorf("%s answers the other's delegation through her own runId: %d %s", tt.who, code, body)
		}
	}

	// Cancel resolves the runId in the caller's namespace too: bob's cancel
	// of "live" ends bob's run, never alice's run of the same runId.
	ctx := t.Context()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/agui", strings.NewReader(demoRunBody("live", "alice keeps going")))
	for k, v := range alice {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	aliceStream := bufio.NewReader(resp.Body)
	for { // alice's run is active once it has started
		line, err := aliceStream.ReadString('\n')
		if err != nil {
			t.Fatalf("alice's live run: %v", err)
		}
		if strings.Contains(line, "RUN_STARTED") {
			break
		}
	}
	if code, _, body := request(t, nil, "POST", srv.URL+"/agui/runs/live/cancel", "", bob); code != 404 {
		t.Fatalf("bob cancels a runId he has no run of: %d %s", code, body)
	}
	bctx := t.Context()
	breq, _ := http.NewRequestWithContext(bctx, "POST", srv.URL+"/agui", strings.NewReader(demoRunBody("live", "bob stops early")))
	for k, v := range bob {
		breq.Header.Set(k, v)
	}
	bresp, err := http.DefaultClient.Do(breq)
	if err != nil {
		t.Fatal(err)
	}
	defer bresp.Body.Close()
	if bresp.StatusCode != 200 {
		t.Fatalf("bob's run with the runId of alice's active run: %d", bresp.StatusCode)
	}
	bobStream := bufio.NewReader(bresp.Body)
	if line, err := bobStream.ReadString('\n'); err != nil || !strings.Contains(line, "id:") {
		t.Fatalf("bob's live run: %q %v", line, err)
	}
	if code, _, body := request(t, nil, "POST", srv.URL+"/agui/runs/live/cancel", "", bob); code != 200 {
		t.Fatalf("bob cancels his own run: %d %s", code, body)
	}
	rest := readRest(t, bobStream)
	if !strings.Contains(rest, `"code":"cancelled"`) {
		t.Errorf("bob's run did not end cancelled:\n%s", rest)
	}
	rest = readRest(t, aliceStream)
	if !strings.Contains(rest, "RUN_FINISHED") || strings.Contains(rest, `"code":"cancelled"`) {
		t.Errorf("alice's run of the same runId was touched by bob's cancel:\n%s", rest)
	}
}

func readRest(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	_, _ = r.WriteTo(&b)
	return b.String()
}
