package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
)

// streamBoth reads one SSE response body through a2a-go's own JSON-RPC
// transport and through jsonrpcStreams.
func streamBoth(t testing.TB, body string) (want, got []sdk.Event, wantErr, gotErr error) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	read := func(tr a2aclient.Transport) (evs []sdk.Event, err error) {
		req := &sdk.SendMessageRequest{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("hi"))}
		for ev, e := range tr.SendStreamingMessage(context.Background(), nil, req) {
			if e != nil {
				return evs, e
			}
			evs = append(evs, ev)
		}
		return evs, nil
	}
	want, wantErr = read(a2aclient.NewJSONRPCTransport(srv.URL, srv.Client()))
	got, gotErr = read(&jsonrpcStreams{Transport: a2aclient.NewJSONRPCTransport(srv.URL, srv.Client()), url: srv.URL, hc: srv.Client()})
	return
}

// sameErrors: both nil, or both errors of the same A2A kind (the texts of
// encoding/json's errors name the Go types, which differ).
func sameErrors(a, b error) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	if a == nil {
		return true
	}
	for _, s := range append([]error{sdk.ErrInternalError}, sdkSentinels...) {
		if errors.Is(a, s) != errors.Is(b, s) {
			return false
		}
	}
	var ea, eb *sdk.Error
	if errors.As(a, &ea) != errors.As(b, &eb) {
		return false
	}
	return ea == nil || reflect.DeepEqual(ea, eb) // a JSON-RPC error: the same error, details included
}

func checkSame(t testing.TB, name, body string) {
	t.Helper()
	want, got, wantErr, gotErr := streamBoth(t, body)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: events differ from a2a-go's:\n got %#v\nwant %#v", name, got, want)
	}
	if !sameErrors(gotErr, wantErr) {
		t.Errorf("%s: error %v, a2a-go's %v", name, gotErr, wantErr)
	}
}

const artifactUpdateJSON = `{"jsonrpc":"2.0","id":"1","result":{"artifactUpdate":{"taskId":"t1","contextId":"c1","append":true,"lastChunk":false,` +
	`"artifact":{"artifactId":"assistant-output","name":"assistant-output","description":"d","extensions":["x"],"metadata":{"k":1},` +
	`"parts":[{"text":"hello <&> \u2028","mediaType":"text/plain","metadata":{"m":"v"}},{"url":"https://x.example/a","filename":"a"},{"raw":"aGk="},{"data":{"n":[1,2]}}]},"metadata":{"seq":3}}}}`

// The stream reader and its one-pass decoding yield exactly a2a-go's
// events and errors: for the recorded @a2a-js/sdk streams, artifact
// updates of every part kind, the other events, JSON-RPC errors, malformed
// payloads and the SSE framing's corners.
func TestJSONRPCStreamsMatchA2AGo(t *testing.T) {
	cases := map[string]string{
		"artifact update":            "data: " + artifactUpdateJSON + "\n\n",
		"crlf and comments":          ": hi\r\nevent: message\r\nid: 7\r\ndata: " + artifactUpdateJSON + "\r\n\r\n",
		"no space, no final blank":   "data:" + artifactUpdateJSON,
		"multi-line data":            "data: {\"jsonrpc\":\"2.0\",\"id\":\"1\",\ndata: \"result\":{\"artifactUpdate\":{\"taskId\":\"t\",\"artifact\":{\"artifactId\":\"a\",\"parts\":[{\"text\":\"x\"}]}}}}\n\n",
		"null parts and artifact":    `data: {"jsonrpc":"2.0","id":"1","result":{"artifactUpdate":{"taskId":"t","artifact":{"artifactId":"a","parts":[null,{"text":""}]}}}}` + "\n\ndata: " + `{"jsonrpc":"2.0","id":"1","result":{"artifactUpdate":{"taskId":"t","artifact":null}}}` + "\n\n",
		"empty url part":             `data: {"jsonrpc":"2.0","id":"1","result":{"artifactUpdate":{"taskId":"t","artifact":{"artifactId":"a","parts":[{"url":""}]}}}}` + "\n\n",
		"two contents in a part":     `data: {"jsonrpc":"2.0","id":"1","result":{"artifactUpdate":{"taskId":"t","artifact":{"artifactId":"a","parts":[{"text":"a","url":"u"}]}}}}` + "\n\n",
		"two events in a result":     `data: {"jsonrpc":"2.0","id":"1","result":{"artifactUpdate":{"taskId":"t"},"task":{"id":"t","status":{"state":"TASK_STATE_WORKING"}}}}` + "\n\n",
		"status update":              `data: {"jsonrpc":"2.0","id":"1","result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}}` + "\n\n",
		"json-rpc error":             `data: {"jsonrpc":"2.0","id":"1","error":{"code":-32001,"message":"no such task","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"R","metadata":{"a":"b","n":1}},{"@type":"x","v":1}]}}` + "\n\n",
		"unknown error code":         `data: {"jsonrpc":"2.0","id":"1","error":{"code":7,"message":""}}` + "\n\n",
		"numeric id":                 `data: {"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"taskId":"t"}}}` + "\n\n",
		"not json":                   "data: nope\n\n",
		"no result":                  `data: {"jsonrpc":"2.0","id":"1"}` + "\n\n",
		"case-insensitive keys":      `data: {"JSONRPC":"2.0","ID":"1","Result":{"ArtifactUpdate":{"TaskId":"t","Artifact":{"ArtifactId":"a","Parts":[{"Text":"x"}]}}}}` + "\n\n",
		"duplicate result":           `data: {"jsonrpc":"2.0","id":"1","result":{"task":{"id":"t","status":{"state":"TASK_STATE_WORKING"}}},"result":{"artifactUpdate":{"taskId":"t"}}}` + "\n\n",
		"empty stream":               "",
		"blank lines only":           "\n\n\r\n",
		"lone carriage return lines": "data: " + artifactUpdateJSON + "\r\r\n\n",
	}
	for name, body := range cases {
		checkSame(t, name, body)
	}
	if decodeArtifactUpdate([]byte(artifactUpdateJSON)) == nil {
		t.Error("an artifact update did not take the one-pass decoding")
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "internal", "testkit", "delegationtest", "testdata", "jsa2a", "*", "*.sse"))
	if len(files) == 0 {
		t.Fatal("no recorded @a2a-js/sdk streams found")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, f, string(b))
	}
}

func FuzzJSONRPCStreams(f *testing.F) {
	f.Add("data: " + artifactUpdateJSON + "\n\n")
	f.Add(`data: {"jsonrpc":"2.0","id":"1","result":{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_WORKING"}}}}` + "\r\n\r\ndata: x")
	f.Add(`data: {"jsonrpc":"2.0","id":"1","error":{"code":-32001,"message":"m"}}`)
	f.Fuzz(func(t *testing.T, body string) {
		if len(body) > 1<<16 || strings.Contains(body, "\x00") {
			return
		}
		checkSame(t, "fuzz", body)
	})
}

// BenchmarkJSONRPCStream reads a stream of 48-byte assistant-output chunks
// (the bench remote's shape) through a2a-go's JSON-RPC transport and
// through jsonrpcStreams; ns/op and allocs are per event.
func BenchmarkJSONRPCStream(b *testing.B) {
	const n = 2000
	var body strings.Builder
	for i := range n {
		body.WriteString(`data: {"jsonrpc":"2.0","id":"b8452a17-7a5f-4e1f-b45c-287f9dbe226d","result":{"artifactUpdate":{"taskId":"029d6be3-3e29-487b-8c54-ea8274bbd315",` +
			`"contextId":"2c5a182f-d558-4e53-8c0d-68f26194a81a","artifact":{"artifactId":"assistant-output","name":"assistant-output","parts":[{"text":"48 bytes of text, as the benchmark remote sends`)
		body.WriteString(strings.Repeat("x", i%7))
		body.WriteString(`"}]},"append":true,"lastChunk":false}}}` + "\n\n")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(body.String()))
	}))
	defer srv.Close()
	req := &sdk.SendMessageRequest{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("hi"))}
	for name, tr := range map[string]a2aclient.Transport{
		"a2a-go": a2aclient.NewJSONRPCTransport(srv.URL, srv.Client()),
		"here":   &jsonrpcStreams{Transport: a2aclient.NewJSONRPCTransport(srv.URL, srv.Client()), url: srv.URL, hc: srv.Client()},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			events := 0
			for b.Loop() {
				for _, err := range tr.SendStreamingMessage(context.Background(), nil, req) {
					if err != nil {
						b.Fatal(err)
					}
					events++
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
		})
	}
}

// scanCases are artifact updates the scanner takes, in the shapes remotes
// send them: escapes, non-ASCII and invalid UTF-8, surrogates, nulls,
// unknown keys of every kind, other key orders.
var scanCases = []string{
	`{"jsonrpc":"2.0","id":"1","result":{"artifactUpdate":{"taskId":"t","contextId":"c","append":true,"lastChunk":false,"artifact":{"artifactId":"assistant-output","name":"assistant-output","parts":[{"text":"plain"}]}}}}`,
	` { "result" : { "artifactUpdate" : { "artifact" : { "parts" : [ { "mediaType" : "text/plain" , "text" : "line\nnext \"q\" \\ \/ \b\f\r\t \u00e9 \ud83d\ude00 \ud800 \udc00x \u2028" } ] , "artifactId" : "a" } , "taskId" : "t" } } , "id" : null , "jsonrpc" : "2.0" } `,
	`{"id":"1","result":{"artifactUpdate":{"taskId":"t","append":null,"lastChunk":true,"contextId":null,"artifact":{"artifactId":"a","name":"n","description":"d","parts":[null,{"text":"","filename":"f"}],"extensions":null,"metadata":null}},"task":null,"message":null},"error":null,"extra":{"n":[1,-2.5e+3,0,true,false,null,"s\u0041",{}],"o":{"k":[]}}}`,
	"{\"result\":{\"artifactUpdate\":{\"taskId\":\"t\",\"artifact\":{\"artifactId\":\"a\",\"parts\":[{\"text\":\"caf\xc3\xa9 \xff\xfe bad\"}]}}}}",
	`{"result":{"artifactUpdate":{"taskId":"t","artifact":{"artifactId":"a","parts":[]}}}}`,
	`{"result":{"artifactUpdate":{"taskId":"t","artifact":null}}}`,
}

// The scanner's events are encoding/json's (decodeArtifactUpdate's), and
// it gives up rather than differ.
func TestArtifactScannerMatchesJSON(t *testing.T) {
	var sc artifactScanner
	for i, c := range scanCases {
		got := sc.decode([]byte(c))
		if got == nil {
			t.Errorf("case %d: the scanner gave up on %s", i, c)
			continue
		}
		if want := decodeArtifactUpdate([]byte(c)); !reflect.DeepEqual(got, want) {
			t.Errorf("case %d:\n got %#v\nwant %#v", i, got, want)
		}
	}
	for _, c := range []string{
		`{"result":{"artifactUpdate":{"TaskId":"t"}}}`,                                    // case-folded key
		`{"result":{"artifactUpdate":{"task\u0049d":"t"}}}`,                               // escaped key
		`{"result":{"artifactUpdate":{"taskId":"t","taskId":"u"}}}`,                       // repeated key
		`{"result":{"artifactUpdate":{"taskId":"t","metadata":{"k":1}}}}`,                 // metadata
		`{"result":{"artifactUpdate":{"taskId":1}}}`,                                      // wrong type
		`{"result":{"artifactUpdate":{"taskId":"t","artifact":{"parts":[{"url":"u"}]}}}}`, // not text
		`{"result":{"artifactUpdate":{"taskId":"t"}}} x`,                                  // trailing data
		`{"result":{"artifactUpdate":{"taskId":"t"},"task":{}}}`,                          // two events
		`{"error":{"code":1},"result":{"artifactUpdate":{"taskId":"t"}}}`,                 // an error
		`{"result":{"artifactUpdate":{"taskId":"t\u00"}}}`,                                // bad escape
		`{"result":{"artifactUpdate":{"taskId":"t"},"x":01}}`,                             // bad number
	} {
		if ev := sc.decode([]byte(c)); ev != nil {
			t.Errorf("the scanner took %s", c)
		}
	}
}

func FuzzArtifactScanner(f *testing.F) {
	for _, c := range scanCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var sc artifactScanner
		got := sc.decode([]byte(data))
		if got == nil {
			return
		}
		if want := decodeArtifactUpdate([]byte(data)); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", data, got, want)
		}
		// A second event reusing the first's strings decodes the same.
		if again := sc.decode([]byte(data)); !reflect.DeepEqual(again, got) {
			t.Fatalf("%q decoded twice: %#v then %#v", data, got, again)
		}
	})
}

// FuzzArtifactScannerStrings puts raw fuzz text inside the strings of an
// artifact update (escapes, UTF-8 and all), where remote text lands.
func FuzzArtifactScannerStrings(f *testing.F) {
	f.Add("t", `plain`)
	f.Add(`\u00e9`, `a\nb \"q\" \ud83d\ude00 \ud800 \udc00 \\`)
	f.Add("\xff", "caf\xc3\xa9\t")
	f.Fuzz(func(t *testing.T, id, text string) {
		data := `{"jsonrpc":"2.0","id":"1","result":{"artifactUpdate":{"taskId":"` + id + `","contextId":"c","append":true,` +
			`"artifact":{"artifactId":"` + id + `","name":"assistant-output","parts":[{"text":"` + text + `"}]}}}}`
		var sc artifactScanner
		got := sc.decode([]byte(data))
		want := decodeArtifactUpdate([]byte(data))
		if got != nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", data, got, want)
		}
		if got == nil && want != nil && !strings.ContainsAny(id+text, "\x00") && validJSONString(id) && validJSONString(text) {
			// Valid strings of the common shape must not fall back.
			t.Fatalf("the scanner gave up on %q", data)
		}
	})
}

// validJSONString: s is the inside of a JSON string that needs no unusual
// handling (no raw control characters, quotes only escaped).
func validJSONString(s string) bool {
	return json.Valid([]byte(`"` + s + `"`))
}
