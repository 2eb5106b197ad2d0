package a2a_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed0634/agentadaptor/internal/fakea2a"
	client "github.com/seed0634/agentadaptor/pkg/clients/a2a"
)

const secretToken = "s3cr3t-T0KEN-value"

func TestResolveAuthRef(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	if err := os.WriteFile(good, []byte("  "+secretToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AA_TEST_TOKEN", secretToken)
	t.Setenv("AA_EMPTY_TOKEN", "")
	cases := []struct {
		ref    string
		ok     bool
		noCred bool
	}{
		{"", true, true},
		{"env:AA_TEST_TOKEN", true, false},
		{"file:" + good, true, false},
		{"env:AA_EMPTY_TOKEN", false, false},
		{"env:AA_UNSET_TOKEN_XYZ", false, false},
		{"file:" + empty, false, false},
		{"file:" + filepath.Join(dir, "missing"), false, false},
		{"vault:secret/agent", false, false},
		{"literal-token", false, false},
		{"env:", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.ref, func(t *testing.T) {
			cred, err := client.ResolveAuthRef(tc.ref)
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				var ae *client.AuthRefError
				if !errors.As(err, &ae) || !errors.Is(err, client.ErrInvalidAuthRef) || ae.Ref != tc.ref {
					t.Fatalf("want *AuthRefError, got %T %v", err, err)
				}
				if strings.Contains(err.Error(), secretToken) {
					t.Fatal("error leaks the token")
				}
				return
			}
			if (cred == nil) != tc.noCred {
				t.Fatalf("cred = %v", cred)
			}
		})
	}
}

func TestCredentialNeverPrinted(t *testing.T) {
	cred := client.NewCredential("env:X", secretToken)
	j, _ := json.Marshal(map[string]any{"c": cred})
	var logBuf strings.Builder
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("x", "cred", cred)
	outs := []string{
		fmt.Sprint(cred), fmt.Sprintf("%v %+v %#v %s %q", cred, cred, cred, cred, cred),
		cred.String(), cred.GoString(), string(j), logBuf.String(),
	}
	for _, o := range outs {
		if strings.Contains(o, secretToken) {
			t.Fatalf("token leaked: %s", o)
		}
	}
}

func TestOrigin(t *testing.T) {
	cases := map[string]string{
		"http://Example.COM/x":       "http://example.com:80",
		"https://example.com/x?y=1":  "https://example.com:443",
		"http://127.0.0.1:8080/card": "http://127.0.0.1:8080",
		"ftp://example.com":          "",
		"/relative":                  "",
		"http://[::1]:9/x":           "http://[::1]:9",
	}
	for in, want := range cases {
		if got := client.Origin(in); got != want {
			t.Errorf("Origin(%q) = %q, want %q", in, got, want)
		}
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
					opts.Credential = client.NewCredential("test", tc.token)
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
					var e *client.Error
					if !errors.As(err, &e) || e.Kind != client.KindUnauthorized || e.Status != tc.status {
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
	c := dial(t, cardHost, client.Options{Credential: client.NewCredential("test", secretToken)})
	if _, err := c.Send(testCtx(t), client.SendRequest{Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	s, err := c.SendStreaming(testCtx(t), client.SendRequest{Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, s)
	card := cardHost.RequestsFor("AgentCard")
	if len(card) != 1 || !card[0].Authorization {
		t.Fatalf("card origin should get the credential: %+v", card)
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

	c := dial(t, &wrapURL{redirector.URL}, client.Options{Credential: client.NewCredential("test", secretToken)})
	_, err := c.Send(testCtx(t), client.SendRequest{Text: "hi"})
	if !errors.Is(err, client.ErrProtocol) || !strings.Contains(err.Error(), "redirect") {
		t.Fatalf("want refused redirect, got %v", err)
	}
	if n := len(agent.RequestsFor("SendMessage")); n != 0 {
		t.Fatalf("redirect was followed %d times", n)
	}
	_, err = client.FetchCard(testCtx(t), redirector.URL+"/moved-card")
	if !errors.Is(err, client.ErrProtocol) {
		t.Fatalf("card redirect: want ErrProtocol, got %v", err)
	}
}

// wrapURL lets dial use a plain server as a card host.
type wrapURL struct{ base string }

func (w *wrapURL) CardURL() string { return w.base + "/.well-known/agent-card.json" }
