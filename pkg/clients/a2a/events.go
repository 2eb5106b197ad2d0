package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

var jsonrpcCodes = map[int]error{
	-32700: sdk.ErrParseError, -32600: sdk.ErrInvalidRequest, -32601: sdk.ErrMethodNotFound,
	-32602: sdk.ErrInvalidParams, -32603: sdk.ErrInternalError, -32000: sdk.ErrServerError,
	-32001: sdk.ErrTaskNotFound, -32002: sdk.ErrTaskNotCancelable, -32003: sdk.ErrPushNotificationNotSupported,
	-32004: sdk.ErrUnsupportedOperation, -32005: sdk.ErrUnsupportedContentType, -32006: sdk.ErrInvalidAgentResponse,
	-32007: sdk.ErrExtendedCardNotConfigured, -32008: sdk.ErrExtensionSupportRequired,
	-32009: sdk.ErrVersionNotSupported, -31401: sdk.ErrUnauthenticated, -31403: sdk.ErrUnauthorized,
}

// DecodeEvent decodes one streamed A2A v1.0 event: either a JSON-RPC
// response envelope ({"jsonrpc":"2.0","result":{...}} or {"error":{...}}) as
// carried in an SSE data line, or the bare stream response object
// ({"task"|"message"|"statusUpdate"|"artifactUpdate": {...}}). The event is
// checked with [ValidateEvent]. Errors are [*clienterr.Error]: clienterr.KindProtocol for
// malformed input, or the kind of a JSON-RPC error. DecodeEvent never panics.
func DecodeEvent(raw []byte) (Event, error) {
	const op = "decode event"
	var env struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, NewError(clienterr.KindProtocol, op, fmt.Errorf("not a JSON object: %w", err))
	}
	body := raw
	if env.JSONRPC != "" || env.Error != nil || env.Result != nil {
		if env.Error != nil {
			base, ok := jsonrpcCodes[env.Error.Code]
			if !ok {
				base = sdk.ErrInternalError
			}
			return nil, classify(context.TODO(), op, sdk.NewError(base, fmt.Sprintf("jsonrpc error %d: %s", env.Error.Code, env.Error.Message)), 0, false, "")
		}
		if len(env.Result) == 0 || bytes.Equal(bytes.TrimSpace(env.Result), []byte("null")) {
			return nil, NewError(clienterr.KindProtocol, op, errors.New("JSON-RPC response has neither result nor error"))
		}
		body = env.Result
	}
	var sr sdk.StreamResponse
	if err := json.Unmarshal(body, &sr); err != nil {
		return nil, NewError(clienterr.KindProtocol, op, err)
	}
	if err := ValidateEvent(sr.Event); err != nil {
		return nil, err
	}
	return sr.Event, nil
}

// ValidateEvent checks the invariants a consumer relies on and a2a-go's
// decoder does not enforce: non-nil payloads, task ids on updates, an
// artifact on artifact updates, and a known task state. It returns an
// [*clienterr.Error] of kind clienterr.KindProtocol naming the problem.
func ValidateEvent(ev Event) error {
	bad := func(format string, args ...any) error {
		return NewError(clienterr.KindProtocol, "validate event", fmt.Errorf(format, args...))
	}
	switch e := ev.(type) {
	case nil:
		return bad("empty event")
	case *sdk.Task:
		if e == nil {
			return bad("null task")
		}
		if e.ID == "" {
			return bad("task without id")
		}
		if !IsKnownState(e.Status.State) {
			return bad("task %s has unknown state %q", e.ID, e.Status.State)
		}
		for i, a := range e.Artifacts {
			if a == nil {
				return bad("task %s has a null artifact at index %d", e.ID, i)
			}
		}
	case *sdk.Message:
		if e == nil {
			return bad("null message")
		}
	case *sdk.TaskStatusUpdateEvent:
		if e == nil {
			return bad("null status update")
		}
		if e.TaskID == "" {
			return bad("status update without taskId")
		}
		if !IsKnownState(e.Status.State) {
			return bad("status update for task %s has unknown state %q", e.TaskID, e.Status.State)
		}
	case *sdk.TaskArtifactUpdateEvent:
		if e == nil {
			return bad("null artifact update")
		}
		if e.TaskID == "" {
			return bad("artifact update without taskId")
		}
		if e.Artifact == nil {
			return bad("artifact update for task %s has no artifact", e.TaskID)
		}
	default:
		return bad("unexpected event type %T", ev)
	}
	return nil
}
