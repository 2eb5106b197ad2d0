package agui_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"

	aguiclient "github.com/seed0634/agentadaptor/pkg/clients/agui"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

func TestHappyPath(t *testing.T) {
	leakCheck(t)
	rm := newRemote(t, func(w *flushWriter, r *http.Request) {
		w.sse()
		w.raw("id: 1\ndata: " + evRunStarted + "\n\n")
		w.raw("id: 2\ndata: " + evMsgStart + "\n\nid: 3\ndata: " + evMsgContent + "\n\nid: 4\ndata: " + evMsgEnd + "\n\n")
		w.raw("id: 5\ndata: " + `{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"search","parentMessageId":"m1"}` + "\n\n")
		w.raw("id: 6\ndata: " + `{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{\"q\":\"go\"}"}` + "\n\n")
		w.raw("id: 7\ndata: " + `{"type":"TOOL_CALL_END","toolCallId":"c1"}` + "\n\n")
		w.raw("id: 8\ndata: " + `{"type":"TOOL_CALL_RESULT","messageId":"m2","toolCallId":"c1","content":"3 results"}` + "\n\n")
		w.raw("id: 9\ndata: " + `{"type":"CUSTOM","name":"progress","value":{"pct":50}}` + "\n\n")
		w.raw("id: 10\ndata: " + evRunFinished + "\n\n")
	})
	c := newClient(t, aguiclient.Options{EndpointURL: rm.URL + "/agent", Headers: map[string]string{"X-Tenant": "acme"}})
	s := run(t, c, aguiclient.Input{ThreadID: "t1", RunID: "r1", MessageID: "u1", Text: "find go docs"})
	evs := drain(s)
	want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
		"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "CUSTOM", "RUN_FINISHED"}
	if got := typesOf(evs); !slices.Equal(got, want) {
		t.Fatalf("types:\n got  %v\n want %v", got, want)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("Err = %v", err)
	}
	if err := events.ValidateSequence(evs); err != nil {
		t.Errorf("the SDK rejects the decoded sequence: %v", err)
	}
	if rs := evs[0].(*events.RunStartedEvent); rs.RunID() != "r1" || rs.ThreadID() != "t1" {
		t.Errorf("RUN_STARTED = %+v", rs)
	}
	if tc := evs[5].(*events.ToolCallArgsEvent); tc.Delta != `{"q":"go"}` {
		t.Errorf("TOOL_CALL_ARGS delta = %q", tc.Delta)
	}
	if ce := evs[8].(*events.CustomEvent); ce.Name != "progress" || ce.Value.(map[string]any)["pct"] != float64(50) {
		t.Errorf("CUSTOM = %+v", ce)
	}
	if s.Terminal() != evs[9] || s.LastEventID() != "10" {
		t.Errorf("Terminal = %v, LastEventID = %q", s.Terminal(), s.LastEventID())
	}
	if s.Next() || s.Event() != nil {
		t.Error("Next after the terminal returned true")
	}

	// The request: a RunAgentInput POST asking for SSE.
	reqs := rm.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/agent" || r.Header.Get("Accept") != "text/event-stream" ||
		r.Header.Get("Content-Type") != "application/json" || r.Header.Get("X-Tenant") != "acme" || r.Header.Get("Authorization") != "" {
		t.Errorf("request %s %s headers %v", r.Method, r.Path, r.Header)
	}
	body := mustJSON(t, r.Body)
	wantBody := `{"context":[],"forwardedProps":{},"messages":[{"content":"find go docs","id":"u1","role":"user"}],"runId":"r1","state":{},"threadId":"t1","tools":[]}`
	if got := string(marshal(t, body)); got != wantBody {
		t.Errorf("body:\n got  %s\n want %s", got, wantBody)
	}
}

func TestRunErrorIsATerminalEventNotAnError(t *testing.T) {
	leakCheck(t)
	rm := newRemote(t, sseScript("data: "+evRunStarted+"\n\ndata: "+evRunError+"\n\n"))
	s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL}), aguiclient.Input{Text: "x"})
	evs := drain(s)
	if got := typesOf(evs); !slices.Equal(got, []string{"RUN_STARTED", "RUN_ERROR"}) || s.Err() != nil {
		t.Fatalf("got %v, %v", got, s.Err())
	}
	re := s.Terminal().(*events.RunErrorEvent)
	if re.Message != "remote failed" || re.Code == nil || *re.Code != "boom" {
		t.Errorf("RUN_ERROR = %+v", re)
	}
}

func TestFramingVariants(t *testing.T) {
	leakCheck(t)
	want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}
	all := []string{evRunStarted, evMsgStart, evMsgContent, evMsgEnd, evRunFinished}
	join := func(end string, f func(string) string) string {
		var b strings.Builder
		for _, ev := range all {
			b.WriteString(f(ev) + end + end)
		}
		return b.String()
	}
	lf := func(ev string) string { return "data: " + ev }
	tests := map[string]string{
		"LF":   join("\n", lf),
		"CRLF": join("\r\n", lf),
		"CR":   join("\r", lf),
		"keep-alives": ": connected\n\n" + strings.ReplaceAll(join("\n", lf), "\n\n", "\n\n: keep-alive\n\n:\n\n") +
			": bye\n\n",
		"multi-line data": join("\n", func(ev string) string {
			return "data: " + strings.ReplaceAll(strings.ReplaceAll(ev, ",", ",\ndata: "), ":", ":\r\ndata:")
		}),
		"event and id lines":     join("\n", func(ev string) string { return "event: message\nid: 42\nretry: 1000\ndata: " + ev }),
		"no space after colon":   join("\n", func(ev string) string { return "data:" + ev }),
		"whitespace-only frames": "data: \n\ndata:\n\n" + join("\n", lf),
	}
	for name, body := range tests {
		t.Run(name, func(t *testing.T) {
			rm := newRemote(t, sseScript(body))
			s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL}), aguiclient.Input{Text: "x"})
			if got := typesOf(drain(s)); !slices.Equal(got, want) || s.Err() != nil {
				t.Fatalf("got %v, %v\nbody %q", got, s.Err(), body)
			}
		})
	}
	t.Run("written one byte at a time", func(t *testing.T) {
		body := tests["keep-alives"] + ""
		rm := newRemote(t, func(w *flushWriter, _ *http.Request) {
			w.sse()
			for i := range len(body) {
				w.raw(body[i : i+1])
			}
		})
		s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL}), aguiclient.Input{Text: "x"})
		if got := typesOf(drain(s)); !slices.Equal(got, want) || s.Err() != nil {
			t.Fatalf("got %v, %v", got, s.Err())
		}
	})
}

func TestUnknownEventTypesPassThrough(t *testing.T) {
	leakCheck(t)
	sub := `{"type":"SUBAGENT_STARTED","subagentRunId":"s1","name":"research","parentToolCallId":"c1","runId":"r1"}`
	rm := newRemote(t, sseScript("data: "+evRunStarted+"\n\ndata: "+sub+"\n\n"+
		`data: {"type":"THINKING_START"}`+"\n\n"+`data: {"type":"SUBAGENT_FINISHED","subagentRunId":"s1"}`+"\n\n"+
		"data: "+evRunFinished+"\n\n"))
	s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL}), aguiclient.Input{Text: "x"})
	evs := drain(s)
	if got := typesOf(evs); !slices.Equal(got, []string{"RUN_STARTED", "SUBAGENT_STARTED", "THINKING_START", "SUBAGENT_FINISHED", "RUN_FINISHED"}) || s.Err() != nil {
		t.Fatalf("got %v, %v", got, s.Err())
	}
	u, ok := evs[1].(*aguiclient.UnknownEvent)
	if !ok || string(u.Raw) != sub || u.RunID() != "r1" {
		t.Fatalf("SUBAGENT_STARTED = %#v", evs[1])
	}
	if f, _ := u.Fields(); f["parentToolCallId"] != "c1" {
		t.Errorf("fields %v", f)
	}
}

func TestMalformedFrameIsAProtocolError(t *testing.T) {
	leakCheck(t)
	for name, frame := range map[string]string{
		"invalid JSON":     `{"type":"TEXT_MESSAGE_CONTENT",`,
		"not an object":    `["RUN_FINISHED"]`,
		"no type":          `{"messageId":"m1"}`,
		"wrong field type": `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":{"x":1}}`,
	} {
		t.Run(name, func(t *testing.T) {
			rm := newRemote(t, sseScript("data: "+evRunStarted+"\n\nid: 2\ndata: "+frame+"\n\ndata: "+evRunFinished+"\n\n"))
			s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL}), aguiclient.Input{Text: "x"})
			evs := drain(s)
			err := s.Err()
			if len(evs) != 1 || !errors.Is(err, clienterr.ErrProtocol) || !errors.Is(err, aguiclient.ErrMalformedEvent) {
				t.Fatalf("got %v, %v", typesOf(evs), err)
			}
			var e *clienterr.Error
			if !errors.As(err, &e) || e.Op != "stream" || e.Retryable() || !strings.Contains(err.Error(), `id "2"`) {
				t.Errorf("error %#v: %v", e, err)
			}
			if s.Event() != nil || s.Next() {
				t.Error("the stream continues after a protocol error")
			}
		})
	}
}

func TestOversizedFrameEndsTheStream(t *testing.T) {
	leakCheck(t)
	big := `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"` + strings.Repeat("x", 2048) + `"}`
	t.Run("frame", func(t *testing.T) {
		rm := newRemote(t, func(w *flushWriter, r *http.Request) {
			w.sse()
			w.data(evRunStarted, evMsgStart, big, evRunFinished)
		})
		s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL, MaxFrameBytes: 1024}), aguiclient.Input{Text: "x"})
		evs := drain(s)
		if len(evs) != 2 || !errors.Is(s.Err(), clienterr.ErrProtocol) || !errors.Is(s.Err(), aguiclient.ErrFrameTooLarge) {
			t.Fatalf("got %v, %v", typesOf(evs), s.Err())
		}
	})
	t.Run("frame of many lines", func(t *testing.T) {
		rm := newRemote(t, sseScript("data: "+evRunStarted+"\n\n"+strings.Repeat("data: 0123456789\n", 200)+"\n"))
		s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL, MaxFrameBytes: 1024}), aguiclient.Input{Text: "x"})
		if evs := drain(s); len(evs) != 1 || !errors.Is(s.Err(), aguiclient.ErrFrameTooLarge) {
			t.Fatalf("got %v, %v", typesOf(evs), s.Err())
		}
	})
	t.Run("the default limit is 1 MiB", func(t *testing.T) {
		huge := `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"` + strings.Repeat("x", 1<<20) + `"}`
		rm := newRemote(t, func(w *flushWriter, r *http.Request) {
			w.sse()
			w.data(evRunStarted, big, huge, evRunFinished)
		})
		s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL}), aguiclient.Input{Text: "x"})
		if evs := drain(s); len(evs) != 2 || !errors.Is(s.Err(), aguiclient.ErrFrameTooLarge) {
			t.Fatalf("got %v, %v", typesOf(evs), s.Err())
		}
	})
	t.Run("stream", func(t *testing.T) {
		rm := newRemote(t, func(w *flushWriter, r *http.Request) {
			w.sse()
			w.data(evRunStarted)
			for range 100 {
				w.data(evMsgContent)
			}
			w.data(evRunFinished)
		})
		s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL, MaxStreamBytes: 2000}), aguiclient.Input{Text: "x"})
		if evs := drain(s); len(evs) < 2 || len(evs) > 40 || !errors.Is(s.Err(), aguiclient.ErrStreamTooLarge) || !errors.Is(s.Err(), clienterr.ErrProtocol) {
			t.Fatalf("got %d events, %v", len(evs), s.Err())
		}
	})
	t.Run("stream exactly at the limit", func(t *testing.T) {
		body := "data: " + evRunStarted + "\n\ndata: " + evRunFinished + "\n\n"
		rm := newRemote(t, sseScript(body))
		s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL, MaxStreamBytes: int64(len(body))}), aguiclient.Input{Text: "x"})
		if evs := drain(s); len(evs) != 2 || s.Err() != nil {
			t.Fatalf("got %v, %v", typesOf(evs), s.Err())
		}
	})
}

func TestEndWithoutTerminalIsInterrupted(t *testing.T) {
	leakCheck(t)
	for name, body := range map[string]string{
		"clean EOF":               "data: " + evRunStarted + "\n\ndata: " + evMsgStart + "\n\n",
		"EOF inside the terminal": "data: " + evRunStarted + "\n\ndata: " + evRunFinished + "\n",
		"empty stream":            "",
		"only keep-alives":        ": keep-alive\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			rm := newRemote(t, sseScript(body))
			s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL}), aguiclient.Input{Text: "x"})
			drain(s)
			var e *clienterr.Error
			if !errors.Is(s.Err(), clienterr.ErrInterrupted) || !errors.As(s.Err(), &e) || !e.Retryable() || e.Op != "stream" || s.Terminal() != nil {
				t.Fatalf("Err = %v, terminal %v", s.Err(), s.Terminal())
			}
		})
	}
	t.Run("connection cut mid-frame", func(t *testing.T) {
		rm := newRemote(t, func(w *flushWriter, r *http.Request) {
			w.sse()
			w.raw("data: " + evRunStarted + "\n\ndata: {\"type\":\"TEXT_")
			conn, _, err := http.NewResponseController(w.w).Hijack()
			if err == nil {
				conn.Close()
			}
		})
		s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL}), aguiclient.Input{Text: "x"})
		if evs := drain(s); len(evs) != 1 || !errors.Is(s.Err(), clienterr.ErrInterrupted) {
			t.Fatalf("got %v, %v", typesOf(evs), s.Err())
		}
	})
}

func TestEventsAfterTheTerminalAreIgnored(t *testing.T) {
	leakCheck(t)
	for _, terminal := range []string{evRunFinished, evRunError} {
		rm := newRemote(t, func(w *flushWriter, r *http.Request) {
			w.sse()
			w.data(evRunStarted, terminal, evMsgStart, evMsgContent, evRunError, evRunFinished)
			w.hold(r) // the remote keeps the stream open
		})
		s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL}), aguiclient.Input{Text: "x"})
		evs := drain(s)
		if len(evs) != 2 || evs[1] != s.Terminal() || s.Err() != nil {
			t.Fatalf("got %v, %v", typesOf(evs), s.Err())
		}
		// The client hung up right after the terminal event.
		rm.waitGone(t)
	}
}

func TestSilentRemote(t *testing.T) {
	leakCheck(t)
	silent := func(w *flushWriter, r *http.Request) {
		w.sse()
		w.data(evRunStarted)
		w.hold(r)
	}
	t.Run("IdleTimeout", func(t *testing.T) {
		rm := newRemote(t, silent)
		s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL, IdleTimeout: 50 * time.Millisecond}), aguiclient.Input{Text: "x"})
		evs := drain(s)
		err := s.Err()
		if len(evs) != 1 || !errors.Is(err, clienterr.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "IdleTimeout") {
			t.Fatalf("got %v, %v", typesOf(evs), err)
		}
		rm.waitGone(t)
	})
	// The next two run in a synctest bubble over an in-memory connection:
	// the sleeps below are the remote's pace and the consumer's pause on the
	// bubble's clock, so the idle timer's verdict does not depend on how
	// loaded the machine is.
	t.Run("keep-alives reset the idle clock", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := pipeClient(t, aguiclient.Options{IdleTimeout: 400 * time.Millisecond}, func(w io.Writer) {
				writeSSE(w, "data: "+evRunStarted+"\n\n")
				for range 20 { // 1s of keep-alives, far longer than IdleTimeout
					time.Sleep(50 * time.Millisecond)
					if !writeSSE(w, ": keep-alive\n\n") {
						return
					}
				}
				writeSSE(w, "data: "+evRunFinished+"\n\n")
			})
			s := run(t, c, aguiclient.Input{Text: "x"})
			if evs := drain(s); len(evs) != 2 || s.Err() != nil {
				t.Fatalf("got %v, %v", typesOf(evs), s.Err())
			}
		})
	})
	t.Run("the consumer's own pauses do not count", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := pipeClient(t, aguiclient.Options{IdleTimeout: 20 * time.Millisecond}, func(w io.Writer) {
				writeSSE(w, "data: "+evRunStarted+"\n\ndata: "+evRunFinished+"\n\n")
			})
			s := run(t, c, aguiclient.Input{Text: "x"})
			if !s.Next() {
				t.Fatal(s.Err())
			}
			time.Sleep(100 * time.Millisecond) // the consumer is busy for 5 × IdleTimeout
			if !s.Next() || s.Err() != nil {
				t.Fatalf("a slow consumer was timed out: %v", s.Err())
			}
		})
	})
	t.Run("caller deadline", func(t *testing.T) {
		rm := newRemote(t, silent)
		c := newClient(t, aguiclient.Options{EndpointURL: rm.URL, IdleTimeout: -1})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		s, err := c.Run(ctx, aguiclient.Input{Text: "x"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		drain(s)
		if err := s.Err(); !errors.Is(err, clienterr.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Err = %v", err)
		}
		rm.waitGone(t)
	})
	t.Run("ConnectTimeout", func(t *testing.T) {
		rm := newRemote(t, func(w *flushWriter, r *http.Request) { w.hold(r) }) // never answers
		c := newClient(t, aguiclient.Options{EndpointURL: rm.URL, ConnectTimeout: 50 * time.Millisecond})
		_, err := c.Run(testCtx(t), aguiclient.Input{Text: "x"})
		var e *clienterr.Error
		if !errors.As(err, &e) || e.Kind != clienterr.KindTimeout || e.Op != "run" || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
		rm.waitGone(t)
	})
}

func TestCancellationAbortsTheRequest(t *testing.T) {
	leakCheck(t)
	slow := func(w *flushWriter, r *http.Request) {
		w.sse()
		w.data(evRunStarted, evMsgStart)
		w.hold(r)
	}
	t.Run("Close", func(t *testing.T) {
		rm := newRemote(t, slow)
		s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL}), aguiclient.Input{Text: "x"})
		if !s.Next() {
			t.Fatal(s.Err())
		}
		_ = s.Close()
		rm.waitGone(t)
		if s.Next() || !errors.Is(s.Err(), clienterr.ErrCanceled) || !errors.Is(s.Err(), context.Canceled) {
			t.Fatalf("after Close: Err = %v", s.Err())
		}
		_ = s.Close() // idempotent
	})
	t.Run("Close while Next blocks", func(t *testing.T) {
		rm := newRemote(t, slow)
		s := run(t, newClient(t, aguiclient.Options{EndpointURL: rm.URL}), aguiclient.Input{Text: "x"})
		s.Next()
		s.Next()
		done := make(chan bool)
		go func() { done <- s.Next() }()
		_ = s.Close()
		if <-done || !errors.Is(s.Err(), clienterr.ErrCanceled) {
			t.Fatalf("Next = true or Err = %v", s.Err())
		}
		rm.waitGone(t)
	})
	t.Run("context", func(t *testing.T) {
		rm := newRemote(t, slow)
		c := newClient(t, aguiclient.Options{EndpointURL: rm.URL})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := c.Run(ctx, aguiclient.Input{Text: "x"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		n := 0
		for s.Next() {
			if n++; n == 2 {
				cancel()
			}
		}
		if n != 2 || !errors.Is(s.Err(), clienterr.ErrCanceled) || !errors.Is(s.Err(), context.Canceled) {
			t.Fatalf("%d events, Err = %v", n, s.Err())
		}
		rm.waitGone(t)
	})
	t.Run("context cancelled before the headers", func(t *testing.T) {
		arrived := make(chan struct{}, 1)
		rm := newRemote(t, func(w *flushWriter, r *http.Request) {
			arrived <- struct{}{}
			w.hold(r)
		})
		c := newClient(t, aguiclient.Options{EndpointURL: rm.URL})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			// The remote has the request and sends no headers: cancel now.
			<-arrived
			cancel()
		}()
		_, err := c.Run(ctx, aguiclient.Input{Text: "x"})
		if !errors.Is(err, clienterr.ErrCanceled) || clienterr.KindOf(err) != clienterr.KindCanceled {
			t.Fatalf("err = %v", err)
		}
		rm.waitGone(t)
	})
}
