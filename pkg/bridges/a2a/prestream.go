package a2a

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// legacyJSONRPC reports whether a JSON-RPC request names a 0.3 method
// ("message/send", "tasks/get", ...; the 1.0 names have no slash). It
// reads the body, bounded by the server's request limit, and puts it back.
func legacyJSONRPC(r *http.Request) bool {
	b, ok := peekBody(r)
	var req struct {
		Method string `json:"method"`
	}
	return ok && json.Unmarshal(b, &req) == nil && strings.Contains(req.Method, "/")
}

// peekBody reads r's body and puts it back for the next reader.
func peekBody(r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, false
	}
	b, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{err}))
	return b, err == nil
}

// protoFieldNames rewrites the proto field names ("history_length") of a
// 1.0 JSON-RPC request's params, and of params.configuration, to their JSON
// names ("historyLength"): ProtoJSON readers accept both, and some clients
// send the former, which a2a-go's decoder would ignore. Only these two
// fixed-schema objects are rewritten; messages, metadata and data parts
// (which hold free-form keys) are left alone.
func protoFieldNames(r *http.Request) {
	b, ok := peekBody(r)
	if !ok || !bytes.Contains(b, []byte("_")) {
		return
	}
	var req map[string]json.RawMessage
	if json.Unmarshal(b, &req) != nil {
		return
	}
	params, changed := camelKeys(req["params"])
	if params == nil {
		return
	}
	if cfg, c := camelKeys(params["configuration"]); c {
		params["configuration"], _ = json.Marshal(cfg)
		changed = true
	}
	if !changed {
		return
	}
	req["params"], _ = json.Marshal(params)
	if out, err := json.Marshal(req); err == nil {
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(out)), int64(len(out))
	}
}

// camelKeys decodes a JSON object and renames its snake_case keys to
// lowerCamelCase (unless that key is present too).
func camelKeys(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil, false
	}
	changed := false
	for k, v := range obj {
		if !strings.Contains(k, "_") {
			continue
		}
		parts := strings.Split(k, "_")
		for i := 1; i < len(parts); i++ {
			if parts[i] != "" {
				parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
			}
		}
		camel := strings.Join(parts, "")
		if _, taken := obj[camel]; !taken {
			obj[camel] = v
		}
		delete(obj, k)
		changed = true
	}
	return obj, changed
}

// errReader replays a read error (io.EOF when the body was read whole).
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

// maxHeldEvent bounds what preStream holds while it waits for the end of a
// stream's first event; a longer first event is passed through.
const maxHeldEvent = 1 << 20

// preStream makes a streaming call (SendStreamingMessage, SubscribeToTask)
// that fails before its first event answer as a plain error, not as an
// event stream whose only event is the error: a JSON-RPC error response
// (HTTP 200, application/json) on JSON-RPC, the google.rpc.Status body
// with its HTTP status on HTTP+JSON. This is what the A2A TCK, the Python
// SDK and @a2a-js/sdk expect; errors after the first event stay in the
// stream. It holds an event stream's status line and first event until
// that event is complete; every other response passes through.
type preStream struct {
	w      http.ResponseWriter
	rest   bool
	state  int // undecided, passing or replaced
	status int // the held status (0: none yet)
	held   []byte
}

const (
	undecided = iota
	passing
	replaced
)

func (p *preStream) Header() http.Header { return p.w.Header() }

func (p *preStream) eventStream() bool {
	return strings.HasPrefix(p.w.Header().Get("Content-Type"), "text/event-stream")
}

func (p *preStream) WriteHeader(code int) {
	switch {
	case p.state == passing:
		p.w.WriteHeader(code)
	case p.state == undecided && p.eventStream() && code == http.StatusOK:
		p.status = code
	case p.state == undecided:
		p.state = passing
		p.w.WriteHeader(code)
	}
}

func (p *preStream) Write(b []byte) (int, error) {
	switch p.state {
	case passing:
		return p.w.Write(b)
	case replaced:
		return len(b), nil // the stream already ended as an error response
	}
	if !p.eventStream() {
		p.pass()
		return p.w.Write(b)
	}
	p.held = append(p.held, b...)
	end := bytes.Index(p.held, []byte("\n\n"))
	switch {
	case end >= 0:
		if body, status, ok := p.errorEvent(p.held[:end]); ok {
			p.replace(body, status)
		} else {
			p.pass()
		}
	case len(p.held) > maxHeldEvent:
		p.pass()
	}
	return len(b), nil
}

// errorEvent parses a stream's first SSE event and reports whether it is
// an error: the JSON-RPC error response, or the HTTP+JSON error body and
// the HTTP status its code gives.
func (p *preStream) errorEvent(event []byte) ([]byte, int, bool) {
	var data []string
	for line := range strings.SplitSeq(string(event), "\n") {
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(v, " "))
		}
	}
	body := []byte(strings.Join(data, "\n"))
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if len(data) == 0 || json.Unmarshal(body, &msg) != nil || msg.Error == nil || msg.Result != nil {
		return nil, 0, false
	}
	status := http.StatusOK
	if p.rest {
		status = msg.Error.Code
		if status < 400 || status > 599 {
			status = http.StatusInternalServerError
		}
	}
	return body, status, true
}

func (p *preStream) pass() {
	p.state = passing
	if p.status != 0 {
		p.w.WriteHeader(p.status)
	}
	if len(p.held) > 0 {
		_, _ = p.w.Write(p.held)
		p.held = nil
	}
	p.Flush()
}

func (p *preStream) replace(body []byte, status int) {
	p.state, p.held = replaced, nil
	h := p.w.Header()
	for _, k := range []string{"Cache-Control", "Connection", "X-Accel-Buffering"} {
		h.Del(k)
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	p.w.WriteHeader(status)
	_, _ = p.w.Write(append(body, '\n'))
}

// Flush flushes what was passed through; a held event stays held.
func (p *preStream) Flush() {
	if p.state != undecided {
		if f, ok := p.w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (p *preStream) Unwrap() http.ResponseWriter { return p.w }

// finish sends what is still held when the handler returns (a stream that
// ended before its first event was complete).
func (p *preStream) finish() {
	if p.state == undecided && (p.status != 0 || len(p.held) > 0) {
		p.pass()
	}
}
