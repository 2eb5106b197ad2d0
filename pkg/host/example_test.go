package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/seed0634/agentadaptor/pkg/adapters/scripted"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
	"github.com/seed0634/agentadaptor/pkg/host"
)

// scriptedParent is a deterministic parent agent for the examples: the
// scripted agent playing steps (a real program would use
// pkg/adapters/claude, codex or acp).
func scriptedParent(steps string) *scripted.Adapter {
	parent, err := scripted.New(scripted.Config{ScenarioData: []byte(steps)})
	if err != nil {
		log.Fatal(err)
	}
	return parent
}

// chat posts one user message to an AG-UI endpoint and returns the
// status and the assistant's text (the TEXT_MESSAGE_CONTENT deltas).
func chat(url string, header http.Header, message string) (int, string) {
	body := `{"threadId":"t1","runId":"r-` + strings.ReplaceAll(message, " ", "-") + `","messages":[{"id":"u1","role":"user","content":"` + message + `"}]}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		var ev struct{ Type, Delta string }
		if ok && json.Unmarshal([]byte(data), &ev) == nil && ev.Type == "TEXT_MESSAGE_CONTENT" {
			text.WriteString(ev.Delta)
		}
	}
	return resp.StatusCode, text.String()
}

// The host's routes mounted under /agents in your own mux, beside your
// own routes: its handler's routes are relative to its root.
func ExampleHost_Handler() {
	h, err := host.New(context.Background(), host.Config{Parent: scriptedParent("- say: Hello from the host.\n")})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Shutdown(context.Background())

	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/version", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "v1.2.3") })
	mux.Handle("/agents/", http.StripPrefix("/agents", h.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/api/version")
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("your route:", resp.StatusCode)
	status, answer := chat(srv.URL+"/agents/agui", nil, "hi")
	fmt.Println("the host's chat:", status, answer)
	// Output:
	// your route: 200
	// the host's chat: 200 Hello from the host.
}

// Your own authentication: here a header your gateway sets, beside the
// host's bearer tokens. The principal it returns owns the runs its
// requests start; a request it refuses gets 401.
func ExampleAuthenticator() {
	gateway := host.AuthenticatorFunc(func(r *http.Request) (string, error) {
		if user := r.Header.Get("X-Gateway-User"); user != "" {
			return user, nil
		}
		return "", errors.New("no gateway user")
	})
	h, err := host.New(context.Background(), host.Config{
		Parent:        scriptedParent("- say: Signed in.\n"),
		Authenticator: gateway,
		Tokens:        map[string]string{"ci": "ci-token-0123456789abcdef"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()

	status, _ := chat(srv.URL+"/agui", nil, "anonymous")
	fmt.Println("no credentials:", status)
	status, answer := chat(srv.URL+"/agui", http.Header{"X-Gateway-User": {"alice@example.com"}}, "from the gateway")
	fmt.Println("gateway user:", status, answer)
	status, answer = chat(srv.URL+"/agui", http.Header{"Authorization": {"Bearer ci-token-0123456789abcdef"}}, "from ci")
	fmt.Println("bearer token:", status, answer)
	// Output:
	// no credentials: 401
	// gateway user: 200 Signed in.
	// bearer token: 200 Signed in.
}

// A registry built in code: the parent delegates to a remote AG-UI agent
// (here another host, whose parent answers) and answers with what it
// reported.
func ExampleConfig_agents() {
	remote, err := host.New(context.Background(), host.Config{Parent: scriptedParent("- say: Penguins sleep standing up.\n")})
	if err != nil {
		log.Fatal(err)
	}
	defer remote.Shutdown(context.Background())
	remoteSrv := httptest.NewServer(remote.Handler())
	defer remoteSrv.Close()

	h, err := host.New(context.Background(), host.Config{
		Parent: scriptedParent(`
- call: {tool: delegate_to_agent, args: {agent: research, objective: "How do penguins sleep?"}}
- say_result: "Research says: {{.JSON.summary}}"
`),
		Agents: []registry.RemoteAgentSpec{{
			Key: "research", DisplayName: "Research Agent", Description: "Answers questions about animals.",
			Protocol: "agui", EndpointURL: remoteSrv.URL + "/agui",
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()

	_, answer := chat(srv.URL+"/agui", nil, "penguins")
	fmt.Println(answer)
	// Output:
	// Research says: Penguins sleep standing up.
}
