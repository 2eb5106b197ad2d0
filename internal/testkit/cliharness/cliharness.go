package cliharness

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/fakemodel"
	"github.com/seed0634/agentadaptor/internal/testkit/realcli"
	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
)

// Rig is an SDK with one real-CLI adapter, and the run options every run of
// the test gets.
type Rig struct {
	SDK *agentadaptor.SDK
	// Opts are a fresh work dir, env and a 60s run timeout.
	Opts []agentadaptor.RunOption
}

// NewRig registers a with a new SDK. Every run works in one fresh temp dir
// with the variables env and a 60s timeout.
func NewRig(t testing.TB, a agentadaptor.Adapter, env map[string]string) *Rig {
	t.Helper()
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(a))
	if err != nil {
		t.Fatal(err)
	}
	return &Rig{SDK: sdk, Opts: []agentadaptor.RunOption{
		agentadaptor.WithWorkDir(t.TempDir()),
		agentadaptor.WithEnv(env),
		agentadaptor.WithTimeout(60 * time.Second),
	}}
}

// With returns the rig's options followed by opts.
func (r *Rig) With(opts ...agentadaptor.RunOption) []agentadaptor.RunOption {
	return append(append([]agentadaptor.RunOption{}, r.Opts...), opts...)
}

// Context is the test's 90s deadline, cancelled when the test ends.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Completed starts prompt, collects the whole stream, checks its invariants
// and that the run completed, and returns the payloads and the result.
func (r *Rig) Completed(ctx context.Context, t testing.TB, prompt string, opts ...agentadaptor.RunOption) ([]agentadaptor.StreamPayload, *agentadaptor.RunResult) {
	t.Helper()
	ps, res := adaptertest.RunToEnd(ctx, t, r.SDK, prompt, r.With(opts...)...)
	if res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("status %s: %v\nstderr: %s", res.Status, res.Failure, res.RawStreams.Stderr)
	}
	return ps, res
}

// ToolRun is a completed run that called a tool of a run-scoped MCPService.
type ToolRun struct {
	Handle   *agentadaptor.RunHandle
	Payloads []agentadaptor.StreamPayload
	Result   *agentadaptor.RunResult
	// Token is the run's bearer token at the service.
	Token string
	// Calls are the tool calls the service served: exactly one.
	Calls []fakemodel.ToolCallRecord
}

// RunTool starts prompt with svc as a runtime service and checks that svc
// issued the run a token; that while the first tool call is in flight some
// live process has argvMarker(h) on its command line and none has the token;
// the stream invariants; that the run completed with wantOutput; and that svc
// served exactly one call, for this run.
func (r *Rig) RunTool(ctx context.Context, t testing.TB, svc *fakemodel.MCPService, prompt, wantOutput string, argvMarker func(*agentadaptor.RunHandle) string, opts ...agentadaptor.RunOption) *ToolRun {
	t.Helper()
	h, err := r.SDK.Start(ctx, prompt, r.With(append(opts, agentadaptor.WithRuntimeServices(svc))...)...)
	if err != nil {
		t.Fatal(err)
	}
	token := svc.TokenFor(h.RunID())
	if token == "" {
		t.Fatal("the runtime service got no token")
	}
	var ps []agentadaptor.StreamPayload
	checkedArgv := false
	for p := range h.StreamEvents() {
		ps = append(ps, p)
		if p.Kind == agentadaptor.KindToolCallStart && !checkedArgv {
			// The child is alive: its argv (world-readable) must not hold the token.
			marker := argvMarker(h)
			procs := realcli.WaitFor(marker, 5*time.Second)
			if len(procs) == 0 {
				t.Errorf("no live process has %s on its command line", marker)
			}
			for pid, cmd := range procs {
				if strings.Contains(cmd, token) {
					t.Errorf("pid %d has the run token on its command line", pid)
				}
			}
			checkedArgv = true
		}
	}
	adaptertest.CheckStream(t, h.RunID(), ps)
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCompleted {
		t.Fatalf("status %s: %v\nstderr: %s", res.Status, res.Failure, res.RawStreams.Stderr)
	}
	if res.Output != wantOutput {
		t.Errorf("output %q", res.Output)
	}
	calls := svc.Calls()
	if len(calls) != 1 {
		t.Fatalf("tool calls %+v", calls)
	}
	if calls[0].RunID != h.RunID() {
		t.Errorf("the MCP server resolved run %q from the token, want %q", calls[0].RunID, h.RunID())
	}
	return &ToolRun{Handle: h, Payloads: ps, Result: res, Token: token, Calls: calls}
}

// CheckTokenGone checks that the run's token is in neither raw stream and
// that svc refuses it now that the run has ended.
func (tr *ToolRun) CheckTokenGone(ctx context.Context, t testing.TB, svc *fakemodel.MCPService) {
	t.Helper()
	for _, f := range [][]byte{tr.Result.RawStreams.Stdout, tr.Result.RawStreams.Stderr} {
		if strings.Contains(string(f), tr.Token) {
			t.Errorf("token leaked into the raw streams")
		}
	}
	// The token is revoked when the run ends.
	if st, err := svc.ProbeStatus(ctx, tr.Token); err != nil || st != http.StatusUnauthorized {
		t.Errorf("token after the run: status %d, %v; want 401", st, err)
	}
}

// CancelMidStream starts prompt in a fresh temp root with a 3s cancel grace,
// lets midStream return once the model is answering, cancels the run and
// checks that it ended cancelled, that no process with argvMarker(h) on its
// command line is left and that the temp root is empty.
func (r *Rig) CancelMidStream(ctx context.Context, t testing.TB, prompt string, midStream func(*agentadaptor.RunHandle), argvMarker func(*agentadaptor.RunHandle) string, opts ...agentadaptor.RunOption) {
	t.Helper()
	root := t.TempDir()
	h, err := r.SDK.Start(ctx, prompt, r.With(append(opts, agentadaptor.WithTempRoot(root), agentadaptor.WithCancelGrace(3*time.Second))...)...)
	if err != nil {
		t.Fatal(err)
	}
	midStream(h)
	if err := h.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	res, _ := h.Wait(ctx)
	if res.Status != agentadaptor.StatusCancelled {
		t.Fatalf("status %s, want cancelled", res.Status)
	}
	if procs := realcli.WaitGone(argvMarker(h), 10*time.Second); len(procs) > 0 {
		t.Errorf("processes left behind: %v", procs)
	}
	if entries, _ := os.ReadDir(root); len(entries) > 0 {
		t.Errorf("temp dir left behind: %v", entries)
	}
}

// ResumeSession runs two questions under one session key and checks that
// both completed in the same session and that the model's last request holds
// the first question, model's first answer firstAnswer, and the second
// question.
func (r *Rig) ResumeSession(ctx context.Context, t testing.TB, model *fakemodel.Server, firstAnswer string) {
	t.Helper()
	r1, err := r.SDK.Run(ctx, "first question", r.With(agentadaptor.WithSessionKey("conv-1"))...)
	if err != nil || r1.Status != agentadaptor.StatusCompleted {
		t.Fatalf("run 1: %v %+v", err, r1)
	}
	r2, err := r.SDK.Run(ctx, "second question", r.With(agentadaptor.WithSessionKey("conv-1"))...)
	if err != nil || r2.Status != agentadaptor.StatusCompleted {
		t.Fatalf("run 2: %v %+v\nstderr: %s", err, r2, stderrOf(r2))
	}
	if r2.SessionID != r1.SessionID || r1.SessionID == "" {
		t.Errorf("sessions %q then %q, want the same", r1.SessionID, r2.SessionID)
	}
	reqs := fakemodel.ModelRequests(model.Requests())
	last := reqs[len(reqs)-1]
	for _, s := range []string{"first question", firstAnswer, "second question"} {
		if !fakemodel.ContainsText(last, s) {
			t.Errorf("the resumed request lacks %q", s)
		}
	}
}

func stderrOf(res *agentadaptor.RunResult) []byte {
	if res == nil {
		return nil
	}
	return res.RawStreams.Stderr
}
