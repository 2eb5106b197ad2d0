package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// ErrTooManyTasks is the cause of every refusal for the active-task bound
// ([ExecutorConfig].MaxActiveTasks): errors.Is finds it in the error a
// refused message gets (docs/design.md#event-mapping).
var ErrTooManyTasks = errors.New("a2a bridge: too many active tasks")

// RetryAfter is how long a refused client is told to wait before it sends
// again (HTTP Retry-After, gRPC and JSON-RPC RetryInfo).
const RetryAfter = 5 * time.Second

// ReasonTooManyTasks is the google.rpc.ErrorInfo reason of a refusal, in
// [ErrorDomain]. A2A 1.0 defines no error for back-pressure, so a refusal
// is identified by this pair, not by a JSON-RPC code.
const ReasonTooManyTasks = "TOO_MANY_ACTIVE_TASKS"

// ErrorDomain is the google.rpc.ErrorInfo domain of the errors the bridge
// defines itself (A2A's own errors keep the domain a2a-protocol.org).
const ErrorDomain = "agentadaptor"

// codeServerError is the JSON-RPC code of a refusal: -32000, "server
// error", the one implementation-defined code A2A leaves free (A2A 1.0 uses
// -32001 and up for its own errors).
const codeServerError = -32000

// busyError is the error a message refused for the active-task bound gets.
// It is ErrTooManyTasks and a2a.ErrServerError for errors.Is, and carries
// its gRPC status (RESOURCE_EXHAUSTED with ErrorInfo and RetryInfo), which
// a2a-go's gRPC layer passes through as is.
type busyError struct{ max int }

func (b *busyError) Error() string {
	return fmt.Sprintf("this agent runs at most %d tasks at once and all are busy: retry in %d seconds, or cancel a task of yours",
		b.max, int(RetryAfter/time.Second))
}

func (b *busyError) Unwrap() []error { return []error{ErrTooManyTasks, a2a.ErrServerError} }

// GRPCStatus is the refusal on the gRPC binding.
func (b *busyError) GRPCStatus() *status.Status {
	st := status.New(codes.ResourceExhausted, b.Error())
	if d, err := st.WithDetails(
		&errdetails.ErrorInfo{Reason: ReasonTooManyTasks, Domain: ErrorDomain},
		&errdetails.RetryInfo{RetryDelay: durationpb.New(RetryAfter)},
	); err == nil {
		return d
	}
	return st
}

// slot states.
const (
	slotPending int32 = iota // reserved by a request, no turn runs on it yet
	slotClaimed              // a turn runs on it
	slotFreed
)

// slot is one place among MaxActiveTasks: reserved when a message is
// admitted, claimed by the turn the message starts, freed when that turn's
// run is over (or, when no turn claims it, when the request ends).
type slot struct {
	e     *Executor
	state atomic.Int32
}

type slotKey struct{}

func withSlot(ctx context.Context, s *slot) context.Context {
	return context.WithValue(ctx, slotKey{}, s)
}

func slotFrom(ctx context.Context) *slot {
	s, _ := ctx.Value(slotKey{}).(*slot)
	return s
}

// limited reports whether the executor bounds its active tasks.
func (e *Executor) limited() bool { return e.cfg.MaxActiveTasks > 0 }

// reserve takes a slot for a message, or refuses it with a *busyError
// (counted by OnRefused). Without a bound it returns nil, nil.
func (e *Executor) reserve(ctx context.Context) (*slot, error) {
	if !e.limited() {
		return nil, nil
	}
	e.mu.Lock()
	if e.used >= e.cfg.MaxActiveTasks {
		e.mu.Unlock()
		if e.cfg.OnRefused != nil {
			e.cfg.OnRefused(ctx)
		}
		return nil, &busyError{max: e.cfg.MaxActiveTasks}
	}
	e.used++
	e.mu.Unlock()
	return &slot{e: e}, nil
}

// abandon frees s if no turn claimed it: the request that reserved it is
// over without starting a turn.
func (s *slot) abandon() {
	if s != nil && s.state.CompareAndSwap(slotPending, slotFreed) {
		s.e.freeSlot()
	}
}

// claim makes s the slot of the turn that calls it.
func (s *slot) claim() bool { return s != nil && s.state.CompareAndSwap(slotPending, slotClaimed) }

// free ends a claimed slot (idempotent).
func (s *slot) free() {
	if s != nil && s.state.CompareAndSwap(slotClaimed, slotFreed) {
		s.e.freeSlot()
	}
}

func (e *Executor) freeSlot() {
	e.mu.Lock()
	e.used--
	e.mu.Unlock()
}

// claimSlot gives a turn its slot: the one its request reserved, or, when
// that request already gave up (a client that left before the turn began),
// a fresh one. ok is false when there is none: the turn must not start its
// run. release frees the slot (idempotent).
func (e *Executor) claimSlot(ctx context.Context) (release func(), err error) {
	if !e.limited() {
		return func() {}, nil
	}
	s := slotFrom(ctx)
	if !s.claim() {
		var rerr error
		if s, rerr = e.reserve(ctx); rerr != nil {
			return func() {}, rerr
		}
		s.claim()
	}
	return s.free, nil
}

// admitHTTP reserves the slot of a message on an HTTP binding before
// a2a-go reads it, so that a refusal can be answered in the binding's own
// terms: HTTP+JSON 429 with Retry-After and a google.rpc.Status body
// (RESOURCE_EXHAUSTED; the 0.3 error object for 0.3 requests), JSON-RPC a
// -32000 error (HTTP 200, with Retry-After too). Requests that send no
// message pass untouched. It returns the request to serve (carrying the
// slot) and the function that frees a slot no turn claimed, or ok=false
// when it answered the request itself.
func (e *Executor) admitHTTP(w http.ResponseWriter, r *http.Request, rest, v03 bool) (_ *http.Request, release func(), ok bool) {
	if !e.limited() {
		return r, func() {}, true
	}
	var id json.RawMessage
	if rest {
		if r.Method != http.MethodPost || !(strings.HasSuffix(r.URL.Path, "/message:send") || strings.HasSuffix(r.URL.Path, "/message:stream")) {
			return r, func() {}, true
		}
	} else {
		b, _ := peekBody(r)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(b, &req) != nil {
			return r, func() {}, true
		}
		switch req.Method {
		case "SendMessage", "SendStreamingMessage", "message/send", "message/stream":
		default:
			return r, func() {}, true
		}
		id = req.ID
	}
	s, err := e.reserve(r.Context())
	if err != nil {
		writeBusy(w, err, rest, v03, id)
		return nil, nil, false
	}
	return r.WithContext(withSlot(r.Context(), s)), s.abandon, true
}

// writeBusy answers a refused message on an HTTP binding.
func writeBusy(w http.ResponseWriter, err error, rest, v03 bool, id json.RawMessage) {
	msg := err.Error()
	retry := strconv.Itoa(int(RetryAfter / time.Second))
	details := []map[string]any{
		{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": ReasonTooManyTasks, "domain": ErrorDomain,
			"metadata": map[string]string{"retryAfterSeconds": retry}},
		{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry + "s"},
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Retry-After", retry)
	var body any
	status := http.StatusOK
	switch {
	case rest && v03:
		// The 0.3 HTTP+JSON error: the JSON-RPC error object as the body.
		status = http.StatusTooManyRequests
		body = map[string]any{"code": codeServerError, "message": msg, "data": details}
	case rest:
		status = http.StatusTooManyRequests
		body = map[string]any{"error": map[string]any{"code": status, "status": "RESOURCE_EXHAUSTED", "message": msg, "details": details}}
	default:
		if len(id) == 0 {
			id = json.RawMessage("null")
		}
		body = map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": codeServerError, "message": msg, "data": details}}
	}
	b, _ := json.Marshal(body)
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
