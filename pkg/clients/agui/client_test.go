package agui_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	aguiclient "github.com/seed0634/agentadaptor/pkg/clients/agui"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"

	"github.com/seed0634/agentadaptor/pkg/credentials"
)

const secret = "tok-9f8e7d6c5b4a"

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHTTPErrors(t *testing.T) {
	leakCheck(t)
	tests := []struct {
		status int
		kind   clienterr.Kind
		is     error
		retry  bool
	}{
		{401, clienterr.KindUnauthorized, clienterr.ErrUnauthorized, false},
		{403, clienterr.KindUnauthorized, clienterr.ErrUnauthorized, false},
		{404, clienterr.KindNotFound, clienterr.ErrNotFound, false},
		{400, clienterr.KindRejected, clienterr.ErrRejected, false},
		{409, clienterr.KindRejected, clienterr.ErrRejected, false},
		{422, clienterr.KindRejected, clienterr.ErrRejected, false},
		{429, clienterr.KindUnavailable, clienterr.ErrUnavailable, true},
		{500, clienterr.KindUnavailable, clienterr.ErrUnavailable, true},
		{503, clienterr.KindUnavailable, clienterr.ErrUnavailable, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			rm := newRemote(t, func(w *flushWriter, r *http.Request) {
				// The remote echoes the credential it received, plus a long tail.
				w.w.Header().Set("Content-Type", "application/json")
				w.w.WriteHeader(tc.status)
				w.raw(`{"error":"denied for ` + r.Header.Get("Authorization") + "\"}\n" + strings.Repeat("y", 10000))
			})
			c := newClient(t, aguiclient.Options{EndpointURL: rm.URL, Credential: credentials.FromToken("env:TOKEN", secret)})
			s, err := c.Run(testCtx(t), aguiclient.Input{Text: "x"})
			var e *clienterr.Error
			if s != nil || !errors.As(err, &e) || e.Kind != tc.kind || !errors.Is(err, tc.is) || e.Status != tc.status || e.Op != "run" || e.Retryable() != tc.retry {
				t.Fatalf("got %v, %v", s, err)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(e.Body, secret) {
				t.Errorf("the error reveals the credential: %v", err)
			}
			if !strings.Contains(e.Body, `denied for Bearer [REDACTED]`) || len(e.Body) > 600 {
				t.Errorf("Body = %q (%d bytes)", e.Body, len(e.Body))
			}
			want := fmt.Sprintf("agui: run: %s (HTTP %d): remote said ", tc.kind, tc.status)
			if msg := err.Error(); !strings.HasPrefix(msg, want) || !strings.Contains(msg, `" — `) {
				t.Errorf("message %q: want prefix %q and a hint", msg, want)
			}
		})
	}
	t.Run("not an event stream", func(t *testing.T) {
		rm := newRemote(t, func(w *flushWriter, r *http.Request) {
			w.w.Header().Set("Content-Type", "application/json")
			w.raw(`{"type":"RUN_STARTED"}`)
		})
		_, err := newClient(t, aguiclient.Options{EndpointURL: rm.URL}).Run(testCtx(t), aguiclient.Input{Text: "x"})
		var e *clienterr.Error
		if !errors.As(err, &e) || e.Kind != clienterr.KindProtocol || e.Status != 200 || !strings.Contains(e.Body, "RUN_STARTED") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no content type", func(t *testing.T) {
		rm := newRemote(t, func(w *flushWriter, r *http.Request) { w.w.WriteHeader(http.StatusNoContent) })
		_, err := newClient(t, aguiclient.Options{EndpointURL: rm.URL}).Run(testCtx(t), aguiclient.Input{Text: "x"})
		if !errors.Is(err, clienterr.ErrProtocol) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		rm := newRemote(t, sseScript(""))
		url := rm.URL
		rm.Close()
		_, err := newClient(t, aguiclient.Options{EndpointURL: url}).Run(testCtx(t), aguiclient.Input{Text: "x"})
		if !errors.Is(err, clienterr.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestCredentialOnlyForTheEndpointOrigin(t *testing.T) {
	leakCheck(t)
	other := newRemote(t, sseScript("data: "+evRunStarted+"\n\ndata: "+evRunFinished+"\n\n"))
	rm := newRemote(t, func(w *flushWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w.w, r, "/agent", http.StatusTemporaryRedirect)
		case "/away":
			http.Redirect(w.w, r, other.URL+"/agent", http.StatusTemporaryRedirect)
		default:
			w.sse()
			w.data(evRunStarted, evRunFinished)
		}
	})
	t.Setenv("AGUI_TEST_TOKEN", secret)
	opts := func(path string) aguiclient.Options {
		return aguiclient.Options{EndpointURL: rm.URL + path, AuthRef: "env:AGUI_TEST_TOKEN"}
	}

	s := run(t, newClient(t, opts("/agent")), aguiclient.Input{Text: "x"})
	if evs := drain(s); len(evs) != 2 || s.Err() != nil {
		t.Fatalf("got %v, %v", typesOf(evs), s.Err())
	}
	if got := rm.requests()[0].Header.Get("Authorization"); got != "Bearer "+secret {
		t.Fatalf("Authorization = %q", got)
	}

	// A same-origin redirect is followed, with the credential and the body.
	s = run(t, newClient(t, opts("/same")), aguiclient.Input{Text: "hello"})
	if evs := drain(s); len(evs) != 2 || s.Err() != nil {
		t.Fatalf("got %v, %v", typesOf(evs), s.Err())
	}
	reqs := rm.requests()
	if last := reqs[len(reqs)-1]; last.Path != "/agent" || last.Header.Get("Authorization") != "Bearer "+secret || !strings.Contains(string(last.Body), "hello") {
		t.Fatalf("redirected request %+v", last)
	}

	// A redirect to another origin is refused: nothing reaches it.
	_, err := newClient(t, opts("/away")).Run(testCtx(t), aguiclient.Input{Text: "x"})
	if !errors.Is(err, clienterr.ErrProtocol) || !strings.Contains(err.Error(), "another origin") || strings.Contains(err.Error(), secret) {
		t.Fatalf("err = %v", err)
	}
	if n := len(other.requests()); n != 0 {
		t.Fatalf("the other origin received %d requests", n)
	}

	// Through a caller's RoundTripper, a request to another origin never
	// carries the credential (defense in depth).
	var seen []string
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = append(seen, r.URL.Host+"="+r.Header.Get("Authorization"))
		return http.DefaultTransport.RoundTrip(r)
	})}
	c := newClient(t, aguiclient.Options{EndpointURL: other.URL, HTTPClient: hc, Credential: credentials.FromToken("test", secret)})
	s = run(t, c, aguiclient.Input{Text: "x"})
	drain(s)
	if len(seen) != 1 || !strings.HasSuffix(seen[0], "=Bearer "+secret) {
		t.Fatalf("seen %v", seen)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestSecretNeverShows(t *testing.T) {
	cred := credentials.FromToken("env:TOKEN", secret)
	c, err := aguiclient.New(aguiclient.Options{EndpointURL: "http://127.0.0.1:1/agui", Credential: cred})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "cred", cred, "client", c)
	js, _ := json.Marshal(map[string]any{"c": cred})
	for _, s := range []string{c.String(), fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", cred, cred, cred, cred), cred.String(), string(js), logged.String()} {
		if strings.Contains(s, secret) {
			t.Errorf("secret in %q", s)
		}
	}
	if !strings.Contains(c.String(), "env:TOKEN") || cred.Ref() != "env:TOKEN" {
		t.Errorf("String = %q", c.String())
	}
}

// TestNewResolvesAuthRef checks that New resolves Options.AuthRef through
// pkg/credentials (whose tests cover the reference rules): a reference that
// does not resolve is an error naming the field and wrapping the
// *credentials.RefError.
func TestNewResolvesAuthRef(t *testing.T) {
	t.Setenv("AGUI_EMPTY", "")
	_, err := aguiclient.New(aguiclient.Options{EndpointURL: "http://127.0.0.1:1/", AuthRef: "env:AGUI_EMPTY"})
	var re *credentials.RefError
	if !errors.Is(err, credentials.ErrInvalidRef) || !errors.As(err, &re) || re.Ref != "env:AGUI_EMPTY" ||
		!strings.HasPrefix(err.Error(), "agui: Options.AuthRef: ") {
		t.Fatalf("New with a bad AuthRef: %v", err)
	}
	t.Setenv("AGUI_SET", secret)
	c, err := aguiclient.New(aguiclient.Options{EndpointURL: "http://127.0.0.1:1/", AuthRef: "env:AGUI_SET"})
	if err != nil || !strings.Contains(c.String(), "env:AGUI_SET") || strings.Contains(c.String(), secret) {
		t.Fatalf("New with a good AuthRef: %v, %v", c, err)
	}
	c.Close()
}

func TestNewValidatesOptions(t *testing.T) {
	for name, o := range map[string]aguiclient.Options{
		"no endpoint":       {},
		"relative":          {EndpointURL: "/agui"},
		"ftp":               {EndpointURL: "ftp://127.0.0.1/agui"},
		"user info":         {EndpointURL: "http://user:pw@127.0.0.1/agui"},
		"authorization":     {EndpointURL: "http://127.0.0.1/agui", Headers: map[string]string{"authorization": "Bearer x"}},
		"accept":            {EndpointURL: "http://127.0.0.1/agui", Headers: map[string]string{"Accept": "*/*"}},
		"bad header name":   {EndpointURL: "http://127.0.0.1/agui", Headers: map[string]string{"X Bad": "1"}},
		"header line break": {EndpointURL: "http://127.0.0.1/agui", Headers: map[string]string{"X-A": "1\r\nX-B: 2"}},
		"negative frame":    {EndpointURL: "http://127.0.0.1/agui", MaxFrameBytes: -1},
	} {
		if c, err := aguiclient.New(o); err == nil {
			c.Close()
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("%s: error shows the URL password: %v", name, err)
		}
	}
}

func TestInput(t *testing.T) {
	ri, err := aguiclient.Input{Text: "hi"}.RunAgentInput()
	if err != nil || !strings.HasPrefix(ri.ThreadID, "thread-") || !strings.HasPrefix(ri.RunID, "run-") ||
		len(ri.Messages) != 1 || !strings.HasPrefix(ri.Messages[0].ID, "msg-") || ri.Messages[0].Role != types.RoleUser {
		t.Fatalf("%+v, %v", ri, err)
	}
	hist := []types.Message{{ID: "a", Role: types.RoleUser, Content: "q"}, {ID: "b", Role: types.RoleAssistant, Content: "a"}, {ID: "c", Role: types.RoleUser, Content: "q2"}}
	ri, err = aguiclient.Input{Messages: hist, State: map[string]any{"k": 1}, Context: []types.Context{{Description: "d", Value: "v"}}}.RunAgentInput()
	if err != nil || len(ri.Messages) != 3 || ri.State.(map[string]any)["k"] != 1 || len(ri.Context) != 1 {
		t.Fatalf("%+v, %v", ri, err)
	}
	c := newClient(t, aguiclient.Options{EndpointURL: "http://127.0.0.1:1/agui"})
	if _, err := c.Run(testCtx(t), aguiclient.Input{Text: "  "}); !errors.Is(err, clienterr.ErrRejected) {
		t.Fatalf("empty input: %v", err)
	}
}
