package a2a

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// v03RESTCodes are the JSON-RPC codes an A2A 0.3 HTTP+JSON error body
// carries, by the google.rpc.ErrorInfo reason a2a-go writes.
var v03RESTCodes = map[string]int{
	"PARSE_ERROR":                        -32700,
	"INVALID_REQUEST":                    -32600,
	"METHOD_NOT_FOUND":                   -32601,
	"INVALID_PARAMS":                     -32602,
	"INTERNAL_ERROR":                     -32603,
	"SERVER_ERROR":                       -32000,
	"TASK_NOT_FOUND":                     -32001,
	"TASK_NOT_CANCELABLE":                -32002,
	"PUSH_NOTIFICATION_NOT_SUPPORTED":    -32003,
	"UNSUPPORTED_OPERATION":              -32004,
	"CONTENT_TYPE_NOT_SUPPORTED":         -32005,
	"INVALID_AGENT_RESPONSE":             -32006,
	"EXTENDED_AGENT_CARD_NOT_CONFIGURED": -32007,
	"EXTENSION_SUPPORT_REQUIRED":         -32008,
	"VERSION_NOT_SUPPORTED":              -32009,
	"UNAUTHENTICATED":                    -31401,
	"UNAUTHORIZED":                       -31403,
	ReasonTooManyTasks:                   codeServerError,
}

// maxErrorBody bounds the error body v03REST holds to rewrite.
const maxErrorBody = 64 << 10

// V03ErrorBody renders an error as A2A 0.3's HTTP+JSON error body: the
// JSON-RPC error object {code, message, data?} itself, which 0.3 clients
// (@a2a-js/sdk 0.3's REST transport among them) read by its code.
func V03ErrorBody(code int, message string, data any) []byte {
	body := map[string]any{"code": code, "message": message}
	if data != nil {
		body["data"] = data
	}
	b, _ := json.Marshal(body)
	return append(b, '\n')
}

// v03Union is the 0.3 error body with the 1.0 google.rpc.Status object
// beside it under "error": @a2a-js/sdk 0.3 reads "code", a2a-go's 0.3
// client reads "error", so both keep the error's type.
func v03Union(code int, message string, v1 json.RawMessage) []byte {
	b, _ := json.Marshal(map[string]any{"code": code, "message": message, "error": v1})
	return b
}

// v03REST gives A2A 0.3 HTTP+JSON requests the 0.3 error shape
// (docs/design.md#event-mapping). a2a-go's 0.3 compatibility layer answers
// with the 1.0 google.rpc.Status body ({"error": {code, status, message,
// details}}), which @a2a-js/sdk 0.3 cannot read: it loses the error's
// type. An error response (4xx/5xx JSON) is rewritten whole, keeping its
// HTTP status; an error event inside an event stream becomes an SSE event
// of type "error", as 0.3 servers send it. The body is the 0.3 error
// object with the 1.0 one beside it under "error" ([v03Union]), which
// a2a-go's 0.3 client reads. Every other byte passes through.
type v03REST struct {
	w      http.ResponseWriter
	status int
	// mode: 0 undecided, 1 passing, 2 holding an error body, 3 rewriting
	// the events of a stream.
	mode int
	held []byte
}

func (l *v03REST) Header() http.Header { return l.w.Header() }

func (l *v03REST) WriteHeader(code int) {
	if l.mode != 0 {
		return
	}
	l.status = code
	ct := l.w.Header().Get("Content-Type")
	switch {
	case code >= 400 && strings.Contains(ct, "json"):
		l.mode = 2
		return // written with the rewritten body
	case strings.HasPrefix(ct, "text/event-stream"):
		l.mode = 3
	default:
		l.mode = 1
	}
	l.w.WriteHeader(code)
}

func (l *v03REST) Write(b []byte) (int, error) {
	if l.mode == 0 {
		l.WriteHeader(http.StatusOK)
	}
	switch l.mode {
	case 2:
		if len(l.held)+len(b) <= maxErrorBody {
			l.held = append(l.held, b...)
		}
		return len(b), nil
	case 3:
		l.held = append(l.held, b...)
		for {
			end := bytes.Index(l.held, []byte("\n\n"))
			if end < 0 {
				break
			}
			if _, err := l.w.Write(legacyEvent(l.held[:end+2])); err != nil {
				return 0, err
			}
			l.held = l.held[end+2:]
		}
		return len(b), nil
	}
	return l.w.Write(b)
}

// legacyEvent rewrites one SSE event whose data is a 1.0 error object
// ({"error": {...}}) into a 0.3 "error" event; other events are returned
// as they are.
func legacyEvent(ev []byte) []byte {
	_, after, ok := bytes.Cut(ev, []byte("data:"))
	if !ok || !bytes.Contains(ev, []byte(`"error"`)) {
		return ev
	}
	data := bytes.TrimSpace(after)
	code, msg, v1, ok := v1Error(data)
	if !ok {
		return ev
	}
	out := append([]byte("event: error\ndata: "), v03Union(code, msg, v1)...)
	return append(out, '\n', '\n')
}

// v1Error reads a 1.0 error body: its JSON-RPC code (by reason), message
// and the error object itself.
func v1Error(b []byte) (code int, message string, v1 json.RawMessage, ok bool) {
	var raw struct {
		Error json.RawMessage `json:"error"`
	}
	var body struct {
		Error *struct {
			Message string `json:"message"`
			Details []struct {
				Reason string `json:"reason"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &body) != nil || body.Error == nil || json.Unmarshal(b, &raw) != nil {
		return 0, "", nil, false
	}
	code = -32603
	for _, d := range body.Error.Details {
		if c, known := v03RESTCodes[d.Reason]; known {
			code = c
			break
		}
	}
	return code, body.Error.Message, raw.Error, true
}

// Flush passes a stream's complete events on.
func (l *v03REST) Flush() {
	if l.mode == 1 || l.mode == 3 {
		if f, ok := l.w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (l *v03REST) Unwrap() http.ResponseWriter { return l.w }

// finish writes a held error body (rewritten) or the rest of a stream.
func (l *v03REST) finish() {
	switch l.mode {
	case 2:
		body := l.held
		if code, msg, v1, ok := v1Error(l.held); ok {
			body = append(v03Union(code, msg, v1), '\n')
			l.w.Header().Set("Content-Type", "application/json; charset=utf-8")
		}
		l.w.Header().Del("Content-Length")
		l.w.WriteHeader(l.status)
		_, _ = l.w.Write(body)
	case 3:
		if len(l.held) > 0 {
			_, _ = l.w.Write(l.held)
		}
	}
}
