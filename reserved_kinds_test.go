package agentadaptor_test

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	agentadaptor "github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/internal/testkit/shellagent"
	"github.com/seed0634/agentadaptor/pkg/adapters/adaptertest"
)

// A run's stream begins with the SDK's run.started and ends with exactly
// one terminal payload, the SDK's own: an adapter's parser that emits a
// kind the SDK reserves (run.started, a terminal, stream.dropped) gets a
// malformed_line diagnostic in its place, and the run goes on to its real
// end (docs/design.md#conversations; README "The SDK in brief").
func TestParserCannotEmitReservedKinds(t *testing.T) {
	for _, kind := range []agentadaptor.StreamKind{
		agentadaptor.KindRunStarted, agentadaptor.KindRunFinished, agentadaptor.KindRunFailed,
		agentadaptor.KindRunCancelled, agentadaptor.KindStreamDropped,
	} {
		t.Run(string(kind), func(t *testing.T) {
			defer goleak.VerifyNone(t)
			ctx := testCtx(t)
			forged := agentadaptor.StreamPayload{Kind: kind, Text: "forged", Dropped: 7,
				Failure: &agentadaptor.Failure{Code: agentadaptor.FailureExit, Message: "forged"}}
			sdk := newSDK(t, shell(shellagent.Script(shellagent.Print(forged), textScript("after"))))
			h, err := sdk.Start(ctx, "x", agentadaptor.WithStreaming())
			if err != nil {
				t.Fatal(err)
			}
			ps := adaptertest.Collect(ctx, t, h)
			want := []string{"run.started", "diagnostic", "text.start", "text.delta", "text.end", "run.finished"}
			if got := kinds(ps); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("kinds = %v, want %v", got, want)
			}
			if d := ps[1].Diagnostic; d == nil || d.Code != agentadaptor.DiagMalformedLine {
				t.Errorf("diagnostic = %+v, want %s", d, agentadaptor.DiagMalformedLine)
			}
			if last := ps[len(ps)-1]; last.Text != "after" {
				t.Errorf("terminal payload %+v is not the SDK's (output %q)", last, "after")
			}
			res, err := h.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != agentadaptor.StatusCompleted || res.Output != "after" {
				t.Errorf("result %s %q, want completed %q", res.Status, res.Output, "after")
			}
		})
	}
}
