package shellagent_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/shellagent"

	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
)

func start(t *testing.T, a *shellagent.Adapter, prompt string, opts ...agentadaptor.RunOption) *agentadaptor.RunHandle {
	t.Helper()
	sdk, err := agentadaptor.New(agentadaptor.WithAdapters(a))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	h, err := sdk.Start(ctx, prompt, append(opts, agentadaptor.WithStreaming())...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Cancel(ctx) })
	return h
}

func kinds(ps []agentadaptor.StreamPayload) []agentadaptor.StreamKind {
	var out []agentadaptor.StreamKind
	for _, p := range ps {
		out = append(out, p.Kind)
	}
	return out
}

func TestScriptChoiceAndOutput(t *testing.T) {
	awkward := `it's a "quote" with \n no newline`
	a := &shellagent.Adapter{
		Script:    `echo default`,
		Scripts:   map[string]string{"hello": shellagent.Text("m1", awkward)},
		SessionID: "s-1",
	}
	tests := []struct {
		prompt string
		opts   []agentadaptor.RunOption
		want   string
		diag   bool
	}{
		{"hello", nil, awkward, false},
		{"other", nil, "", true}, // "default" is not JSON: a malformed_line diagnostic
		{"hello", []agentadaptor.RunOption{agentadaptor.WithAdapterOption(shellagent.OptionScript, shellagent.Text("m", "opt"))}, "opt", false},
	}
	for _, tc := range tests {
		h := start(t, a, tc.prompt, tc.opts...)
		ps := adaptertest.Collect(t.Context(), t, h)
		res, _ := h.Wait(context.Background())
		if res.Output != tc.want || res.SessionID != "s-1" {
			t.Errorf("%s: output %q session %q, want %q s-1", tc.prompt, res.Output, res.SessionID, tc.want)
		}
		if got := slices.Contains(kinds(ps), agentadaptor.KindDiagnostic); got != tc.diag {
			t.Errorf("%s: diagnostic %v, want %v (%v)", tc.prompt, got, tc.diag, kinds(ps))
		}
	}
	if reqs := a.Requests(); len(reqs) != 3 || reqs[1].Prompt != "other" {
		t.Errorf("requests %+v", reqs)
	}
}

func TestPlainTextAndPrompt(t *testing.T) {
	a := &shellagent.Adapter{Script: `printf '%s\n' "$1"`, PlainText: true}
	h := start(t, a, "echo me")
	ps := adaptertest.Collect(t.Context(), t, h)
	res, _ := h.Wait(context.Background())
	if res.Output != "echo me" {
		t.Errorf("output %q", res.Output)
	}
	if !slices.ContainsFunc(ps, func(p agentadaptor.StreamPayload) bool {
		return p.Kind == agentadaptor.KindTextDelta && p.MessageID == shellagent.EchoMessageID && p.Delta == "echo me"
	}) {
		t.Errorf("no echo delta in %v", kinds(ps))
	}
}

func TestGate(t *testing.T) {
	dir := t.TempDir()
	before, after := shellagent.Gate(filepath.Join(dir, "before")), shellagent.Gate(filepath.Join(dir, "after"))
	before.Release(t) // released before the script gets there
	a := &shellagent.Adapter{Script: shellagent.Script(
		before.Wait(),
		shellagent.Text("m1", "one"),
		after.Wait(),
		shellagent.Text("m2", "two"),
	)}
	h := start(t, a, "x")
	for p := range h.StreamEvents() {
		if p.Kind == agentadaptor.KindTextEnd {
			break
		}
	}
	select {
	case <-h.Done():
		t.Fatal("the run went past a gate nobody released")
	default:
	}
	after.Release(t)
	res, _ := h.Wait(context.Background())
	if res.Status != agentadaptor.StatusCompleted || res.Output != "onetwo" {
		t.Fatalf("result %s %q", res.Status, res.Output)
	}
}
