package a2a

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/errordetails"
)

// jsonrpcStreams is a2a-go's JSON-RPC transport (A2A 1.0) with its two
// streaming methods read here. a2a-go decodes every streamed event several
// times over (the JSON-RPC envelope, then the stream response, then each
// nested part, each pass re-validating its input) through a 64 KiB line
// buffer per stream. Here the SSE stream is read through a small buffer and
// an artifact update, the event every chunk of a remote's output arrives
// in, is decoded in one pass. Every other event, and anything the one pass
// does not take as is, is decoded exactly as a2a-go does, so the events and
// errors are a2a-go's (docs/design.md#secrets: the reads stay bounded by the
// client's limiter underneath). The other methods are a2a-go's.
type jsonrpcStreams struct {
	a2aclient.Transport
	url string
	hc  *http.Client
}

// jsonrpcStreamTransport is the factory of [jsonrpcStreams] over hc.
func jsonrpcStreamTransport(hc *http.Client) a2aclient.TransportFactory {
	return a2aclient.TransportFactoryFn(func(_ context.Context, _ *sdk.AgentCard, iface *sdk.AgentInterface) (a2aclient.Transport, error) {
		return &jsonrpcStreams{Transport: a2aclient.NewJSONRPCTransport(iface.URL, hc), url: iface.URL, hc: hc}, nil
	})
}

// The JSON-RPC methods of the two streams (a2a-go's internal/jsonrpc).
const (
	methodMessageStream   = "SendStreamingMessage"
	methodSubscribeToTask = "SubscribeToTask"
)

// SendStreamingMessage implements a2aclient.Transport.
func (t *jsonrpcStreams) SendStreamingMessage(ctx context.Context, params a2aclient.ServiceParams, req *sdk.SendMessageRequest) iter.Seq2[sdk.Event, error] {
	return t.stream(ctx, methodMessageStream, params, req)
}

// SubscribeToTask implements a2aclient.Transport.
func (t *jsonrpcStreams) SubscribeToTask(ctx context.Context, params a2aclient.ServiceParams, req *sdk.SubscribeToTaskRequest) iter.Seq2[sdk.Event, error] {
	return t.stream(ctx, methodSubscribeToTask, params, req)
}

func (t *jsonrpcStreams) stream(ctx context.Context, method string, params a2aclient.ServiceParams, payload any) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		body, err := t.send(ctx, method, params, payload)
		if err != nil {
			yield(nil, err)
			return
		}
		defer body.Close()
		r := newSSEDataReader(body)
		var sc artifactScanner
		for {
			data, err := r.next()
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(nil, fmt.Errorf("SSE stream error: %w", err))
				return
			}
			ev, err := decodeStreamed(data, &sc)
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// send posts the JSON-RPC request as a2a-go does and returns the body of a
// 200 answer.
func (t *jsonrpcStreams) send(ctx context.Context, method string, params a2aclient.ServiceParams, payload any) (io.ReadCloser, error) {
	var id [16]byte
	_, _ = rand.Read(id[:])
	reqBody, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
		ID      string `json:"id"`
	}{"2.0", method, payload, hex.EncodeToString(id[:])})
	if err != nil {
		return nil, fmt.Errorf("failed to marshal request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(reqBody))
	if err != nil {
		return nil, fmt.Errorf("failed to create HTTP request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, vals := range params {
		for _, v := range vals {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := t.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to send HTTP request: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("unexpected HTTP status: %s", resp.Status)
	}
	return resp.Body, nil
}

// maxSSELine is a2a-go's bound on one SSE line (its scanner's maximum
// token); the client's limiter usually refuses an event long before.
const maxSSELine = 10 << 20

// sseDataReader yields the data of each SSE event as a2a-go's parser does:
// lines end at "\n" (a "\r" before it is dropped), "data:" lines (one space
// after the colon dropped) of one event are joined by "\n", a blank line or
// the end of the stream ends an event, other lines are ignored. The
// returned data is valid until the next call.
type sseDataReader struct {
	br   *bufio.Reader
	line []byte
	data []byte
}

// sseReadBuffer is the buffer of an SSE data reader: small, because every
// active stream holds it while it waits for the next event, and the HTTP
// response below it is buffered already; longer lines are read in pieces.
const sseReadBuffer = 1 << 10

func newSSEDataReader(r io.Reader) *sseDataReader {
	return &sseDataReader{br: bufio.NewReaderSize(r, sseReadBuffer)}
}

func (r *sseDataReader) next() ([]byte, error) {
	r.data = r.data[:0]
	// As a2a-go's parser: an event is its data so far, and it is only
	// yielded when that is not empty (an empty "data:" line adds nothing,
	// not even the "\n" that joins it to the next).
	for {
		line, err := r.readLine()
		if err != nil && (err != io.EOF || len(line) == 0) {
			if err == io.EOF && len(r.data) > 0 {
				return r.data, nil
			}
			return nil, err
		}
		if len(line) == 0 {
			if len(r.data) > 0 {
				return r.data, nil
			}
			continue
		}
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			rest, _ = bytes.CutPrefix(rest, []byte(" "))
			if len(r.data) > 0 {
				r.data = append(r.data, '\n')
			}
			r.data = append(r.data, rest...)
		}
		if err == io.EOF { // a last line without its newline
			if len(r.data) > 0 {
				return r.data, nil
			}
			return nil, io.EOF
		}
	}
}

// readLine returns the next line without its "\n" (and "\r\n"); a last
// line without a newline comes with io.EOF.
func (r *sseDataReader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(r.line)+len(chunk) > maxSSELine {
				return nil, bufio.ErrTooLong
			}
			r.line = append(r.line, chunk...)
			continue
		}
		var line []byte
		if len(r.line) > 0 {
			r.line = append(r.line, chunk...)
			line = r.line
		} else {
			line = chunk // valid until the next read: used before it
		}
		if len(line) > maxSSELine+1 {
			return nil, bufio.ErrTooLong
		}
		if err != nil {
			line = dropCR(line)
			return line, err
		}
		return dropCR(line[:len(line)-1]), nil
	}
}

func dropCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}

// decodeStreamed decodes one SSE data payload of a JSON-RPC stream: in one
// pass when it is an artifact update a2a-go would decode to the same event
// (by the stream's scanner for the common shape, else by encoding/json),
// else as a2a-go does.
func decodeStreamed(data []byte, sc *artifactScanner) (sdk.Event, error) {
	if ev := sc.decode(data); ev != nil {
		return ev, nil
	}
	if ev := decodeArtifactUpdate(data); ev != nil {
		return ev, nil
	}
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      string          `json:"id"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *rpcError       `json:"error,omitempty"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Errorf("failed to parse SSE data: %w", err)
	}
	if resp.Error != nil {
		return nil, resp.Error.toError()
	}
	var sr sdk.StreamResponse
	if err := json.Unmarshal(resp.Result, &sr); err != nil {
		return nil, err
	}
	return sr.Event, nil
}

// rpcError is a JSON-RPC error as a2a-go reads it (internal/jsonrpc.Error).
type rpcError struct {
	Code    int                   `json:"code"`
	Message string                `json:"message"`
	Data    []*errordetails.Typed `json:"data,omitempty"`
}

// toError is a2a-go's internal/jsonrpc.FromJSONRPCError.
func (e *rpcError) toError() error {
	base, ok := jsonrpcCodes[e.Code]
	if !ok {
		base = sdk.ErrInternalError
	}
	msg := e.Message
	if msg == "" {
		msg = base.Error()
	}
	result := sdk.NewError(base, msg)
	var typed []*errordetails.Typed
	first := true
	for _, d := range e.Data {
		if d == nil {
			continue
		}
		if d.TypeURL == errordetails.ErrorInfoType {
			if m, ok := stringMap(d.Value["metadata"]); ok {
				result = result.WithErrorInfoMeta(m)
			}
			continue
		}
		if first {
			result = result.WithDetails(d.Value)
			first = false
		}
		typed = append(typed, d)
	}
	result.TypedDetails = append(result.TypedDetails, typed...)
	return result
}

// stringMap keeps the string values of a metadata object (a2a-go's
// internal/utils.ToStringMap).
func stringMap(raw any) (map[string]string, bool) {
	switch m := raw.(type) {
	case map[string]string:
		return m, true
	case map[string]any:
		out := make(map[string]string, len(m))
		for k, v := range m {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
		return out, true
	}
	return nil, false
}

// The one-pass shape of {"jsonrpc", "id", "result": {"artifactUpdate": ...}}:
// the fields of a2a-go's types with plain Go types for the part union.
type (
	fastResponse struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      string          `json:"id"`
		Result  *fastResult     `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	fastResult struct {
		ArtifactUpdate *fastArtifactUpdate `json:"artifactUpdate"`
		Message        json.RawMessage     `json:"message"`
		Task           json.RawMessage     `json:"task"`
		StatusUpdate   json.RawMessage     `json:"statusUpdate"`
	}
	fastArtifactUpdate struct {
		Append    bool           `json:"append"`
		Artifact  *fastArtifact  `json:"artifact"`
		ContextID string         `json:"contextId"`
		LastChunk bool           `json:"lastChunk"`
		TaskID    sdk.TaskID     `json:"taskId"`
		Metadata  map[string]any `json:"metadata"`
	}
	fastArtifact struct {
		ID          sdk.ArtifactID `json:"artifactId"`
		Description string         `json:"description"`
		Extensions  []string       `json:"extensions"`
		Metadata    map[string]any `json:"metadata"`
		Name        string         `json:"name"`
		Parts       []*fastPart    `json:"parts"`
	}
	fastPart struct {
		Text      *string        `json:"text"`
		Raw       *[]byte        `json:"raw"`
		Data      *any           `json:"data"`
		URL       *string        `json:"url"`
		Filename  string         `json:"filename"`
		MediaType string         `json:"mediaType"`
		Metadata  map[string]any `json:"metadata"`
	}
)

// decodeArtifactUpdate returns the artifact update data holds, decoded in
// one pass, or nil when data is anything else or anything a2a-go would
// decode differently (an error, another event, a part that is not exactly
// one of text, raw, data and url): decodeStreamed then decodes it as
// a2a-go does.
func decodeArtifactUpdate(data []byte) sdk.Event {
	var resp fastResponse
	if json.Unmarshal(data, &resp) != nil || !isAbsent(resp.Error) || resp.Result == nil {
		return nil
	}
	res := resp.Result
	if res.ArtifactUpdate == nil || !isAbsent(res.Message) || !isAbsent(res.Task) || !isAbsent(res.StatusUpdate) {
		return nil
	}
	u := res.ArtifactUpdate
	ev := &sdk.TaskArtifactUpdateEvent{Append: u.Append, ContextID: u.ContextID, LastChunk: u.LastChunk, TaskID: u.TaskID, Metadata: u.Metadata}
	if a := u.Artifact; a != nil {
		art := &sdk.Artifact{ID: a.ID, Description: a.Description, Extensions: a.Extensions, Metadata: a.Metadata, Name: a.Name}
		if a.Parts != nil {
			art.Parts = make(sdk.ContentParts, len(a.Parts))
		}
		for i, p := range a.Parts {
			if p == nil {
				continue
			}
			part := &sdk.Part{Filename: p.Filename, MediaType: p.MediaType, Metadata: p.Metadata}
			n := 0
			if p.Text != nil {
				part.Content = sdk.Text(*p.Text)
				n++
			}
			if p.Raw != nil {
				part.Content = sdk.Raw(*p.Raw)
				n++
			}
			if p.Data != nil {
				part.Content = sdk.Data{Value: *p.Data}
				n++
			}
			if p.URL != nil && *p.URL != "" {
				part.Content = sdk.URL(*p.URL)
				n++
			}
			if n != 1 {
				return nil // a2a-go's error, through its decoding
			}
			art.Parts[i] = part
		}
		ev.Artifact = art
	}
	return ev
}

// isAbsent: a field that was missing or null.
func isAbsent(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}
