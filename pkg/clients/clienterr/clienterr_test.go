package clienterr_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/seed0634/agentadaptor/pkg/clients/clienterr"
)

var sentinels = map[clienterr.Kind]error{
	clienterr.KindUnavailable:  clienterr.ErrUnavailable,
	clienterr.KindRejected:     clienterr.ErrRejected,
	clienterr.KindUnauthorized: clienterr.ErrUnauthorized,
	clienterr.KindNotFound:     clienterr.ErrNotFound,
	clienterr.KindProtocol:     clienterr.ErrProtocol,
	clienterr.KindTimeout:      clienterr.ErrTimeout,
	clienterr.KindCanceled:     clienterr.ErrCanceled,
	clienterr.KindInterrupted:  clienterr.ErrInterrupted,
}

func TestKinds(t *testing.T) {
	cases := []struct {
		kind      clienterr.Kind
		name      string
		retryable bool
	}{
		{clienterr.KindUnavailable, "unavailable", true},
		{clienterr.KindRejected, "rejected", false},
		{clienterr.KindUnauthorized, "unauthorized", false},
		{clienterr.KindNotFound, "not found", false},
		{clienterr.KindProtocol, "protocol error", false},
		{clienterr.KindTimeout, "timeout", true},
		{clienterr.KindCanceled, "canceled", false},
		{clienterr.KindInterrupted, "stream interrupted", true},
		{0, "kind(0)", false},
		{42, "kind(42)", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := &clienterr.Error{Kind: tc.kind, Op: "op", Err: errors.New("cause")}
			if got := tc.kind.String(); got != tc.name {
				t.Errorf("String() = %q, want %q", got, tc.name)
			}
			if e.Retryable() != tc.retryable || tc.kind.Retryable() != tc.retryable {
				t.Errorf("Retryable() = %v, want %v", e.Retryable(), tc.retryable)
			}
			wrapped := fmt.Errorf("outer: %w", e)
			if got := clienterr.KindOf(wrapped); got != tc.kind {
				t.Errorf("KindOf = %v, want %v", got, tc.kind)
			}
			for k, s := range sentinels {
				if got := errors.Is(wrapped, s); got != (k == tc.kind) {
					t.Errorf("errors.Is(%s error, sentinel of %s) = %v", tc.kind, k, got)
				}
			}
			if !errors.Is(wrapped, e.Err) {
				t.Error("the cause is not reachable through Unwrap")
			}
		})
	}
}

func TestMessage(t *testing.T) {
	hints := map[clienterr.Kind]string{clienterr.KindNotFound: "check the task id"}
	cases := []struct {
		name string
		err  *clienterr.Error
		want string
	}{
		{"all fields",
			&clienterr.Error{Protocol: "agui", Kind: clienterr.KindUnavailable, Op: "run", Status: 503,
				Err: errors.New("upstream down"), Body: "try later", Hints: map[clienterr.Kind]string{clienterr.KindUnavailable: "retry"}},
			`agui: run: unavailable (HTTP 503): upstream down: remote said "try later" — retry`},
		{"client hint",
			&clienterr.Error{Protocol: "a2a", Kind: clienterr.KindNotFound, Op: "get task", Err: errors.New("t-1"), Hints: hints},
			"a2a: get task: not found: t-1 — check the task id"},
		{"kind without a client hint gets the default",
			&clienterr.Error{Protocol: "a2a", Kind: clienterr.KindCanceled, Op: "send", Hints: hints},
			"a2a: send: canceled — the call was cancelled by the caller"},
		{"no protocol, no op, no cause",
			&clienterr.Error{Kind: clienterr.KindInterrupted},
			"stream interrupted — the stream ended before a terminal state"},
		{"2xx status is shown",
			&clienterr.Error{Protocol: "a2a", Kind: clienterr.KindProtocol, Op: "stream", Status: 200, Err: errors.New("bad frame")},
			"a2a: stream: protocol error (HTTP 200): bad frame — the remote sent data this client cannot interpret; report it to the agent's owner"},
		{"unknown kind has no hint",
			&clienterr.Error{Protocol: "a2a", Kind: 99, Op: "x"},
			"a2a: x: kind(99)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error()\n got  %s\n want %s", got, tc.want)
			}
		})
	}
}

func TestContextCausesStayReachable(t *testing.T) {
	e := &clienterr.Error{Kind: clienterr.KindTimeout, Op: "send", Err: fmt.Errorf("request: %w", context.DeadlineExceeded)}
	if !errors.Is(e, context.DeadlineExceeded) || !errors.Is(e, clienterr.ErrTimeout) || errors.Is(e, clienterr.ErrCanceled) {
		t.Fatalf("errors.Is chain broken: %v", e)
	}
}

func TestKindOfOtherErrors(t *testing.T) {
	for _, err := range []error{nil, errors.New("plain"), clienterr.ErrNotFound} {
		if k := clienterr.KindOf(err); k != 0 {
			t.Errorf("KindOf(%v) = %v, want 0", err, k)
		}
	}
}
