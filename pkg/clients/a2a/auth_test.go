package a2a_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/internal/testkit/fakea2a"
	client "github.com/seed0634/agentadaptor/pkg/clients/a2a"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

const secretToken = "s3cr3t-T0KEN-value"

// TestAuthRefResolved checks that the client resolves Options.AuthRef
// through pkg/credentials (whose tests cover the reference rules, the
// credential and the transport): a reference that does not resolve is an
// error naming the field and wrapping the *credentials.RefError, before
// anything is fetched.
func TestAuthRefResolved(t *testing.T) {
	f := fakea2a.New(t, fakea2a.Options{Behavior: fakea2a.Script(fakea2a.Completed("ok"))})
	_, err := client.NewClient(testCtx(t), f.CardURL(), client.Options{AuthRef: "vault:secret/agent"})
	var re *credentials.RefError
	if !errors.As(err, &re) || !errors.Is(err, credentials.ErrInvalidRef) || re.Ref != "vault:secret/agent" ||
		!strings.HasPrefix(err.Error(), "a2a: Options.AuthRef: auth reference ") {
		t.Fatalf("want a wrapped *credentials.RefError, got %T %v", err, err)
	}
	if n := len(f.Requests()); n != 0 {
		t.Fatalf("the agent saw %d requests before the credential resolved", n)
	}
	t.Setenv("AA_TEST_TOKEN", secretToken)
	c := dial(t, f, client.Options{AuthRef: "env:AA_TEST_TOKEN"})
	if c.AuthScheme() != credentials.SchemeBearer || strings.Contains(fmt.Sprint(c), secretToken) {
		t.Fatalf("env ref: scheme %q", c.AuthScheme())
	}
}

func TestUnauthorized(t *testing.T) {
	cases := []struct {
		name   string
		token  string
		status int
	}{
		{"missing token", "", http.StatusUnauthorized},
		{"wrong token", "wrong-" + secretToken, http.StatusForbidden},
		{"right token", secretToken, 0},
	}
	for _, b := range []string{"JSONRPC", "HTTP+JSON"} {
		for _, tc := range cases {
			t.Run(b+"/"+tc.name, func(t *testing.T) {
				leakCheck(t)
				f := fakea2a.New(t, fakea2a.Options{Streaming: true, RequireToken: secretToken,
					Bindings: bindings(b), Behavior: fakea2a.Script(fakea2a.Completed("ok"))})
				opts := client.Options{}
				if tc.token != "" {
					opts.Credential = credentials.FromToken("test", tc.token)
				}
				c := dial(t, f, opts)
				_, sendErr := c.Send(testCtx(t), client.SendRequest{Text: "hi"})
				s, streamErr := c.SendStreaming(testCtx(t), client.SendRequest{Text: "hi"})
				if s != nil {
					collect(t, s)
				}
				if tc.status == 0 {
					if sendErr != nil || streamErr != nil {
						t.Fatalf("authorized calls failed: %v / %v", sendErr, streamErr)
					}
					return
				}
				for _, err := range []error{sendErr, streamErr} {
					var e *clienterr.Error
					if !errors.As(err, &e) || e.Kind != clienterr.KindUnauthorized || e.Status != tc.status {
						t.Fatalf("want KindUnauthorized %d, got %v", tc.status, err)
					}
					if strings.Contains(err.Error(), secretToken) || e.Retryable() {
						t.Fatalf("bad unauthorized error: %v", err)
					}
				}
			})
		}
	}
}

func bindings(b string) []client.TransportProtocol {
	return []client.TransportProtocol{client.TransportProtocol(b)}
}

func TestTokenOnlySentToCardOrigin(t *testing.T) {
	leakCheck(t)
	agent := fakea2a.New(t, fakea2a.Options{Streaming: true, Behavior: fakea2a.Script(fakea2a.Completed("ok"))})
	cardHost := fakea2a.New(t, fakea2a.Options{Streaming: true, InterfaceBaseURL: agent.URL()})
	// A card whose interface is on another origin is refused unless that
	// origin is allowed (the task text would go there)...
	if _, err := client.NewClient(testCtx(t), cardHost.CardURL(), client.Options{Credential: credentials.FromToken("test", secretToken)}); clienterr.KindOf(err) != clienterr.KindProtocol {
		t.Fatalf("interface on another origin accepted: %v", err)
	}
	// ...and when it is, the credential still goes to the card's origin only.
	c := dial(t, cardHost, client.Options{Credential: credentials.FromToken("test", secretToken), InterfaceOrigins: []string{credentials.Origin(agent.URL())}})
	if _, err := c.Send(testCtx(t), client.SendRequest{Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	s, err := c.SendStreaming(testCtx(t), client.SendRequest{Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, s)
	card := cardHost.RequestsFor("AgentCard")
	if len(card) != 2 || !card[0].Authorization || !card[1].Authorization {
		t.Fatalf("card origin should get the credential (two fetches: the refused client and this one): %+v", card)
	}
	reqs := agent.Requests()
	if len(reqs) < 2 {
		t.Fatalf("agent saw %d requests", len(reqs))
	}
	for _, r := range reqs {
		if r.Authorization {
			t.Fatalf("credential sent to another origin: %+v", r)
		}
	}
}

func TestRedirectToOtherOriginRefused(t *testing.T) {
	leakCheck(t)
	agent := fakea2a.New(t, fakea2a.Options{Behavior: fakea2a.Script(fakea2a.Completed("ok"))})
	var cardDoc []byte
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/agent-card.json":
			_, _ = w.Write(cardDoc)
		case "/moved-card":
			http.Redirect(w, r, agent.CardURL(), http.StatusFound)
		default:
			http.Redirect(w, r, agent.URL()+"/jsonrpc", http.StatusTemporaryRedirect)
		}
	}))
	t.Cleanup(redirector.Close)
	cardDoc = []byte(strings.ReplaceAll(string(agent.CardBytes()), agent.URL(), redirector.URL))

	c := dial(t, &wrapURL{redirector.URL}, client.Options{Credential: credentials.FromToken("test", secretToken)})
	_, err := c.Send(testCtx(t), client.SendRequest{Text: "hi"})
	if !errors.Is(err, clienterr.ErrProtocol) || !strings.Contains(err.Error(), "redirect") {
		t.Fatalf("want refused redirect, got %v", err)
	}
	if n := len(agent.RequestsFor("SendMessage")); n != 0 {
		t.Fatalf("redirect was followed %d times", n)
	}
	_, err = client.FetchCard(testCtx(t), redirector.URL+"/moved-card")
	if !errors.Is(err, clienterr.ErrProtocol) {
		t.Fatalf("card redirect: want ErrProtocol, got %v", err)
	}
}

// wrapURL lets dial use a plain server as a card host.
type wrapURL struct{ base string }

func (w *wrapURL) CardURL() string { return w.base + "/.well-known/agent-card.json" }
