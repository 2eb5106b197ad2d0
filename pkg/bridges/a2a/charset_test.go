package a2a_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	a2abridge "github.com/seed0634/agentadaptor/pkg/bridges/a2a"
)

// Every text response of the bridge says it is UTF-8: the card, JSON-RPC
// and HTTP+JSON bodies and errors, and event streams (a2a-go writes its
// headers without a charset).
func TestTextResponsesCarryCharset(t *testing.T) {
	env := startBridge(t, "- say: Café – “quotes”\n", a2abridge.Exposure{})
	v1 := map[string]string{"A2A-Version": "1.0"}
	msg := `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`
	for _, c := range []struct {
		name, method, path string
		headers            map[string]string
		body               string
		want               string
	}{
		{"card", "GET", a2abridge.PathAgentCard, nil, "", "application/json; charset=utf-8"},
		{"JSON-RPC", "POST", a2abridge.PathJSONRPC, v1, rpcBody("SendMessage", msg), "application/json; charset=utf-8"},
		{"JSON-RPC error", "POST", a2abridge.PathJSONRPC, v1, rpcBody("GetTask", `{"id":"nope"}`), "application/json; charset=utf-8"},
		{"HTTP+JSON", "POST", a2abridge.PathREST + "/message:send", v1, msg, "application/json; charset=utf-8"},
		{"HTTP+JSON error", "GET", a2abridge.PathREST + "/tasks/nope", v1, "", "application/json; charset=utf-8"},
		{"JSON-RPC stream", "POST", a2abridge.PathJSONRPC, v1, rpcBody("SendStreamingMessage", msg), "text/event-stream; charset=utf-8"},
		{"HTTP+JSON stream", "POST", a2abridge.PathREST + "/message:stream", v1, msg, "text/event-stream; charset=utf-8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, env.srv.URL+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			for k, v := range c.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() { // read the stream to its end
			}
			if ct := resp.Header.Get("Content-Type"); ct != c.want {
				t.Errorf("Content-Type %q, want %q", ct, c.want)
			}
		})
	}
}
