package fakea2a_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"go.uber.org/goleak"

	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	"github.com/seed0634/agentadaptor/internal/testkit/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func sdkClient(t *testing.T, s *fakea2a.Server) *a2aclient.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	resp, err := hc.Get(s.CardURL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card a2a.AgentCard
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	c, err := a2aclient.NewFromCard(ctxT(t), &card, a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCardServed(t *testing.T) {
	s := fakea2a.New(t, fakea2a.Options{Name: "research", Streaming: true,
		Bindings:   []a2a.TransportProtocol{a2a.TransportProtocolHTTPJSON, a2a.TransportProtocolJSONRPC},
		CardMutate: func(m map[string]any) { m["x-extra"] = true }})
	var card map[string]any
	if err := json.Unmarshal(s.CardBytes(), &card); err != nil {
		t.Fatal(err)
	}
	ifs := card["supportedInterfaces"].([]any)
	if card["name"] != "research" || card["x-extra"] != true || len(ifs) != 2 ||
		ifs[0].(map[string]any)["url"] != s.URL()+"/rest" {
		t.Fatalf("card = %v", card)
	}
	legacy := fakea2a.New(t, fakea2a.Options{ProtocolVersion: "0.3"})
	if !strings.Contains(string(legacy.CardBytes()), `"protocolVersion": "0.3"`) {
		t.Fatalf("v0.3 card = %s", legacy.CardBytes())
	}
	raw := fakea2a.New(t, fakea2a.Options{CardBody: []byte("{oops")})
	resp, err := http.Get(raw.CardURL())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "{oops" {
		t.Fatalf("CardBody not served verbatim: %q", body)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestAuthAndRecording(t *testing.T) {
	s := fakea2a.New(t, fakea2a.Options{RequireToken: "tok", Behavior: fakea2a.Script(fakea2a.Completed("ok"))})
	post := func(auth string) int {
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/jsonrpc",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post(""); got != http.StatusUnauthorized {
		t.Fatalf("no token: %d", got)
	}
	if got := post("Bearer nope"); got != http.StatusForbidden {
		t.Fatalf("wrong token: %d", got)
	}
	if got := post("Bearer tok"); got != http.StatusOK {
		t.Fatalf("right token: %d", got)
	}
	http.DefaultClient.CloseIdleConnections()
	r := s.RequestsFor("GetTask")
	if len(r) != 3 || r[0].AuthStatus != 401 || r[1].AuthStatus != 403 || r[2].AuthStatus != 0 ||
		r[0].Authorization || !r[2].Authorization || r[2].TaskID != "x" {
		t.Fatalf("records = %+v", r)
	}
}

func TestTenantHistoryAndCancelMetadataRecorded(t *testing.T) {
	for _, b := range []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON} {
		t.Run(string(b), func(t *testing.T) {
			s := fakea2a.New(t, fakea2a.Options{Bindings: []a2a.TransportProtocol{b},
				Behavior: fakea2a.Script(fakea2a.Working("w"), fakea2a.Hang())})
			c := sdkClient(t, s)
			ctx := ctxT(t)
			res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{
				Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("go")),
				Config:  &a2a.SendMessageConfig{ReturnImmediately: true}})
			if err != nil {
				t.Fatal(err)
			}
			task := res.(*a2a.Task)
			h := 2
			if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID, Tenant: "acme", HistoryLength: &h}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID, Tenant: "acme", Metadata: map[string]any{"why": "test"}}); err != nil {
				t.Fatal(err)
			}
			g, cn := s.RequestsFor("GetTask"), s.RequestsFor("CancelTask")
			if len(g) != 1 || g[0].Tenant != "acme" || g[0].HistoryLength == nil || *g[0].HistoryLength != 2 {
				t.Fatalf("GetTask record %+v", g)
			}
			if len(cn) != 1 || cn[0].Tenant != "acme" {
				t.Fatalf("CancelTask record %+v", cn)
			}
			if b == a2a.TransportProtocolJSONRPC && cn[0].Metadata["why"] != "test" {
				t.Fatalf("cancel metadata not recorded: %+v", cn[0])
			}
			if s.RequestsFor("SendMessage")[0].MessageText != "go" || len(s.Tasks()) != 1 {
				t.Fatal("send not recorded")
			}
		})
	}
}

func TestRawStreamAndClose(t *testing.T) {
	s := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Behavior{RawStream: []string{
		fakea2a.RawTask("t", "c", a2a.TaskStateWorking),
		fakea2a.RawArtifact("t", "c", fakea2a.AssistantOutput, "hi", false, true),
		fakea2a.RawStatus("t", "c", a2a.TaskStateCompleted, "done"),
	}}})
	c := sdkClient(t, s)
	var n int
	for ev, err := range c.SendStreamingMessage(ctxT(t), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("go"))}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.TaskInfo().TaskID != "t" {
			t.Fatalf("event %T for %s", ev, ev.TaskInfo().TaskID)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("got %d events", n)
	}

	// Close returns even while a task hangs and a stream is open.
	h := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Script(fakea2a.Working("w"), fakea2a.Hang())})
	hc := sdkClient(t, h)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	for ev, err := range hc.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("go"))}) {
		if err != nil || ev == nil {
			t.Fatal(err)
		}
		break
	}
	done := make(chan struct{})
	go func() { h.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(testenv.WaitTimeout):
		t.Fatal("Close blocked on a hanging task")
	}
}
