package a2a

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

func TestClassify(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	netErr := &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}
	cases := []struct {
		name      string
		ctx       context.Context
		err       error
		status    int
		midStream bool
		want      clienterr.Kind
	}{
		{"task not found", nil, fmt.Errorf("wrapped: %w", sdk.ErrTaskNotFound), 0, false, clienterr.KindNotFound},
		{"jsonrpc unauthenticated", nil, sdk.NewError(sdk.ErrUnauthenticated, "no"), 0, false, clienterr.KindUnauthorized},
		{"permission denied", nil, sdk.ErrUnauthorized, 0, false, clienterr.KindUnauthorized},
		{"unsupported operation", nil, sdk.ErrUnsupportedOperation, 0, false, clienterr.KindRejected},
		{"invalid params", nil, sdk.ErrInvalidParams, 0, false, clienterr.KindRejected},
		{"not cancelable", nil, sdk.ErrTaskNotCancelable, 0, false, clienterr.KindRejected},
		{"http 401 plain", nil, errors.New("unexpected HTTP status: 401 Unauthorized"), 401, false, clienterr.KindUnauthorized},
		{"http 403 over server error sentinel", nil, sdk.ErrServerError, 403, false, clienterr.KindUnauthorized},
		{"http 500", nil, errors.New("unexpected HTTP status: 500"), 500, false, clienterr.KindUnavailable},
		{"http 503 rest", nil, sdk.ErrServerError, 503, false, clienterr.KindUnavailable},
		{"http 404 bare", nil, errors.New("unexpected HTTP status: 404"), 404, false, clienterr.KindUnavailable},
		{"http 400", nil, errors.New("bad"), 400, false, clienterr.KindRejected},
		{"network before stream", nil, netErr, 0, false, clienterr.KindUnavailable},
		{"network mid stream", nil, fmt.Errorf("SSE stream error: %w", io.ErrUnexpectedEOF), 200, true, clienterr.KindInterrupted},
		{"internal error", nil, sdk.ErrInternalError, 200, false, clienterr.KindUnavailable},
		{"bad payload", nil, errors.New("unknown event type: [foo]"), 200, false, clienterr.KindProtocol},
		{"invalid agent response", nil, sdk.ErrInvalidAgentResponse, 200, false, clienterr.KindProtocol},
		{"caller cancelled", canceled, netErr, 0, false, clienterr.KindCanceled},
		{"deadline", nil, fmt.Errorf("x: %w", context.DeadlineExceeded), 0, false, clienterr.KindTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := classify(tc.ctx, "op", tc.err, tc.status, tc.midStream, "")
			if e.Kind != tc.want {
				t.Fatalf("kind = %s, want %s (%v)", e.Kind, tc.want, e)
			}
			if !errors.Is(e, sentinelFor(tc.want)) {
				t.Fatal("errors.Is with sentinel failed")
			}
			var as *clienterr.Error
			if !errors.As(fmt.Errorf("outer: %w", e), &as) || as != e {
				t.Fatal("errors.As failed")
			}
			if msg := e.Error(); !strings.HasPrefix(msg, "a2a: op: ") || !strings.HasSuffix(msg, " — "+hints[tc.want]) {
				t.Fatalf("message lacks prefix, op or hint: %s", e)
			}
		})
	}
}

func sentinelFor(k clienterr.Kind) error {
	return map[clienterr.Kind]error{
		clienterr.KindUnavailable: clienterr.ErrUnavailable, clienterr.KindRejected: clienterr.ErrRejected, clienterr.KindUnauthorized: clienterr.ErrUnauthorized,
		clienterr.KindNotFound: clienterr.ErrNotFound, clienterr.KindProtocol: clienterr.ErrProtocol, clienterr.KindTimeout: clienterr.ErrTimeout,
		clienterr.KindCanceled: clienterr.ErrCanceled, clienterr.KindInterrupted: clienterr.ErrInterrupted,
	}[k]
}

func TestClassifyRedactsEchoedSecret(t *testing.T) {
	const secret = "tok-123456"
	remote := sdk.NewError(sdk.ErrInvalidParams, "bad header Bearer "+secret)
	e := classify(context.TODO(), "send", remote, 200, false, secret)
	if strings.Contains(e.Error(), secret) {
		t.Fatalf("secret leaked: %s", e)
	}
	if e.Kind != clienterr.KindRejected || !errors.Is(e, sdk.ErrInvalidParams) {
		t.Fatalf("redaction lost classification: %v", e)
	}
}

func TestStateHelpers(t *testing.T) {
	cases := []struct {
		in                    TaskState
		terminal, interrupted bool
	}{
		{StateCompleted, true, false}, {StateFailed, true, false}, {StateCanceled, true, false},
		{StateRejected, true, false}, {StateInputRequired, false, true}, {StateAuthRequired, false, true},
		{StateWorking, false, false}, {StateSubmitted, false, false},
		{"completed", true, false}, {"input-required", false, true}, {"cancelled", true, false},
		{"auth-required", false, true}, {"bogus", false, false}, {"", false, false},
	}
	for _, tc := range cases {
		if IsTerminal(tc.in) != tc.terminal || IsInterrupted(tc.in) != tc.interrupted {
			t.Errorf("%q: terminal=%v interrupted=%v", tc.in, IsTerminal(tc.in), IsInterrupted(tc.in))
		}
	}
}
