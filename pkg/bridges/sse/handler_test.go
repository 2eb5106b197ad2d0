package sse_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/aguiverify"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
	"github.com/seed0634/agentadaptor/pkg/bridges/sse"

	"github.com/seed0634/agentadaptor/internal/testkit/ssetest"
)

func TestLiveStreams(t *testing.T) {
	leakCheck(t)
	f := newFixture(t)
	tests := []struct {
		prompt string
		want   []string
		check  func(t *testing.T, frames []aguiverify.Frame)
	}{
		{"plain", []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}, nil},
		{"streamed", []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}, nil},
		{"tool", []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
			"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}, nil},
		{"fail", []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_ERROR"},
			func(t *testing.T, frames []aguiverify.Frame) {
				m := decode(t, frames[len(frames)-1])
				if m["code"] != string(agentadaptor.FailureExit) || !strings.Contains(m["message"].(string), "agent crashed") {
					t.Errorf("RUN_ERROR = %v", m)
				}
			}},
		{"custom", []string{"RUN_STARTED", "CUSTOM", "CUSTOM", "CUSTOM", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"},
			func(t *testing.T, frames []aguiverify.Frame) {
				names := []string{"scripted.note", "scripted.empty", agui.EventUsage}
				for i, n := range names {
					if m := decode(t, frames[i+1]); m["name"] != n || m["value"] == nil {
						t.Errorf("frame %d = %v, want CUSTOM %s with a value", i+1, m, n)
					}
				}
			}},
		{"reasoning", []string{"RUN_STARTED", "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END",
			"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.prompt, func(t *testing.T) {
			_, frames := runStream(t, f, "thread-"+tc.prompt, "client-run-"+tc.prompt, tc.prompt)
			if got := frameTypes(t, frames); !slices.Equal(got, tc.want) {
				t.Fatalf("types:\n got  %v\n want %v", got, tc.want)
			}
			rs := decode(t, frames[0])
			if rs["runId"] != "client-run-"+tc.prompt || rs["threadId"] != "thread-"+tc.prompt {
				t.Errorf("RUN_STARTED = %v: want the client's runId and threadId", rs)
			}
			if tc.check != nil {
				tc.check(t, frames)
			}
			req := f.adapter.lastRequest(t)
			if req.SessionKey != "thread-"+tc.prompt || req.Prompt != tc.prompt || !req.Streaming {
				t.Errorf("adapter request: session key %q prompt %q streaming %v", req.SessionKey, req.Prompt, req.Streaming)
			}
			waitEnded(t, f.handle(t, "client-run-"+tc.prompt))
		})
	}
}

func TestResponseHeadersAndFraming(t *testing.T) {
	leakCheck(t)
	f := newFixture(t)
	resp := ssetest.Post(t, f.url(), input("t1", "", "plain"))
	defer resp.Body.Close()
	want := map[string]string{"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	body, _ := io.ReadAll(resp.Body)
	frames, _ := aguiverify.Frames(strings.NewReader(string(body)))
	for i, fr := range frames {
		if want := []byte("id: " + itoa(i+1) + "\ndata: "); !strings.Contains(string(body), string(want)) {
			t.Errorf("frame %d: %q not found", i, want)
		}
		_ = fr
	}
	// Without a client runId the stream's runId is the SDK's RunID.
	rs := decode(t, frames[0])
	if id, _ := rs["runId"].(string); !strings.HasPrefix(id, "run-") {
		t.Errorf("runId = %v, want the SDK's RunID", rs["runId"])
	} else {
		waitEnded(t, f.handle(t, id))
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestBadRequests(t *testing.T) {
	leakCheck(t)
	f := newFixture(t, sse.WithMaxRequestBytes(2048))
	big := input("t", "", strings.Repeat("x", 4096))
	tests := []struct {
		name        string
		method      string
		contentType string
		body        string
		status      int
		code        string
	}{
		{"GET", http.MethodGet, "", "", http.StatusMethodNotAllowed, "method_not_allowed"},
		{"PUT", http.MethodPut, "application/json", input("t", "", "hi"), http.StatusMethodNotAllowed, "method_not_allowed"},
		{"wrong content type", http.MethodPost, "text/plain", input("t", "", "hi"), http.StatusBadRequest, "unsupported_content_type"},
		{"no content type", http.MethodPost, "", input("t", "", "hi"), http.StatusBadRequest, "unsupported_content_type"},
		{"bad json", http.MethodPost, "application/json", `{"threadId":`, http.StatusBadRequest, "bad_json"},
		{"not an object", http.MethodPost, "application/json", `[1,2]`, http.StatusBadRequest, "bad_json"},
		{"no messages", http.MethodPost, "application/json", `{"threadId":"t","runId":"r","messages":[]}`, http.StatusBadRequest, "no_user_message"},
		{"only assistant", http.MethodPost, "application/json", `{"threadId":"t","messages":[{"id":"a","role":"assistant","content":"x"}]}`, http.StatusBadRequest, "no_user_message"},
		{"empty user text", http.MethodPost, "application/json", `{"threadId":"t","messages":[{"id":"u","role":"user","content":"  "}]}`, http.StatusBadRequest, "empty_user_message"},
		{"image only", http.MethodPost, "application/json", `{"threadId":"t","messages":[{"id":"u","role":"user","content":[{"type":"image","source":{"type":"url","value":"http://x"}}]}]}`, http.StatusBadRequest, "empty_user_message"},
		{"bad content", http.MethodPost, "application/json", `{"threadId":"t","messages":[{"id":"u","role":"user","content":42}]}`, http.StatusBadRequest, "bad_message_content"},
		{"too large", http.MethodPost, "application/json", big, http.StatusRequestEntityTooLarge, "request_too_large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, f.url(), strings.NewReader(tc.body))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error struct{ Code, Message string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("status %d, body is not JSON: %v", resp.StatusCode, err)
			}
			if resp.StatusCode != tc.status || body.Error.Code != tc.code || body.Error.Message == "" {
				t.Errorf("got %d %+v, want %d %s", resp.StatusCode, body.Error, tc.status, tc.code)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type = %q", ct)
			}
		})
	}
	if n := len(f.adapter.Requests()); n != 0 {
		t.Errorf("%d runs were started for bad requests", n)
	}
}

func TestInputVariants(t *testing.T) {
	leakCheck(t)
	f := newFixture(t)
	tests := []struct {
		name       string
		body       string
		wantPrompt string
		wantKey    string
	}{
		{"snake_case aliases and content parts",
			`{"thread_id":"th-snake","run_id":"r-snake","forwarded_props":{"adapter":"evil","command":"/bin/rm"},"messages":[` +
				`{"id":"u0","role":"user","content":"first turn"},{"id":"a0","role":"assistant","content":"reply"},` +
				`{"id":"u1","role":"user","content":[{"type":"text","text":"line one"},{"type":"image","source":{"type":"url","value":"http://x"}},{"type":"text","text":"line two"}]}]}`,
			"line one\nline two", "th-snake"},
		{"system, developer and context become a delimited preamble",
			`{"threadId":"th-sys","runId":"r-sys","context":[{"description":"user name","value":"Ada"}],"messages":[` +
				`{"id":"s","role":"system","content":"Be brief."},{"id":"d","role":"developer","content":"Answer in English."},{"id":"u","role":"user","content":"hi"}]}`,
			"[client instructions]\nBe brief.\n\nAnswer in English.\n[end client instructions]\n\n[client context]\n- user name: Ada\n[end client context]\n\nhi", "th-sys"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := ssetest.Post(t, f.url(), tc.body)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err := aguiverify.VerifyReader(strings.NewReader(string(body))); err != nil {
				t.Fatalf("%v\n%s", err, body)
			}
			req := f.adapter.lastRequest(t)
			if req.Prompt != tc.wantPrompt || req.SessionKey != tc.wantKey {
				t.Errorf("prompt %q key %q, want %q %q", req.Prompt, req.SessionKey, tc.wantPrompt, tc.wantKey)
			}
			if len(req.Options) != 0 {
				t.Errorf("forwardedProps leaked into adapter options: %v", req.Options)
			}
		})
	}
	for _, id := range []string{"r-snake", "r-sys"} {
		waitEnded(t, f.handle(t, id))
	}
}

func TestPromptPolicyAndHooks(t *testing.T) {
	leakCheck(t)
	var gotProps any
	f := newFixture(t,
		sse.WithPromptPolicy(sse.PromptPolicy{IgnoreSystem: true, IgnoreContext: true}),
		sse.WithSessionKeyFunc(func(r *http.Request, threadID string) string { return "user-7:" + threadID }),
		sse.WithRunOptions(agentadaptor.WithModel("m-1")),
		sse.WithForwardedProps(func(_ context.Context, props any) ([]agentadaptor.RunOption, error) {
			gotProps = props
			if m, _ := props.(map[string]any); m["reject"] == true {
				return nil, errors.New("reject is not allowed")
			}
			return []agentadaptor.RunOption{agentadaptor.WithAdapterOption("effort", "low")}, nil
		}))
	body := `{"threadId":"th","runId":"r1","forwardedProps":{"x":1},"context":[{"description":"d","value":"v"}],` +
		`"messages":[{"id":"s","role":"system","content":"sys"},{"id":"u","role":"user","content":"hi"}]}`
	resp := ssetest.Post(t, f.url(), body)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	req := f.adapter.lastRequest(t)
	if req.Prompt != "hi" || req.SessionKey != "user-7:th" || req.Model != "m-1" || req.Options["effort"] != "low" {
		t.Errorf("request: prompt %q key %q model %q options %v", req.Prompt, req.SessionKey, req.Model, req.Options)
	}
	if m, _ := gotProps.(map[string]any); m["x"] != 1.0 {
		t.Errorf("forwardedProps = %v", gotProps)
	}
	waitEnded(t, f.handle(t, "r1"))

	resp = ssetest.Post(t, f.url(), `{"threadId":"th","runId":"r2","forwardedProps":{"reject":true},"messages":[{"id":"u","role":"user","content":"hi"}]}`)
	var e struct {
		Error struct{ Code, Message string }
	}
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || e.Error.Code != "bad_forwarded_props" || !strings.Contains(e.Error.Message, "reject") {
		t.Errorf("got %d %+v", resp.StatusCode, e)
	}
}

func TestStartFailureIsAValidStream(t *testing.T) {
	leakCheck(t)
	tests := []struct {
		name     string
		protocol sse.Protocol
	}{{"agui", sse.ProtocolAGUI}, {"raw", sse.ProtocolRaw}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := startFixture(t, newAdapter(t, "/nonexistent/agent-cli"), sse.WithProtocol(tc.protocol))
			resp := ssetest.Post(t, f.url(), input("th", "client-run", "plain"))
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			frames, _ := aguiverify.Frames(strings.NewReader(string(body)))
			if tc.protocol == sse.ProtocolRaw {
				if len(frames) != 1 {
					t.Fatalf("raw frames: %s", body)
				}
				var p agentadaptor.StreamPayload
				json.Unmarshal(frames[0].Data, &p)
				if p.Kind != agentadaptor.KindRunFailed || p.Failure == nil || p.Failure.Code != agentadaptor.FailureStart {
					t.Errorf("raw payload = %+v", p)
				}
				return
			}
			if err := aguiverify.Verify(frames); err != nil {
				t.Fatalf("%v\n%s", err, body)
			}
			if got := frameTypes(t, frames); !slices.Equal(got, []string{"RUN_STARTED", "RUN_ERROR"}) {
				t.Fatalf("types %v", got)
			}
			if rs := decode(t, frames[0]); rs["runId"] != "client-run" {
				t.Errorf("RUN_STARTED = %v", rs)
			}
			if m := decode(t, frames[1]); m["code"] != string(agentadaptor.FailureStart) || !strings.Contains(m["message"].(string), "agent-cli") {
				t.Errorf("RUN_ERROR = %v", m)
			}
			if f.handler.Registry().Len() != 0 {
				t.Error("the failed run's runId stays reserved")
			}
		})
	}
}

func TestRawProtocol(t *testing.T) {
	leakCheck(t)
	f := newFixture(t, sse.WithProtocol(sse.ProtocolRaw))
	resp := ssetest.Post(t, f.url(), input("th", "raw-1", "streamed"))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	frames, _ := aguiverify.Frames(strings.NewReader(string(body)))
	var kinds []string
	for i, fr := range frames {
		var p agentadaptor.StreamPayload
		if err := json.Unmarshal(fr.Data, &p); err != nil {
			t.Fatal(err)
		}
		if fr.ID != itoa(i+1) || p.Seq != uint64(i+1) {
			t.Errorf("frame %d: id %s seq %d", i, fr.ID, p.Seq)
		}
		kinds = append(kinds, string(p.Kind))
	}
	want := []string{"run.started", "text.start", "text.delta", "text.delta", "text.end", "run.finished"}
	if !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	waitEnded(t, f.handle(t, "raw-1"))
}

// readUntil reads frames from an open stream until one of the given type.
func readUntil(t *testing.T, r *bufio.Reader, typ string) []string {
	t.Helper()
	var seen []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before %s (saw %v): %v", typ, seen, err)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			json.Unmarshal([]byte(data), &m)
			seen = append(seen, m["type"].(string))
			if m["type"] == typ {
				return seen
			}
		}
	}
}

func TestClientDisconnectCancelsRun(t *testing.T) {
	leakCheck(t)
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.url(), strings.NewReader(input("th", "slow-1", "slow")))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readUntil(t, bufio.NewReader(resp.Body), "TEXT_MESSAGE_CONTENT")
	h := f.handle(t, "slow-1")
	pid := f.adapter.pid(t, h.RunID())
	cancel()
	resp.Body.Close()
	res := waitEnded(t, h)
	if res.Status != agentadaptor.StatusCancelled {
		t.Errorf("status %s, want cancelled", res.Status)
	}
	if !processGone(pid) {
		t.Errorf("child %d still exists", pid)
	}
}

func TestDetachOnDisconnect(t *testing.T) {
	leakCheck(t)
	f := newFixture(t, sse.WithDetachOnDisconnect())
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.url(), strings.NewReader(input("th", "slow-2", "slow")))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readUntil(t, bufio.NewReader(resp.Body), "TEXT_MESSAGE_CONTENT")
	cancel()
	resp.Body.Close()
	h := f.handle(t, "slow-2")
	// The run survives the disconnect: it is still registered and running
	// until we cancel it through the cancel endpoint.
	select {
	case <-h.Done():
		t.Fatal("a detached run ended with its client")
	case <-time.After(300 * time.Millisecond):
	}
	if _, ok := f.handler.Registry().Lookup("slow-2"); !ok {
		t.Fatal("the detached run is not in the registry")
	}
	cresp := ssetest.Post(t, f.srv.URL+"/agui/runs/slow-2/cancel", "")
	var out map[string]any
	json.NewDecoder(cresp.Body).Decode(&out)
	cresp.Body.Close()
	if cresp.StatusCode != http.StatusOK || out["cancelled"] != true {
		t.Errorf("cancel: %d %v", cresp.StatusCode, out)
	}
	if res := waitEnded(t, h); res.Status != agentadaptor.StatusCancelled {
		t.Errorf("status %s", res.Status)
	}
}

func TestCancelEndpointEndsStreamWithRunError(t *testing.T) {
	leakCheck(t)
	f := newFixture(t)
	resp := ssetest.Post(t, f.url(), input("th", "slow-3", "slow"))
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	readUntil(t, br, "TEXT_MESSAGE_CONTENT")

	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodPost, "/agui/runs/nope/cancel", http.StatusNotFound},
		{http.MethodPost, "/agui/runs/slow-3/cancel", http.StatusOK},
	} {
		req, _ := http.NewRequest(tc.method, f.srv.URL+tc.path, nil)
		cr, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, cr.Body)
		cr.Body.Close()
		if cr.StatusCode != tc.status {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, cr.StatusCode, tc.status)
		}
	}
	rest, _ := io.ReadAll(br)
	if !strings.Contains(string(rest), `"type":"RUN_ERROR"`) || !strings.Contains(string(rest), `"code":"cancelled"`) {
		t.Errorf("stream tail lacks RUN_ERROR cancelled:\n%s", rest)
	}
	if err := f.handler.Registry().Cancel(context.Background(), "slow-3"); !errors.Is(err, sse.ErrRunNotFound) {
		t.Errorf("Cancel of an ended run = %v", err)
	}
}

func TestDuplicateActiveRunID(t *testing.T) {
	leakCheck(t)
	f := newFixture(t)
	resp := ssetest.Post(t, f.url(), input("th", "dup", "slow"))
	defer resp.Body.Close()
	readUntil(t, bufio.NewReader(resp.Body), "TEXT_MESSAGE_CONTENT")
	resp2 := ssetest.Post(t, f.url(), input("th", "dup", "plain"))
	var e struct{ Error struct{ Code string } }
	json.NewDecoder(resp2.Body).Decode(&e)
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusConflict || e.Error.Code != "run_id_in_use" {
		t.Errorf("got %d %v", resp2.StatusCode, e)
	}
	if err := f.handler.Registry().Cancel(context.Background(), "dup"); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, f.handle(t, "dup"))
}

func TestKeepAlive(t *testing.T) {
	leakCheck(t)
	f := newFixture(t, sse.WithKeepAlive(20*time.Millisecond))
	resp := ssetest.Post(t, f.url(), input("th", "ka", "slow"))
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("no keep-alive before the stream ended: %v", err)
		}
		if line == ": keep-alive\n" {
			break
		}
	}
	if err := f.handler.Registry().Cancel(context.Background(), "ka"); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(br)
	if !strings.Contains(string(rest), `"code":"cancelled"`) {
		t.Errorf("tail: %s", rest)
	}
}

func TestCORS(t *testing.T) {
	leakCheck(t)
	f := newFixture(t, sse.WithAllowedOrigins("http://app.example"))
	do := func(method, path, origin string, hdr ...string) *http.Response {
		req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(input("th", "", "plain")))
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	tests := []struct {
		name, method, path, origin string
		hdr                        []string
		status                     int
		allowOrigin                string
	}{
		{"preflight allowed", http.MethodOptions, "/agui", "http://app.example", []string{"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type,x-custom"}, http.StatusNoContent, "http://app.example"},
		{"preflight cancel allowed", http.MethodOptions, "/agui/runs/x/cancel", "http://app.example", nil, http.StatusNoContent, "http://app.example"},
		{"preflight other origin", http.MethodOptions, "/agui", "http://evil.example", nil, http.StatusForbidden, ""},
		{"post other origin", http.MethodPost, "/agui", "http://evil.example", nil, http.StatusForbidden, ""},
		{"post wildcard-looking origin", http.MethodPost, "/agui", "*", nil, http.StatusForbidden, ""},
		{"post allowed origin", http.MethodPost, "/agui", "http://app.example", nil, http.StatusOK, "http://app.example"},
		{"post same origin", http.MethodPost, "/agui", "SELF", nil, http.StatusOK, ""},
		{"post without origin", http.MethodPost, "/agui", "", nil, http.StatusOK, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			origin := tc.origin
			if origin == "SELF" {
				origin = f.srv.URL
			}
			resp := do(tc.method, tc.path, origin, tc.hdr...)
			if resp.StatusCode != tc.status || resp.Header.Get("Access-Control-Allow-Origin") != tc.allowOrigin {
				t.Errorf("got %d ACAO %q, want %d %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), tc.status, tc.allowOrigin)
			}
			if tc.name == "preflight allowed" {
				if got := resp.Header.Get("Access-Control-Allow-Headers"); got != "content-type,x-custom" {
					t.Errorf("Allow-Headers = %q", got)
				}
				if got := resp.Header.Get("Access-Control-Allow-Methods"); !strings.Contains(got, "POST") {
					t.Errorf("Allow-Methods = %q", got)
				}
			}
		})
	}
	// Let the runs started above end before goleak looks (it waits itself
	// for the registry's watchers, which end with their runs).
	f.waitAllEnded(t)
}

func TestStreamEndedWithoutTerminal(t *testing.T) {
	// A run whose consumer is too slow loses undelivered payloads after the
	// linger, and its channel closes without a terminal payload: the stream
	// must still end with RUN_ERROR stream_ended. We force it with a linger of
	// zero and a consumer that only starts reading after the run ended.
	leakCheck(t)
	gate := make(chan struct{})
	f := startFixture(t, newAdapter(t, ""), sse.WithRunOptions(agentadaptor.WithStreamLinger(time.Nanosecond)),
		sse.WithOnRunStart(func(id string, h *agentadaptor.RunHandle) {
			// The run ends before the handler reads anything. With a
			// linger of 1ns the stream gives up on its undelivered payloads
			// at once: the handler gets what the channel holds already (and,
			// each time it frees a slot, one more only if that send wins a
			// fair select against the expired linger), never the rest of
			// the 300 deltas and the terminal behind them. No timing is
			// involved.
			<-h.Done()
			close(gate)
		}))
	resp := ssetest.Post(t, f.url(), input("th", "lost", "many"))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	<-gate
	if err := aguiverify.VerifyReader(strings.NewReader(string(body))); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	if !strings.Contains(string(body), `"code":"stream_ended"`) {
		t.Errorf("unexpected tail:\n%s", body)
	}
}

// TestTranslatorOptionsAndStreaming checks the handler's run settings: the
// translator options apply to every stream (here: reasoning as CUSTOM
// events), and WithoutStreaming starts runs without
// agentadaptor.WithStreaming().
func TestTranslatorOptionsAndStreaming(t *testing.T) {
	leakCheck(t)
	f := newFixture(t, sse.WithoutStreaming(), sse.WithTranslatorOptions(agui.Options{Reasoning: agui.ReasoningCustom}))
	_, frames := runStream(t, f, "thread-opts", "client-run-opts", "reasoning")
	want := []string{"RUN_STARTED", "CUSTOM", "CUSTOM", "CUSTOM", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}
	if got := frameTypes(t, frames); !slices.Equal(got, want) {
		t.Fatalf("types:\n got  %v\n want %v", got, want)
	}
	for i, name := range []string{agui.EventReasoningStart, agui.EventReasoningDelta, agui.EventReasoningEnd} {
		if m := decode(t, frames[i+1]); m["name"] != name {
			t.Errorf("frame %d = %v, want CUSTOM %s", i+1, m, name)
		}
	}
	if req := f.adapter.lastRequest(t); req.Streaming {
		t.Error("WithoutStreaming: the run was started with streaming")
	}
	waitEnded(t, f.handle(t, "client-run-opts"))
}
