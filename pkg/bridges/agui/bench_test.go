package agui_test

import (
	"runtime"
	"testing"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"

	"github.com/seed0634/agentadaptor"
	"github.com/seed0634/agentadaptor/pkg/bridges/agui"
)

// BenchmarkTranslateTextDeltas measures translation alone on the hot path
// (text deltas of an open message).
func BenchmarkTranslateTextDeltas(b *testing.B) {
	tr := agui.NewTranslator(agui.Options{ThreadID: "t", RunID: "r"})
	buf := tr.Translate(agentadaptor.StreamPayload{Kind: agentadaptor.KindRunStarted, Time: t0})
	p := agentadaptor.StreamPayload{Kind: agentadaptor.KindTextDelta, MessageID: "m", Delta: "words ", Time: t0}
	var n int
	var m0, m1 runtime.MemStats
	b.ReportAllocs()
	runtime.ReadMemStats(&m0)
	for b.Loop() {
		buf = tr.AppendTranslate(buf[:0], p)
		n += len(buf)
	}
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(n), "allocs/event")
	_ = []events.Event(buf)
}
