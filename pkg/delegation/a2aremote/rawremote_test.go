package a2aremote_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/seed0634/agentadaptor/pkg/delegation"
	"github.com/seed0634/agentadaptor/pkg/delegation/registry"
)

// rawRemote is an A2A 1.0 JSON-RPC agent written byte by byte, for answers
// a2a-go's own server never gives (a CancelTask that returns a task still
// working, a resubscription larger than the read budget). Each method is
// answered by its handler; a method without one gets a JSON-RPC error.
type rawRemote struct {
	srv      *httptest.Server
	handlers map[string]rawHandler

	mu    sync.Mutex
	calls []rawCall
}

// rawHandler answers one JSON-RPC call: w.result or w.events.
type rawHandler func(w *rawWriter, params json.RawMessage)

// rawCall is one JSON-RPC call the remote received.
type rawCall struct {
	Method string
	Params json.RawMessage
}

type rawWriter struct {
	w  http.ResponseWriter
	r  *http.Request
	id json.RawMessage
}

// result writes a unary JSON-RPC result.
func (w *rawWriter) result(result string) {
	w.w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w.w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, w.id, result)
}

// events writes a streaming response of results, then returns (ending it).
func (w *rawWriter) events(results ...string) {
	w.w.Header().Set("Content-Type", "text/event-stream")
	for _, r := range results {
		fmt.Fprintf(w.w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", w.id, r)
		w.w.(http.Flusher).Flush()
	}
}

// errorEvent answers a streaming call with a JSON-RPC error, as a2a-go's
// server does: in the stream.
func (w *rawWriter) errorEvent(code int, msg string) {
	w.w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w.w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":%q}}\n\n", w.id, code, msg)
}

// hold keeps the response open until the client goes away.
func (w *rawWriter) hold() { <-w.r.Context().Done() }

func newRawRemote(t *testing.T, streaming bool, handlers map[string]rawHandler) *rawRemote {
	t.Helper()
	rr := &rawRemote{handlers: handlers}
	rr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/agent-card.json" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"raw","description":"d","version":"1","supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{"streaming":%v},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}`,
				rr.srv.URL+"/rpc", streaming)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rr.mu.Lock()
		rr.calls = append(rr.calls, rawCall{Method: req.Method, Params: req.Params})
		rr.mu.Unlock()
		h := rr.handlers[req.Method]
		if h == nil {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID)
			return
		}
		h(&rawWriter{w: w, r: r, id: req.ID}, req.Params)
	}))
	t.Cleanup(func() {
		rr.srv.CloseClientConnections()
		rr.srv.Close()
	})
	return rr
}

// spec is the registry entry of the remote under key, with mod applied.
func (rr *rawRemote) spec(key string, mod ...func(*registry.RemoteAgentSpec)) registry.RemoteAgentSpec {
	s := registry.RemoteAgentSpec{Key: key, Protocol: delegation.ProtocolA2A, AgentCardURL: rr.srv.URL + "/.well-known/agent-card.json", Policy: registry.DefaultPolicy()}
	for _, m := range mod {
		m(&s)
	}
	return s
}

// callsOf returns the calls of method received so far.
func (rr *rawRemote) callsOf(method string) []rawCall {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	var out []rawCall
	for _, c := range rr.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// task is the JSON of a task of id in state (a TASK_STATE_* name).
func task(id, state string) string {
	return fmt.Sprintf(`{"id":%q,"contextId":"ctx-1","status":{"state":%q}}`, id, state)
}

// streamed is a stream result holding a task, a status update or an
// artifact update.
func streamedTask(id, state string) string { return `{"task":` + task(id, state) + `}` }

func streamedStatus(id, state, text string) string {
	msg := ""
	if text != "" {
		b, _ := json.Marshal(text)
		msg = fmt.Sprintf(`,"message":{"messageId":"m-%s-%d","role":"ROLE_AGENT","parts":[{"text":%s}]}`, state, len(text), b)
	}
	return fmt.Sprintf(`{"statusUpdate":{"taskId":%q,"contextId":"ctx-1","status":{"state":%q%s}}}`, id, state, msg)
}
