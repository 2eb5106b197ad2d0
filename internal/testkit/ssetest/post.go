package ssetest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// PostRequest is the request an AG-UI client (@ag-ui/client's HttpAgent,
// CopilotKit) sends to start a run: a POST of the JSON RunAgentInput body
// to url with Content-Type application/json and Accept text/event-stream.
// header adds more headers as name, value pairs.
func PostRequest(ctx context.Context, t testing.TB, url, body string, header ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// Post sends [PostRequest] with the default client and returns the
// response as it came, whatever its status; the caller closes its body.
func Post(t testing.TB, url, body string, header ...string) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(PostRequest(context.Background(), t, url, body, header...))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// PostAll sends [PostRequest] bounded by ctx and reads the whole SSE
// stream. It fails the test unless the answer is 200 with Content-Type
// text/event-stream and the stream is read to its end.
func PostAll(ctx context.Context, t testing.TB, url, body string) []byte {
	t.Helper()
	resp, err := http.DefaultClient.Do(PostRequest(ctx, t, url, body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("POST %s: %d %s: %s", url, resp.StatusCode, resp.Header.Get("Content-Type"), out)
	}
	if err != nil {
		t.Fatalf("POST %s: reading the stream: %v\n%s", url, err, out)
	}
	return out
}
