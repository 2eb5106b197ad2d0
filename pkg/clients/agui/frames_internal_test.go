package agui

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
)

type gotFrame struct{ Event, ID, Data string }

// readAll returns the frames of an SSE text and the error that ended it.
func readAll(r io.Reader, limit int) ([]gotFrame, error) {
	fr := newFrameReader(r, limit)
	var out []gotFrame
	for {
		f, err := fr.next()
		if err != nil {
			return out, err
		}
		out = append(out, gotFrame{f.Event, f.ID, string(f.Data)})
	}
}

func TestFrameReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []gotFrame
		err  error
	}{
		{"single", "data: {}\n\n", []gotFrame{{"", "", "{}"}}, io.EOF},
		{"no space after colon", "data:{}\n\n", []gotFrame{{"", "", "{}"}}, io.EOF},
		{"only one leading space removed", "data:  x\n\n", []gotFrame{{"", "", " x"}}, io.EOF},
		{"multi-line data", "data: {\"a\":\ndata: 1}\n\n", []gotFrame{{"", "", "{\"a\":\n1}"}}, io.EOF},
		{"CRLF", "id: 7\r\ndata: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", []gotFrame{{"", "7", "a\nb"}, {"", "7", "c"}}, io.EOF},
		{"lone CR", "data: a\rdata: b\r\rdata: c\r\r", []gotFrame{{"", "", "a\nb"}, {"", "", "c"}}, io.EOF},
		{"mixed line ends", "data: a\r\n\ndata: b\r\r\n", []gotFrame{{"", "", "a"}, {"", "", "b"}}, io.EOF},
		{"comments and keep-alives", ": keep-alive\n\n:\n\ndata: x\n: inside\ndata: y\n\n: bye\n\n", []gotFrame{{"", "", "x\ny"}}, io.EOF},
		{"event and id lines", "event: message\nid: 1\ndata: a\n\nevent: other\ndata: b\n\nid\ndata: c\n\n",
			[]gotFrame{{"message", "1", "a"}, {"other", "1", "b"}, {"", "", "c"}}, io.EOF},
		{"id with NUL ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n", []gotFrame{{"", "1", "a"}, {"", "1", "b"}}, io.EOF},
		{"blank lines without data dispatch nothing", "\n\nevent: x\n\nid: 4\n\ndata: a\n\n", []gotFrame{{"", "4", "a"}}, io.EOF},
		{"retry and unknown fields ignored", "retry: 100\nfoo: bar\nbaz\ndata: a\n\n", []gotFrame{{"", "", "a"}}, io.EOF},
		{"empty data line", "data\n\n", []gotFrame{{"", "", ""}}, io.EOF},
		{"BOM", "\xEF\xBB\xBFdata: a\n\n", []gotFrame{{"", "", "a"}}, io.EOF},
		{"unterminated last frame is discarded", "data: a\n\ndata: b\n", []gotFrame{{"", "", "a"}}, io.EOF},
		{"unterminated last line is discarded", "data: a\n\ndata: b", []gotFrame{{"", "", "a"}}, io.EOF},
		{"line over the limit", "data: " + strings.Repeat("x", 64) + "\n\n", nil, ErrFrameTooLarge},
		{"comment over the limit", ":" + strings.Repeat("x", 64) + "\n\n", nil, ErrFrameTooLarge},
		{"frame over the limit", strings.Repeat("data: 0123456789\n", 6) + "\n", nil, ErrFrameTooLarge},
		{"frame at the limit", "data: 0123456789012345678901234567890123456789012345678901234567\n\n",
			[]gotFrame{{"", "", "0123456789012345678901234567890123456789012345678901234567"}}, io.EOF},
		{"many comments do not add up", strings.Repeat(": 0123456789\n", 20) + "data: a\n\n", []gotFrame{{"", "", "a"}}, io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"whole", "one byte at a time"} {
				var r io.Reader = strings.NewReader(tc.in)
				if mode != "whole" {
					r = iotest.OneByteReader(r)
				}
				got, err := readAll(r, 64)
				if !reflect.DeepEqual(got, tc.want) || !errors.Is(err, tc.err) {
					t.Errorf("%s: got %q, %v; want %q, %v", mode, got, err, tc.want, tc.err)
				}
			}
		})
	}
}

func TestFrameReaderPassesReadErrors(t *testing.T) {
	boom := errors.New("boom")
	got, err := readAll(io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom)), 64)
	if len(got) != 1 || !errors.Is(err, boom) {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestDecodeEvent(t *testing.T) {
	t.Run("known types decode as events.EventFromJSON does", func(t *testing.T) {
		for typ := range sdkDecoded {
			data := []byte(`{"type":"` + string(typ) + `","timestamp":1}`)
			want, err := events.EventFromJSON(data)
			if err != nil {
				t.Fatalf("%s: the SDK no longer decodes it: %v", typ, err)
			}
			got, err := DecodeEvent(data)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: got %#v, %v; want %#v", typ, got, err, want)
			}
		}
	})
	t.Run("TOOL_CALL_CHUNK", func(t *testing.T) {
		ev, err := DecodeEvent([]byte(`{"type":"TOOL_CALL_CHUNK","toolCallId":"c1","delta":"{"}`))
		c, ok := ev.(*events.ToolCallChunkEvent)
		if err != nil || !ok || *c.ToolCallID != "c1" || *c.Delta != "{" || c.Type() != events.EventTypeToolCallChunk {
			t.Fatalf("got %#v, %v", ev, err)
		}
	})
	t.Run("unknown types pass through", func(t *testing.T) {
		for _, data := range []string{
			`{"type":"SUBAGENT_STARTED","subagentRunId":"s1","name":"research","runId":"r1","threadId":"t1","timestamp":17}`,
			`{"type":"THINKING_START"}`,
			`{"type":"SOMETHING_NEW","nested":{"a":[1,2]}}`,
		} {
			ev, err := DecodeEvent([]byte(data))
			if err != nil {
				t.Fatalf("%s: %v", data, err)
			}
			u, ok := ev.(*UnknownEvent)
			if !ok || string(u.Raw) != data || u.Validate() != nil {
				t.Fatalf("%s: got %#v", data, ev)
			}
			out, _ := u.ToJSON()
			if string(out) != data {
				t.Errorf("ToJSON = %s", out)
			}
			var env struct{ Type string }
			_ = json.Unmarshal([]byte(data), &env)
			if string(u.Type()) != env.Type {
				t.Errorf("Type = %s, want %s", u.Type(), env.Type)
			}
		}
		ev, _ := DecodeEvent([]byte(`{"type":"SUBAGENT_STARTED","subagentRunId":"s1","runId":"r1","threadId":"t1","timestamp":17}`))
		u := ev.(*UnknownEvent)
		if u.RunID() != "r1" || u.ThreadID() != "t1" || u.Timestamp() == nil || *u.Timestamp() != 17 {
			t.Errorf("attribution: run %q thread %q ts %v", u.RunID(), u.ThreadID(), u.Timestamp())
		}
		if m, err := u.Fields(); err != nil || m["subagentRunId"] != "s1" {
			t.Errorf("Fields = %v, %v", m, err)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		for _, data := range []string{
			``, `{`, `null`, `[]`, `"RUN_STARTED"`, `42`, `{}`, `{"type":""}`, `{"type":7}`,
			`{"type":"RUN_STARTED"} trailing`, `{"type":"TEXT_MESSAGE_CONTENT","delta":5}`,
			`{"type":"RUN_STARTED","runId":{}}`, `{"type":"TOOL_CALL_CHUNK","delta":[]}`,
		} {
			if ev, err := DecodeEvent([]byte(data)); !errors.Is(err, ErrMalformedEvent) {
				t.Errorf("%q: got %#v, %v; want ErrMalformedEvent", data, ev, err)
			}
		}
	})
}

func TestExcerpt(t *testing.T) {
	secret := "s3cr3t-token"
	if got := excerpt([]byte("bad token s3cr3t-token\n\tline2\x00"), false, secret); got != "bad token [REDACTED] line2" {
		t.Errorf("excerpt = %q", got)
	}
	// A truncated body whose tail holds the start of the secret.
	if got := excerpt([]byte("xxxx s3cr3t-to"), true, secret); strings.Contains(got, "s3cr") {
		t.Errorf("excerpt leaks a secret prefix: %q", got)
	}
	long := excerpt(bytes.Repeat([]byte("é"), 2000), false, "")
	if len(long) > maxExcerpt+len("…") || !strings.HasSuffix(long, "…") {
		t.Errorf("long excerpt: %d bytes", len(long))
	}
}

// FuzzFrameParser feeds arbitrary bytes to the frame reader and the event
// decoder: they must never panic, every frame must respect the limit, and
// every decoded event must have a type.
func FuzzFrameParser(f *testing.F) {
	seeds := []string{
		"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
		"id: 1\r\ndata: {\"type\":\r\ndata: \"RUN_FINISHED\"}\r\n\r\n",
		"data: a\rdata: b\r\r",
		": keep-alive\n\n:\n\n",
		"\xEF\xBB\xBFevent: x\nid: 2\x00\nretry: 5\ndata\n\n",
		"data: {\"type\":\"SUBAGENT_STARTED\",\"subagentRunId\":\"s\"}\n\n",
		"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"delta\":5}\n\n",
		"data: null\n\ndata: []\n\ndata: {}\n\n",
		"data: " + strings.Repeat("x", 300) + "\n\n",
		"data: {\"type\":\"RUN_ERROR\",\"message\":\"m\"}\n\ndata: {\"type\":\"CUSTOM\"}\n\n",
		"data: a\n\ndata: b",
		"\r\n\r\r\n\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const limit = 256
		fr := newFrameReader(bytes.NewReader(in), limit)
		for range len(in) + 1 {
			frame, err := fr.next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrFrameTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(frame.Data) > limit {
				t.Fatalf("frame of %d bytes passed a %d-byte limit", len(frame.Data), limit)
			}
			ev, err := DecodeEvent(frame.Data)
			if err != nil {
				if !errors.Is(err, ErrMalformedEvent) {
					t.Fatalf("decode error %v does not wrap ErrMalformedEvent", err)
				}
				continue
			}
			if ev.Type() == "" {
				t.Fatalf("decoded an event without a type from %q", frame.Data)
			}
			_ = IsTerminal(ev)
		}
		t.Fatal("the reader produced more frames than input bytes")
	})
}
