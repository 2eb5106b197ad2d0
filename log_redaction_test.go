package agentadaptor_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	agentadaptor "github.com/seed0634/agentadaptor"
	"go.uber.org/goleak"
)

// lockedBuffer is a bytes.Buffer safe for the logger's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// leakyService is a runtime service whose Release fails with an error
// that quotes the run's token.
type leakyService struct{ token string }

func (s *leakyService) Ensure(_ context.Context, req agentadaptor.RuntimeServiceRequest) (agentadaptor.RuntimeService, error) {
	s.token = req.RunToken
	return s, nil
}
func (s *leakyService) Ref() agentadaptor.RuntimeServiceRef {
	return agentadaptor.RuntimeServiceRef{ID: "leaky"}
}
func (s *leakyService) Release(context.Context) error {
	return errors.New("revoking bearer " + s.token + " failed")
}

// The SDK's own log lines never carry a run's secrets: a runtime service
// whose Release error quotes the run token is logged scrubbed
// (docs/design.md#secrets: never in a log line).
func TestSDKLogLinesAreScrubbed(t *testing.T) {
	defer goleak.VerifyNone(t)
	var logs lockedBuffer
	svc := &leakyService{}
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(shell(`exit 0`)), agentadaptor.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sdk.Run(testCtx(t), "x", agentadaptor.WithRuntimeServices(svc))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != agentadaptor.StatusCompleted || len(svc.token) < 16 {
		t.Fatalf("%s %v, token %q", res.Status, res.Failure, svc.token)
	}
	out := logs.String()
	if !strings.Contains(out, "releasing runtime service failed") || !strings.Contains(out, "revoking bearer [REDACTED] failed") {
		t.Fatalf("no scrubbed release failure in the log:\n%s", out)
	}
	if strings.Contains(out, svc.token) {
		t.Errorf("the run token is in the log:\n%s", out)
	}
}
