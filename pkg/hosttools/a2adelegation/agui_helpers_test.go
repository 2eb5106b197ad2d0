package a2adelegation

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"
)

// sseRemote is a programmable remote AG-UI agent: a loopback HTTP server
// whose script writes raw SSE for each run. It records every request and
// reports on gone when a client disconnected while the script held the
// response open.
type sseRemote struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []remoteReq
	gone chan struct{}
}

type remoteReq struct {
	Auth  string
	Input types.RunAgentInput
}

// sseW writes one run's response.
type sseW struct {
	w  http.ResponseWriter
	r  *http.Request
	in types.RunAgentInput
	rm *sseRemote
}

func newSSERemote(t *testing.T, script func(w *sseW)) *sseRemote {
	t.Helper()
	rm := &sseRemote{gone: make(chan struct{}, 16)}
	rm.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var in types.RunAgentInput
		_ = json.Unmarshal(body, &in)
		rm.mu.Lock()
		rm.reqs = append(rm.reqs, remoteReq{Auth: r.Header.Get("Authorization"), Input: in})
		rm.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		script(&sseW{w: w, r: r, in: in, rm: rm})
	}))
	t.Cleanup(func() {
		rm.srv.CloseClientConnections()
		rm.srv.Close()
	})
	return rm
}

func (rm *sseRemote) URL() string { return rm.srv.URL + "/agui" }

func (rm *sseRemote) requests() []remoteReq {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return append([]remoteReq(nil), rm.reqs...)
}

// waitGone waits until a held response saw its client go away.
func (rm *sseRemote) waitGone(t *testing.T) {
	t.Helper()
	select {
	case <-rm.gone:
	case <-time.After(20 * time.Second):
		t.Fatal("the remote never saw the request aborted")
	}
}

// raw writes s and flushes.
func (w *sseW) raw(s string) {
	_, _ = io.WriteString(w.w, s)
	w.w.(http.Flusher).Flush()
}

// ev writes one event per JSON object; "$RUN" and "$THREAD" are replaced
// by the run's ids.
func (w *sseW) ev(evs ...string) {
	for _, e := range evs {
		e = strings.ReplaceAll(e, "$RUN", w.in.RunID)
		e = strings.ReplaceAll(e, "$THREAD", w.in.ThreadID)
		w.raw("data: " + e + "\n\n")
	}
}

func (w *sseW) started() { w.ev(`{"type":"RUN_STARTED","threadId":"$THREAD","runId":"$RUN"}`) }

func (w *sseW) finished() { w.ev(`{"type":"RUN_FINISHED","threadId":"$THREAD","runId":"$RUN"}`) }

func (w *sseW) text(id string, chunks ...string) {
	w.ev(fmt.Sprintf(`{"type":"TEXT_MESSAGE_START","messageId":%q,"role":"assistant"}`, id))
	for _, c := range chunks {
		w.ev(fmt.Sprintf(`{"type":"TEXT_MESSAGE_CONTENT","messageId":%q,"delta":%q}`, id, c))
	}
	w.ev(fmt.Sprintf(`{"type":"TEXT_MESSAGE_END","messageId":%q}`, id))
}

// hold keeps the response open until the client goes away.
func (w *sseW) hold() {
	<-w.r.Context().Done()
	w.rm.gone <- struct{}{}
}

func aguiSpec(key, url string, mod ...func(*RemoteAgentSpec)) RemoteAgentSpec {
	s := RemoteAgentSpec{Key: key, DisplayName: strings.ToUpper(key[:1]) + key[1:] + " Agent", Description: "Host-written description of " + key + ".",
		Protocol: ProtocolAGUI, EndpointURL: url, AuthRef: "env:" + secretEnv, Policy: DefaultPolicy()}
	for _, m := range mod {
		m(&s)
	}
	return s
}
