package agentadaptor_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	agentadaptor "github.com/seed0634/agentadaptor"

	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
)

// tokenSpy is a runtime service that keeps the run token the SDK allocated.
type tokenSpy struct {
	mu    sync.Mutex
	token string
}

func (s *tokenSpy) Ensure(_ context.Context, req agentadaptor.RuntimeServiceRequest) (agentadaptor.RuntimeService, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = req.RunToken
	return s, nil
}

func (s *tokenSpy) Ref() agentadaptor.RuntimeServiceRef {
	return agentadaptor.RuntimeServiceRef{ID: "token-spy"}
}

func (s *tokenSpy) Release(context.Context) error { return nil }

// A child that echoes its run token (a CLI printing its environment, a
// debug line) does not leak it: RunResult.RawStreams, the failure message
// quoting stderr and the diagnostics of lines that are not payloads are
// redacted (docs/design.md#secrets, guarantee 11).
func TestChildEchoingItsRunTokenIsRedacted(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := testCtx(t)
	spy := &tokenSpy{}
	script := `echo "token=$` + agentadaptor.EnvRunToken + `"; echo "stderr token=$` + agentadaptor.EnvRunToken + `" >&2; exit 3`
	sdk := newSDK(t, shell(script))
	h, err := sdk.Start(ctx, "x", agentadaptor.WithStreaming(), agentadaptor.WithRuntimeServices(spy))
	if err != nil {
		t.Fatal(err)
	}
	ps := adaptertest.Collect(ctx, t, h)
	res, _ := h.Wait(ctx)
	spy.mu.Lock()
	token := spy.token
	spy.mu.Unlock()
	if len(token) < 16 {
		t.Fatalf("run token %q", token)
	}
	if res.Status != agentadaptor.StatusFailed || res.Failure == nil {
		t.Fatalf("result %+v", res)
	}
	for what, s := range map[string]string{
		"RawStreams.Stdout": string(res.RawStreams.Stdout),
		"RawStreams.Stderr": string(res.RawStreams.Stderr),
		"failure message":   res.Failure.Message,
	} {
		if strings.Contains(s, token) {
			t.Errorf("%s holds the run token: %q", what, s)
		}
		if !strings.Contains(s, "[REDACTED]") {
			t.Errorf("%s: %q, want the echoed token visibly redacted", what, s)
		}
	}
	b, _ := json.Marshal(ps)
	if strings.Contains(string(b), token) {
		t.Errorf("a payload holds the run token: %s", b)
	}
}
